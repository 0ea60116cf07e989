package io.cudaloom;

import java.util.Objects;

/**
 * An ordered queue of GPU work on one {@link GpuDevice}. Backends (CUDA, simulated) add the ways to
 * submit work; this class adds the way to wait for it: {@link #event()} and {@link #await()}.
 *
 * <p>The protected methods are the backend's side of the device abstraction, called by the
 * {@link CompletionReactor}; callers never need them.
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

    static {
        try {
            LAST_GROUP = java.lang.invoke.MethodHandles.lookup()
                    .findVarHandle(GpuStream.class, "lastGroup", WaitGroup.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    protected GpuStream(GpuDevice device) {
        this.device = Objects.requireNonNull(device, "device");
    }

    public final GpuDevice device() {
        return device;
    }

    /**
     * An event standing for all work submitted to this stream so far. Awaiting it waits for that
     * work (and possibly for work submitted later, never for less).
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
     */
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

    /** Whether {@link #close()} was called. */
    public abstract boolean isClosed();

    /** Releases the stream; work already submitted still runs. Idempotent. */
    @Override
    public abstract void close();

    // ---- backend side -------------------------------------------------------------------------

    /** Non-blocking state of the stream (for CUDA: {@code cuStreamQuery}). Never throws for faults. */
    protected abstract StreamState queryState();

    /** When {@link #queryState()} is {@link StreamState#FAULTED}: the error, named. */
    protected abstract String faultDescription();

    /**
     * Enqueue a device-side write of {@code 1} into flag {@code slot} of {@code memory}, ordered
     * after all work submitted to the stream so far.
     *
     * @return false if the device refused (the reactor then falls back to a host callback)
     */
    protected abstract boolean enqueueFlagWrite(FlagMemory memory, int slot);

    /**
     * Enqueue {@code callback} to run on a host thread once the stream's prior work is done. It
     * must be short and must not call the device (CUDA host functions may not).
     *
     * @return false if the stream cannot take it (e.g. it faulted or is closed)
     */
    protected abstract boolean enqueueHostCallback(Runnable callback);

    /**
     * True when no flag write enqueued on this stream can land any more: every one has executed
     * or was discarded (a fault, for CUDA only once the dead context has been torn down). Until
     * then the reactor keeps the flag memory and any slot quarantined on this stream.
     */
    protected abstract boolean flagWritesSettled();
}
