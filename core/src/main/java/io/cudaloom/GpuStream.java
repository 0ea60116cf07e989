package io.cudaloom;

import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamState;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;

/**
 * An ordered queue of GPU work on one {@link GpuDevice}. Backends (CUDA, simulated) add the ways to
 * submit work; this class adds the way to wait for it: {@link #event()} and {@link #await()}.
 *
 * <p>A backend makes its streams with the protected constructor, handing over its side of the
 * stream as an {@link StreamBackend} (the SPI, {@code io.cudaloom.spi}); callers never see it.
 */
public abstract class GpuStream implements AutoCloseable {
    private final GpuDevice device;
    /** Work submitted so far, counted after each submission's driver call returned. */
    private final java.util.concurrent.atomic.AtomicLong submissions = new java.util.concurrent.atomic.AtomicLong();
    /**
     * The newest wait group registered on this stream (coalescing only, {@link CoalescedWait}):
     * read with a volatile load, replaced by compare-and-set through {@link #LAST_GROUP}. Racy by
     * design: any recent group will do, since a waiter joins only one that covers its work.
     */
    @SuppressWarnings("unused") // through LAST_GROUP
    private volatile @org.jspecify.annotations.Nullable WaitGroup lastGroup;
    static final java.lang.invoke.VarHandle LAST_GROUP;
    private static final java.lang.invoke.VarHandle COMPLETED_THROUGH;
    private static final java.lang.invoke.VarHandle DRAIN;

