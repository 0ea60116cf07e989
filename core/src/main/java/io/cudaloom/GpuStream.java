package io.cudaloom;

import io.cudaloom.reactor.ReactorStream;
import io.cudaloom.reactor.StreamDrain;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * An ordered queue of GPU work on one {@link GpuDevice}. Backends (CUDA, simulated) add the ways to
 * submit work; this class adds the way to wait for it: {@link #event()} and {@link #await()}.
 *
 * <p>Only cuda-loom's own backends subclass it ({@code io.cudaloom.cuda.CudaStream},
 * {@code io.cudaloom.sim.SimulatedStream}); any other subclass is refused.
 */
public abstract class GpuStream implements AutoCloseable {
    private final GpuDevice device;
    /**
     * The reactor's own object for this stream ({@link ReactorStream}: its submission, direct or by
     * combining, chosen once from the device's configuration; its completion proof, group commit, wait
     * average, fault state and close). This class keeps the API and hands every call to it.
     */
    private final ReactorStream owner;
    /** This stream in its device's {@link GpuDevice#liveResources()}: given back by the first {@link #close()}. */
    private final Runnable lease;

    /**
     * For cuda-loom's backends only ({@code io.cudaloom.sim}, {@code io.cudaloom.cuda}): the device
     * gives the stream its backend side.
     *
     * @throws IllegalCallerException for a subclass of any other package or module
     */
    @SuppressWarnings("this-escape") // the device's stream factory only keeps the reference (BackendAccess.Hooks#startReactor)
    protected GpuStream(GpuDevice device) {
        BackendSubclasses.check(getClass(), GpuStream.class);
        this.device = Objects.requireNonNull(device, "device");
        this.owner = device.reactor().openStream(device.streamBackendOf(this), this);
        this.lease = device.ledger.open(LiveResources.Kind.STREAM);
    }

    /** A backend's constructor failed after this class's: the stream was never handed out (BackendAccess.Hooks#notCreated). */
    final void notCreated() {
        lease.run();
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
        GpuEvent.awaitAll(device.reactor().blockingWait(), owner, device.ledger); // the event's await, with no event made
    }

    /**
     * Submissions made to this stream so far. The backends count every launch, copy and memset
     * made through their own methods; when waiters are coalesced
     * ({@link ReactorConfig.Builder#coalesce}), work enqueued on the raw stream handle behind the
     * library's back must be counted with {@link #noteExternalSubmission()} right after it is
     * enqueued, or a waiter may share a completion that does not cover it.
     *
     * <p>With {@link Submission#COMBINING} this is the stream's queue position: every entry takes
     * one, so the count includes the library's own flag writes and host callbacks (an await's, a
     * tracker's, a close's), not only work; it counts entries appended, some of which may still wait
     * in the queue for room in the driver.
     */
    public final long submissionCount() {
        return owner.submissionCount();
    }

    /**
     * What an await, event or memory close made now requires: every work entry appended so far.
     * Direct: the submission count. Combining: the position after the last work entry appended
     * ({@code CombinedSubmission#workThrough()}), which the library's own flag writes behind it do
     * not raise, so an await with no new work since the last one is known complete at once.
     */
    final long required() {
        return owner.required();
    }

    /**
     * Counts one submission made on the raw stream outside this library (see
     * {@link #submissionCount()}). It also takes the submission's room in the stream's admission
     * bound ({@link ReactorConfig.Builder#admissionLimit}), so it may park while the stream is full,
     * as a launch does: call it right after each raw enqueue.
     *
     * <p>With {@link Submission#COMBINING} it appends one queue position (no driver call) and never
     * parks; enqueue raw work only on a handle taken from {@code CudaStream.handle()}, which first
     * drains everything appended before it.
     */
    public final void noteExternalSubmission() {
        owner.noteExternalSubmission();
    }

    // ---- what the backends do, through BackendAccess.Hooks (which documents each) --------------

    /** The reactor's object for this stream (the facade and the events hand it to the parts). */
    final ReactorStream owner() {
        return owner;
    }

    /**
     * Runs {@code done} once the first {@code required} counted submissions are complete, or will
     * never run (the stream faulted, or the device closed): at once, on this thread, if a proof
     * already covers them; else from the reactor, by a registration for all the work submitted so
     * far (on a closed stream, through the drain that serves its last events). {@code done} runs
     * exactly once, on any thread: it must not block.
     */
    final void whenWorkDone(long required, Runnable done) {
        if (owner.isKnownComplete(required)) {
            done.run();
            return;
        }
        Consumer<@Nullable RuntimeException> once = failure -> done.run();
        StreamDrain closedDrain = owner.drain();
        try {
            if (closedDrain == null) {
                device.reactor().register(this, once);
                return;
            }
        } catch (ReactorClosedException e) {
            done.run(); // the device's close frees what its work held (the context goes with it)
            return;
        } catch (IllegalStateException e) {
            closedDrain = owner.drain(); // the stream closed meanwhile: its drain covers the work before the close
            if (closedDrain == null) {
                throw e;
            }
        }
        closedDrain.subscribe(once);
    }

    // ---- work, the same on every backend ------------------------------------------------------------

    /**
     * Launches {@code kernel} on a 1-D grid of {@code gridX} blocks of {@code blockX} threads,
     * behind the work already on this stream. On a GPU its PTX runs; on the simulated device its
     * Java body, once per thread.
     *
     * @param args {@link DeviceMemory} of this device, {@code Integer}, {@code Long}, {@code Float}
     *     or {@code Double}, one for each of the kernel's {@link GpuKernel#params()}, in order
     * @throws IllegalArgumentException if a dimension is below 1 or over the device's
     *     {@link GpuDevice#launchLimits() launch limits} (more than 1,024 threads per block on an
     *     H100 and on the simulated device), the arguments are not as many as
     *     the kernel's parameters, one is not of the type its parameter takes ({@link GpuKernel.Param}),
     *     or memory belongs to another device; thrown before anything is enqueued, so the stream
     *     stays usable
     * @throws IllegalStateException on a CUDA device, if the kernel's PTX resource is missing
     *     ({@link GpuKernel#fromResource})
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
        return owner.isClosed();
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
        // The drain registered while the backend still takes flag writes, published, then the
        // backend's shutdown behind everything submitted before it, and the gate (ReactorStream#close).
        StreamDrain d = owner.close();
        if (d == null) {
            return; // closed already: the first close serves the events
        }
        lease.run();
        device.reactor().streamClosed(owner);
        d.published(); // once the drain has succeeded too, the backend may release the stream (drained())
    }

    /**
     * Work entries (launches, copies, memsets, reported raw-stream work) submitted to this stream and
     * not yet proven complete by the reactor: an upper bound of the work in flight, since a proof
     * comes only from a flag write, callback or query that landed (an await, a tracker, an idle
     * check). Never more than {@link ReactorConfig#admissionLimit()} plus the entries taken on credit.
     * With {@link Submission#COMBINING} it counts queue positions (see {@link #submissionCount()}):
     * the library's own flag writes and host callbacks too, and entries still queued for room.
     *
     * <p>Falls to 0 once the work is done, awaited or not: when the counts show unproven work, the
     * stream is asked once whether it is idle ({@code cuStreamQuery} on CUDA, a microsecond or
     * so), and an idle answer is recorded as the proof. Otherwise a read of two counters, no driver
     * call: cheap enough for a gauge. A closed stream is not asked (its count stays as it was).
     */
    public long workInFlight() {
        return device.reactor().checks().workInFlight(owner);
    }
}
