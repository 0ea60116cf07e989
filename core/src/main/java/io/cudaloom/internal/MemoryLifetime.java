package io.cudaloom.internal;

import io.cudaloom.GpuDevice;
import io.cudaloom.GpuStream;
import io.cudaloom.LiveResources;
import io.cudaloom.protocol.LifetimeGuard;
import io.cudaloom.protocol.OrderedRelease;
import java.util.Arrays;
import java.util.concurrent.atomic.LongAdder;

/**
 * The lifetime of one piece of device or host memory, the same on every backend: closing it is
 * stream-ordered. {@code close()} returns at once; the memory is freed only once the work queued on
 * every stream that used it (up to the close) is done, on the device's releaser thread, never on
 * the caller's; memory that no queued work uses is freed at once: by the closing thread if it is a
 * platform thread, as before, else by the releaser (a driver's free may wait, and must not hold a
 * virtual thread's carrier).
 * A use after the close throws at the call, as before.
 *
 * <h2>Who uses it, and how the free waits for them</h2>
 * <ol>
 *   <li>Every operation that hands the memory to a stream (a copy, a launch that takes it as an
 *       argument, a memset) runs between {@link #enter()} and {@link #exit()} of this memory's
 *       {@link LifetimeGuard}: it enters before it checks anything, makes its driver call, has its
 *       submission counted, records the stream ({@link #usedOn}), and only then exits. An
 *       operation that cannot enter (the memory is closed) throws and enqueues nothing.
 *   <li>{@link #close(Runnable)} closes the guard; the guard runs {@link #release} exactly once,
 *       after the close and after every operation that entered has exited (its own protocol), so
 *       every submission that uses this memory has been counted by then, and every stream it went
 *       to is in {@link #streams}.
 *   <li>{@link #release} reads each such stream's submission count now, which is at least the
 *       count of every use on it (each use was counted before its exit, and counts only grow). A
 *       stream whose proof already covers that count needs no waiting; for each other one it
 *       expects one arrival of an {@link OrderedRelease} and has the stream run that arrival once
 *       the proof passes the count ({@code Hooks#whenWorkDone}: the scanner's retirement of a
 *       registration, a drain, or at once if a proof came meanwhile), or the work will never run
 *       (a fault, the device's close). The {@code OrderedRelease} runs the free once, after the
 *       last arrival, and never before every expected stream has arrived (its own protocol, with
 *       the jcstress {@code OrderedReleaseTest} and its broken twin). If the device is closed by
 *       then, the backend's free is not called: the device's own release frees the memory, and
 *       work that still used it may never finish (a CUDA free would wait for it).
 * </ol>
 * <b>Visibility.</b> {@link #streams} is written under this object's monitor and read with a
 * volatile load: {@link #release} runs after every use's exit (the guard's happens-before), so it
 * sees every stream recorded.
 *
 * <p>The memory is counted as {@link LiveResources.Kind#DEVICE_MEMORY} or
 * {@link LiveResources.Kind#HOST_MEMORY} until its close, then as
 * {@link LiveResources.Kind#FREEING_MEMORY} until the free has run (the JUnit leak check waits for
 * those, as for work in flight).
 *
 * <p>A raw device address passed to a kernel as a {@code Long} is not a use this class can see:
 * memory used that way must be awaited before it is closed, as before.
 */
public final class MemoryLifetime {
    private static final GpuStream[] NONE = new GpuStream[0];

    /**
     * Tests of the simulated device's use-after-free check only: {@code -Dcudaloom.memory.freeAtClose=true}
     * frees at the close, without waiting for the work (the behaviour this class replaces), so that
     * a test can show the check catches it. Read at each close.
     */
    static final String FREE_AT_CLOSE_PROPERTY = "cudaloom.memory.freeAtClose";

    /** Frees run on a virtual thread: stays 0 (every free a virtual thread causes goes to the releaser). */
    private static final LongAdder FREES_ON_VIRTUAL_THREADS =
            new LongAdder();

    private final GpuDevice device;
    private final LifetimeGuard guard = new LifetimeGuard();
    /** Counts the memory in the device's live resources while it is open. */
    private final Runnable open;
    /** The streams the memory was handed to; copy-on-write under this object's monitor, read volatile. */
    private volatile GpuStream[] streams = NONE;

