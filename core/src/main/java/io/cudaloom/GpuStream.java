package io.cudaloom;

import io.cudaloom.reactor.CombinedSubmission;
import io.cudaloom.reactor.Completion;
import io.cudaloom.reactor.DeviceFaults;
import io.cudaloom.reactor.FallbackRegistration;
import io.cudaloom.reactor.ReactorStream;
import io.cudaloom.reactor.Registration;
import io.cudaloom.reactor.StreamDrain;
import io.cudaloom.reactor.StreamRecord;
import io.cudaloom.spi.FaultSink;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamState;
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
    /** The reactor's state of this stream: counts, proof, admission, shared flag writes (see StreamRecord). */
    private final StreamRecord record;
    /** This stream's fault, kept by the device's fault owner (DeviceFaults); the backend's {@code BackendAccess.Hooks#faultSink}. */
    private final DeviceFaults.Sink faults;
    private static final java.lang.invoke.VarHandle DRAIN;

    static {
        try {
            DRAIN = java.lang.invoke.MethodHandles.lookup()
                    .findVarHandle(GpuStream.class, "drain", StreamDrain.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final StreamBackend backend;
    /** This stream as the reactor's parts see it (ReactorStream): one, for the stream's whole life. */
    private final Port port = new Port();
    /** This stream in its device's {@link GpuDevice#liveResources()}: given back by the first {@link #close()}. */
    private final Runnable lease;
    /**
     * Null while the stream is open; set once, by {@link #close()}, with a compare-and-set from
     * null (through {@link #DRAIN}): the closed flag and the drain that serves the events taken
     * before the close, published together (StreamDrain's ordering 1). Read with volatile loads.
     */
    private volatile @Nullable StreamDrain drain;
    /** Submission by combining ({@link Submission#COMBINING}): the stream's queue; null for {@link Submission#DIRECT}. */
    private final @Nullable CombinedSubmission combiner;
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
        CompletionReactor reactor = device.reactor();
        this.record = new StreamRecord(reactor.config());
        this.faults = device.faults.sink(port, record);
        this.backend = device.streamBackendOf(this);
        CombinedSubmission c = reactor.config().submission() == Submission.COMBINING
                ? new CombinedSubmission(new CombiningHost(), record, reactor.config()) : null;
        this.combiner = c;
        if (c != null) {
            record.onGateOpen(c::gateOpened);
        }
        reactor.streamOpened(port);
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
        ResourceLedger ledger = device.ledger;
        ledger.awaitBegun();
        try {
            device.reactor().await(this, required(), true, false, 0L);
        } finally {
            ledger.awaitEnded();
        }
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
        CombinedSubmission c = combiner;
        // The drainer arming its direct tracker reads the proof its write carries: what it submitted.
        return c == null ? record.submissions.get() : c.isDirect() ? c.submitted() : c.appended();
    }

    /**
     * What an await, event or memory close made now requires: every work entry appended so far.
     * Direct: the submission count. Combining: the position after the last work entry appended
     * ({@link CombinedSubmission#workThrough()}), which the library's own flag writes behind it do
     * not raise, so an await with no new work since the last one is known complete at once.
     */
    final long required() {
        CombinedSubmission c = combiner;
        return c == null ? record.submissions.get() : c.workThrough();
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
        CombinedSubmission c = combiner;
        if (c != null) {
            c.append(CombinedSubmission.EXTERNAL); // one position, behind the raw work enqueued before the call
            return;
        }
        admit();
        noteSubmission();
    }

    // ---- what the backends do, through BackendAccess.Hooks (which documents each) --------------

    final boolean admit() {
        if (combiner != null) {
            return false; // combining: no admission (a backend that calls the driver itself counts its entry in noteSubmission)
        }
        long waited = record.admit(port);
        if (waited > 0) {
            device.reactor().countAdmissionWait(waited);
        }
        return waited >= 0;
    }

    final void submissionFailed(boolean admitted) {
        if (admitted) {
            record.admissionUnused();
        }
    }

    final void noteSubmission() {
        CombinedSubmission c = combiner;
        if (c != null) {
            // Combining, for a backend that made its own driver call: one position, behind the entry
            // already in the driver (as noteExternalSubmission).
            c.append(CombinedSubmission.EXTERNAL);
            return;
        }
        record.submissions.incrementAndGet();
        record.afterSubmission(port);
    }

    final void noteCompletedThrough(long count) {
        completedThrough(count);
    }

    /** Whether this stream submits by combining ({@link Submission#COMBINING}). */
    final boolean combining() {
        return combiner != null;
    }

    /** Appends a backend's work entry (checked, lifetimes entered) to the queue; combining only. */
    final boolean append(io.cudaloom.spi.StreamOp op) {
        CombinedSubmission c = Objects.requireNonNull(combiner, "not combining");
        return c.append(op);
    }

    /** Waits until everything appended before the call is submitted (combining; no-op otherwise). */
    final void flush() {
        CombinedSubmission c = combiner;
        if (c != null) {
            c.flush();
        }
    }

    /** The combiner's probe: positions submitted, queued, trackers made; null when direct. */
    final long @Nullable [] submissionProbe() {
        CombinedSubmission c = combiner;
        return c == null ? null : new long[] {c.appended(), c.submitted(), c.queued(), c.trackers()};
    }

    final FaultSink faultSink() {
        return faults;
    }

    /**
     * Runs {@code done} once the first {@code required} counted submissions are complete, or will
     * never run (the stream faulted, or the device closed): at once, on this thread, if a proof
     * already covers them; else from the reactor, by a registration for all the work submitted so
     * far (on a closed stream, through the drain that serves its last events). {@code done} runs
     * exactly once, on any thread: it must not block.
     */
    final void whenWorkDone(long required, Runnable done) {
        if (isKnownComplete(required)) {
            done.run();
            return;
        }
        java.util.function.Consumer<@Nullable RuntimeException> once = failure -> done.run();
        StreamDrain closedDrain = drain;
        try {
            if (closedDrain == null) {
                device.reactor().register(this, once);
                return;
            }
        } catch (ReactorClosedException e) {
            done.run(); // the device's close frees what its work held (the context goes with it)
            return;
        } catch (IllegalStateException e) {
            closedDrain = drain; // the stream closed meanwhile: its drain covers the work before the close
            if (closedDrain == null) {
                throw e;
            }
        }
        closedDrain.subscribe(once);
    }

    /** Whether the calling thread may park for admission: not one the stream's completions depend on. */
    boolean mayParkForAdmission() {
        return !isOwnWorkerThread() && !FallbackRegistration.onHostCallback()
                && Thread.currentThread() != device.reactor().scannerThread();
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
        StreamDrain d = StreamDrain.register(port);
        if (!DRAIN.compareAndSet(this, null, d)) {
            // A concurrent close won and serves the events; this registration completes unobserved
            // (or was refused, if the winner's backend had stopped taking flag writes): nothing leaks.
            return;
        }
        lease.run();
        CombinedSubmission c = combiner;
        if (c != null) {
            // Behind every entry appended before the close (the drain's flag write among them); a
            // call racing the close finds itself behind it and is refused (CombinedSubmission.appendShutdown).
            c.appendShutdown(() -> StreamDrain.shutDown(port, backend::shutdown));
            record.openGate();
        } else {
            record.openGate(); // closed: let submitters parked for room through, to find out
            StreamDrain.shutDown(port, backend::shutdown); // what it throws is logged: close() never throws
        }
        device.reactor().streamClosed(port);
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
        device.reactor().checks().proveIfIdle(port);
        return Math.max(0, submissionCount() - record.completedThrough());
    }

    // ---- the reactor's bookkeeping ----------------------------------------------------------------

    /** The drain that serves this stream's events once it is closed; null while it is open. */
    @Nullable StreamDrain drainAfterClose() {
        return drain;
    }

    /**
     * True if counted work was submitted after the last proof of completion, so the stream is
     * probably busy and a waiter may register without asking the driver first (registering on an
     * idle stream is correct too: its flag write lands at once).
     */
    boolean hasWorkNotKnownComplete() {
        return submissionCount() > record.completedThrough(); // combining: positions, so a gauge's idle query proves the trailing flag write too
    }

    /** Whether the first {@code required} counted submissions are proven complete (no driver call). */
    boolean isKnownComplete(long required) {
        return record.completedThrough() >= required;
    }

    /** Records a proof that the first {@code count} counted submissions are complete (see StreamRecord). */
    void completedThrough(long count) {
        CombinedSubmission c = combiner;
        if (c != null) {
            c.completedThrough(count); // the raise, then the drain (SubmissionRoom's hand-over)
        } else {
            record.completedThrough(count);
        }
    }

    StreamRecord record() {
        return record;
    }

    // ---- the reactor's view of the backend ----------------------------------------------------
    // Final: a stream of this package (a test double) must not override them by accident.

    /**
     * The stream's state: FAULTED at once, with no driver call, once a fault is recorded; else the
     * backend's answer. A FAULTED answer is always recorded by the time it is returned (a backend
     * reports first; one that did not gets {@link DeviceFaults#UNREPORTED}), so that whoever sees
     * it can build the exception ({@link DeviceFaults.Sink#neverCompletes}).
     */
    final StreamState queryState() {
        if (faults.hasFaulted()) {
            return StreamState.FAULTED;
        }
        CombinedSubmission c = combiner;
        // Combining: an idle answer proves only what was submitted before the query; callers read
        // the count before calling this, so IDLE is answered only if every position appended before
        // these reads was submitted (CombinedSubmission, one coordinate).
        long appended = c == null ? 0 : c.appended();
        long submitted = c == null ? 0 : c.submitted();
        StreamState state = backend.queryState();
        if (state == StreamState.FAULTED) {
            faults.answeredFaulted();
        }
        if (state == StreamState.IDLE && submitted < appended) {
            return StreamState.BUSY;
        }
        return state;
    }

    final DeviceFaults.Sink faults() {
        return faults;
    }

    final boolean enqueueFlagWrite(FlagMemory memory, int slot) {
        CombinedSubmission c = combiner;
        if (c == null || c.isDirect()) {
            return backend.enqueueFlagWrite(memory, slot);
        }
        if (isClosed() || faults.hasFaulted()) {
            return false; // refused at the append only
        }
        return c.append(c.flagWrite(memory, slot)); // false: it raced the close and came after it
    }

    final boolean enqueueHostCallback(Runnable callback) {
        CombinedSubmission c = combiner;
        if (c == null || c.isDirect()) {
            return backend.enqueueHostCallback(callback);
        }
        if (isClosed() || faults.hasFaulted()) {
            return false;
        }
        return c.append(c.hostCallback(callback));
    }



    final boolean flagWritesSettled() {
        return backend.flagWritesSettled();
    }

    final void drained() {
        backend.drained();
    }

    final boolean isOwnWorkerThread() {
        return backend.runsOnCurrentThread();
    }

    /** This stream as the reactor's parts see it. */
    final ReactorStream port() {
        return port;
    }

    /** What this stream's combiner needs of it (submission by combining). */
    private final class CombiningHost implements CombinedSubmission.Host {
        @Override
        public ReactorStream port() {
            return port;
        }

        @Override
        public boolean backendFlagWrite(FlagMemory memory, int slot) {
            return backend.enqueueFlagWrite(memory, slot);
        }

        @Override
        public boolean backendHostCallback(Runnable callback) {
            return backend.enqueueHostCallback(callback);
        }

        @Override
        public boolean reactorClosed() {
            return device.reactor().isClosed();
        }

        @Override
        public java.util.concurrent.Executor executor() {
            return device.reactor().callbackExecutor();
        }

        @Override
        public void trackDirect(Completion tracker) {
            device.reactor().trackDirect(port, tracker);
        }

        @Override
        public boolean onScanner() {
            return Thread.currentThread() == device.reactor().scannerThread();
        }
    }

    /** The reactor's view of this stream: forwards to the stream's package-private methods above. */
    private final class Port implements ReactorStream {
        @Override
        public long submissionCount() {
            return GpuStream.this.submissionCount();
        }

        @Override
        public void completedThrough(long count) {
            GpuStream.this.completedThrough(count);
        }

        @Override
        public boolean isKnownComplete(long required) {
            return GpuStream.this.isKnownComplete(required);
        }

        @Override
        public boolean hasWorkNotKnownComplete() {
            return GpuStream.this.hasWorkNotKnownComplete();
        }

        @Override
        public boolean isClosed() {
            return GpuStream.this.isClosed();
        }

        @Override
        public boolean isOwnWorkerThread() {
            return GpuStream.this.isOwnWorkerThread();
        }

        @Override
        public boolean mayParkForAdmission() {
            return GpuStream.this.mayParkForAdmission();
        }

        @Override
        public StreamState queryState() {
            return GpuStream.this.queryState();
        }

        @Override
        public DeviceFaults.Sink faults() {
            return faults;
        }

        @Override
        public boolean enqueueFlagWrite(FlagMemory memory, int slot) {
            return GpuStream.this.enqueueFlagWrite(memory, slot);
        }

        @Override
        public boolean enqueueHostCallback(Runnable callback) {
            return GpuStream.this.enqueueHostCallback(callback);
        }

        @Override
        public boolean flagWritesSettled() {
            return GpuStream.this.flagWritesSettled();
        }

        @Override
        public void drained() {
            GpuStream.this.drained();
        }

        @Override
        public StreamRecord record() {
            return record;
        }

        @Override
        public void track() {
            device.reactor().track(this);
        }

        @Override
        public Registration registerCompletion(Consumer<@Nullable RuntimeException> onDone) {
            return device.reactor().register(this, onDone);
        }

        @Override
        public String deviceName() {
            return device.name();
        }

        @Override
        public String toString() {
            return GpuStream.this.toString();
        }
    }
}