    static {
        try {
            LAST_GROUP = java.lang.invoke.MethodHandles.lookup()
                    .findVarHandle(GpuStream.class, "lastGroup", WaitGroup.class);
            COMPLETED_THROUGH = java.lang.invoke.MethodHandles.lookup()
                    .findVarHandle(GpuStream.class, "completedThrough", long.class);
            DRAIN = java.lang.invoke.MethodHandles.lookup()
                    .findVarHandle(GpuStream.class, "drain", StreamDrain.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final StreamBackend backend;
    /**
     * Null while the stream is open; set once, by {@link #close()}, with a compare-and-set from
     * null (through {@link #DRAIN}): the closed flag and the drain that serves the events taken
     * before the close, published together (StreamDrain's ordering 1). Read with volatile loads.
     */
    private volatile @org.jspecify.annotations.Nullable StreamDrain drain;
    /**
     * The highest submission count known complete. Only proofs raise it (a CAS to the maximum,
     * {@link #completedThrough(long)}): an await that returned normally for an event taken after
     * that many counted submissions, a callback delivered without failure for one, a closed
     * stream's drain completed without failure (it was registered after that many), or a query
     * that answered idle after that many were counted. Each proof covers the submissions counted
     * before its event, drain or query, because a submission is counted only after its driver call
     * returned (see {@link #submissionCount()}), so the work is in stream order before the flag or
     * query.
     */
    private volatile long completedThrough;
    /** Recent awaits' durations (an exponential moving average, racy by design): the spin budget's guide. */
    private volatile long recentWaitNanos;

    /**
     * For backends: {@code backendOf} is given this stream (not yet fully constructed: keep the
     * reference, call nothing on it) and returns the backend side the reactor will use.
     */
    @SuppressWarnings("this-escape") // backendOf only keeps the reference; see above
    protected GpuStream(GpuDevice device, Function<? super GpuStream, ? extends StreamBackend> backendOf) {
        this.device = Objects.requireNonNull(device, "device");
        this.backend = Objects.requireNonNull(backendOf.apply(this), "backend");
    }

    public final GpuDevice device() {
        return device;
    }

    /**
     * An event standing for all work submitted to this stream so far. Awaiting it waits for that
     * work (and possibly for work submitted later, never for less). An event taken before
     * {@link #close()} can still be awaited after it.
     *
     * @throws IllegalStateException if the stream is closed
     * @throws ReactorClosedException if the device is closed
     */
    public final GpuEvent event() {
        return device.reactor().event(this);
    }

    /**
     * Waits for all work submitted to this stream so far; the same as {@code event().await()}
     * without creating an event object, so a loop of launches and awaits allocates nothing.
     * Blocking (parks the calling thread; annotated {@code @Blocking}): in a Kotlin coroutine call
     * {@code awaitSuspending()} ({@code io.cudaloom.kotlin}) instead.
     *
     * @throws InterruptedException if interrupted before or while waiting
     * @throws GpuFaultException if the stream faulted
     * @throws ReactorClosedException if the device was closed
     */
    @org.jetbrains.annotations.Blocking
    public final void await() throws InterruptedException {
        device.reactor().await(this, submissionCount(), true, false, 0L);
    }

    /**
     * Submissions made to this stream so far. The backends count every launch, copy and memset
     * made through their own methods; when waiters are coalesced
     * ({@link ReactorConfig.Builder#coalesce}), work enqueued on the raw stream handle behind the
     * library's back must be counted with {@link #noteExternalSubmission()} right after it is
     * enqueued, or a waiter may share a completion that does not cover it.
     */
    public final long submissionCount() {
        return submissions.get();
    }

    /** Counts one submission made on the raw stream outside this library (see {@link #submissionCount()}). */
    public final void noteExternalSubmission() {
        submissions.incrementAndGet();
    }

    /** Backends call this after each submission's driver call (or enqueue) has returned. */
    protected final void noteSubmission() {
        submissions.incrementAndGet();
    }

    // ---- work, the same on every backend ------------------------------------------------------------

    /**
     * Launches {@code kernel} on a 1-D grid of {@code gridX} blocks of {@code blockX} threads,
     * behind the work already on this stream. On a GPU its PTX runs; on the simulated device its
     * Java body, once per thread.
     *
     * @param args {@link DeviceMemory} of this device, {@code Integer}, {@code Long}, {@code Float}
     *     or {@code Double}, in the order of the kernel's parameters
     * @throws IllegalArgumentException if a dimension is below 1, an argument has another type, or
     *     memory belongs to another device
     * @throws GpuFaultException if the stream has faulted
     * @throws ReactorClosedException if the device is closed
     * @throws IllegalStateException if the stream is closed
     */
    public abstract void launch(GpuKernel kernel, int gridX, int blockX, Object... args);

    /**
     * Launches a kernel that keeps the stream busy for {@code duration} (a GPU spins on its
     * global timer; the simulated device spends the time): for demos, tests and benchmarks.
     *
     * @throws IllegalArgumentException if the duration is negative or longer than an hour
     * @throws GpuFaultException if the stream has faulted
     * @throws ReactorClosedException if the device is closed
     * @throws IllegalStateException if the stream is closed
     */
    public abstract void launchKernel(Duration duration);

    /** Copies {@code bytes} bytes from the start of {@code src} to the start of {@code dst}, in stream order. */
    public final void copy(HostMemory src, DeviceMemory dst, long bytes) {
        copy(src, 0, dst, 0, bytes);
    }

    /** Copies {@code bytes} bytes from the start of {@code src} to the start of {@code dst}, in stream order. */
    public final void copy(DeviceMemory src, HostMemory dst, long bytes) {
        copy(src, 0, dst, 0, bytes);
    }

    /**
     * Copies a range host to device, in stream order (asynchronously: await the stream before
     * reusing {@code src}).
     *
     * @throws IllegalArgumentException if a range is out of bounds or memory belongs to another device
     * @throws GpuFaultException if the stream has faulted
     * @throws IllegalStateException if the stream or the memory is closed
     */
    public abstract void copy(HostMemory src, long srcOffset, DeviceMemory dst, long dstOffset, long bytes);

    /**
     * Copies a range device to host, in stream order; the data is in {@code dst} once an await
     * covering the copy has returned.
     *
     * @throws IllegalArgumentException if a range is out of bounds or memory belongs to another device
     * @throws GpuFaultException if the stream has faulted
     * @throws IllegalStateException if the stream or the memory is closed
     */
    public abstract void copy(DeviceMemory src, long srcOffset, HostMemory dst, long dstOffset, long bytes);

    /**
     * Fills the first {@code count} 32-bit words of {@code dst} with {@code value}, in stream order.
     *
     * @throws IllegalArgumentException if {@code count} is negative or does not fit, or the memory
     *     belongs to another device
     */
    public abstract void memset32(DeviceMemory dst, int value, long count);

    /** Whether {@link #close()} was called. */
    public final boolean isClosed() {
        return drain != null;
    }

    /**
     * Releases the stream: it takes no more work and makes no more events
     * ({@link IllegalStateException}); work already submitted still runs, and the events taken
     * before the close can still be awaited (blocking or not) for the work they stand for: they
     * complete when it does, or fail with {@link GpuFaultException} if the stream faults, or with
     * {@link ReactorClosedException} if the device closes first. For that the close leaves one
     * registration with the reactor while work is in flight (a slot, or a host callback), retired
     * when the work is done like any other. Returns without waiting for the work. Idempotent;
     * never throws.
     */
    @Override
    public final void close() {
        if (drain != null) {
            return;
        }
        // Registered while the backend still takes flag writes: it stops only in shutdown() below.
        StreamDrain d = StreamDrain.register(this);
        if (!DRAIN.compareAndSet(this, null, d)) {
            // A concurrent close won and serves the events; this registration completes unobserved
            // (or was refused, if the winner's backend had stopped taking flag writes): nothing leaks.
            return;
        }
        StreamDrain.shutDown(this, backend::shutdown); // what it throws is logged: close() never throws
        d.published(); // once the drain has succeeded too, the backend may release the stream (drained())
    }

    // ---- the reactor's bookkeeping ----------------------------------------------------------------

    /** The drain that serves this stream's events once it is closed; null while it is open. */
    @org.jspecify.annotations.Nullable StreamDrain drainAfterClose() {
        return drain;
    }

    /**
     * True if counted work was submitted after the last proof of completion, so the stream is
     * probably busy and a waiter may register without asking the driver first (registering on an
     * idle stream is correct too: its flag write lands at once).
     */
    boolean hasWorkNotKnownComplete() {
        return submissions.get() > completedThrough;
    }

    /** Whether the first {@code required} counted submissions are proven complete (no driver call). */
    boolean isKnownComplete(long required) {
        return completedThrough >= required;
    }

    /** Records a proof that the first {@code count} counted submissions are complete (see the field). */
    void completedThrough(long count) {
        long seen;
        while ((seen = completedThrough) < count) {
            if (COMPLETED_THROUGH.weakCompareAndSet(this, seen, count)) {
                return;
            }
        }
    }

    long recentWaitNanos() {
        return recentWaitNanos;
    }

    /** Folds one await's duration into the average (weight 1/4); lost updates are harmless. */
    void recordWait(long nanos) {
        long old = recentWaitNanos;
        recentWaitNanos = old + ((nanos - old) >> 2);
    }

    // ---- the reactor's view of the backend ----------------------------------------------------

    StreamState queryState() {
        return backend.queryState();
    }

    String faultDescription() {
        return backend.faultDescription();
    }

    boolean enqueueFlagWrite(FlagMemory memory, int slot) {
        return backend.enqueueFlagWrite(memory, slot);
    }

    boolean enqueueHostCallback(Runnable callback) {
        return backend.enqueueHostCallback(callback);
    }

    boolean flagWritesSettled() {
        return backend.flagWritesSettled();
    }

    void drained() {
        backend.drained();
    }

    @org.jspecify.annotations.Nullable Throwable kernelFaultCause() {
        return backend.faultCause();
    }

    boolean isOwnWorkerThread() {
        return backend.runsOnCurrentThread();
    }
}