    /**
     * The lifetime of memory just allocated on {@code device}, counted as {@code kind}
     * ({@link LiveResources.Kind#DEVICE_MEMORY} or {@link LiveResources.Kind#HOST_MEMORY}).
     */
    public MemoryLifetime(GpuDevice device, LiveResources.Kind kind) {
        this.device = device;
        this.open = BackendAccess.hooks().tracked(device, kind);
    }

    /** Frees that ran on a virtual thread in this JVM, for tests: 0 (no free holds a carrier). */
    public static long freesOnVirtualThreads() {
        return FREES_ON_VIRTUAL_THREADS.sum();
    }

    /** Before an operation uses the memory: false once it is closed (the operation must throw then). */
    public boolean enter() {
        return guard.enter();
    }

    /**
     * The operation's submission on {@code stream} was counted: the free waits for that stream's
     * work. Call between {@link #enter()} and {@link #exit()}.
     */
    public void usedOn(GpuStream stream) {
        for (GpuStream s : streams) {
            if (s == stream) {
                return; // the common case: read only
            }
        }
        synchronized (this) {
            GpuStream[] now = streams;
            for (GpuStream s : now) {
                if (s == stream) {
                    return;
                }
            }
            GpuStream[] more = Arrays.copyOf(now, now.length + 1);
            more[now.length] = stream;
            streams = more;
        }
    }

    /** After the operation, admitted by {@link #enter()}, was counted (or failed). */
    public void exit() {
        guard.exit();
    }

    /** Whether {@link #close} was called. */
    public boolean isClosed() {
        return guard.isClosing();
    }

    /**
     * Closes the memory: no operation may use it from now on; {@code free} runs once, at once if no
     * queued work uses the memory, else when that work is done, off the caller's thread (class
     * comment). Idempotent: only the first close counts. Never blocks.
     *
     * @param free the backend's free (a driver call, or marking simulated memory freed); must not throw
     */
    public void close(Runnable free) {
        guard.close(() -> release(free));
    }

    /** Runs once, after the close and after every use that entered has exited (LifetimeGuard). */
    private void release(Runnable free) {
        BackendAccess.Hooks hooks = BackendAccess.hooks();
        Runnable freeing = hooks.tracked(device, LiveResources.Kind.FREEING_MEMORY);
        open.run();
        Runnable freeAndCount = () -> {
            if (Thread.currentThread().isVirtual()) {
                FREES_ON_VIRTUAL_THREADS.increment(); // never, by the rule below: tests check it
            }
            try {
                free.run();
            } finally {
                freeing.run();
            }
        };
        if (Boolean.getBoolean(FREE_AT_CLOSE_PROPERTY)) {
            freeAndCount.run();
            return;
        }
        GpuStream[] used = streams;
        long[] required = new long[used.length];
        int pending = 0;
        for (int i = 0; i < used.length; i++) {
            required[i] = hooks.required(used[i]); // >= every use on it: each was counted before its exit
            if (!hooks.isKnownComplete(used[i], required[i])) {
                pending++;
            }
        }
        if (pending == 0) {
            // No queued work uses it: freed at once. By the closing thread if that is a platform
            // thread, as before; a virtual thread's free goes to the releaser all the same, since a
            // driver's free may wait (cuMemFree can synchronize the device), holding the carrier.
            if (Thread.currentThread().isVirtual()) {
                hooks.releaseOffCaller(device, freeAndCount);
            } else {
                freeAndCount.run();
            }
            return;
        }
        // Deferred: once every stream has arrived. If the device has closed by then, its own
        // release frees the memory (a CUDA context's destroy frees every allocation in it), and
        // the free is not called: work that still used the memory may never finish (a stream held
        // on the device), and cuMemFree would wait for it, holding the releaser, or free it under
        // that work.
        Runnable deferred = () -> {
            if (device.reactor().isClosed()) {
                freeing.run();
            } else {
                freeAndCount.run();
            }
        };
        OrderedRelease release = new OrderedRelease(() -> hooks.releaseOffCaller(device, deferred));
        for (int i = 0; i < used.length; i++) {
            release.expect();
            hooks.whenWorkDone(used[i], required[i], release::arrive); // at once if a proof came meanwhile
        }
        release.armed();
    }
}
