package io.cudaloom.spi;

/**
 * A backend's side of a stream: what the reactor asks of it. A backend passes one to its
 * device's stream factory ({@code BackendAccess.Hooks.startReactor}), which the stream's
 * constructor calls; callers never see it. Methods may be
 * called from any thread (registrants, the scanner, the closing thread) and must not block. Its
 * faults a backend reports to the stream's {@link FaultSink}, which keeps them.
 */
public interface StreamBackend {
    /**
     * The stream's state, without blocking (for CUDA: {@code cuStreamQuery}). {@link StreamState#FAULTED}
     * only once the fault was reported to the stream's {@link FaultSink} (what happened, and its
     * cause): the reactor asks the backend nothing more about a fault, and once one is reported it
     * answers FAULTED itself, without calling this.
     */
    StreamState queryState();

    /**
     * Enqueue, behind the work already submitted, a device write of 1 into flag {@code slot} of
     * {@code memory} (for CUDA: {@code cuStreamWriteValue32}).
     *
     * @return false if the stream cannot take it (e.g. it faulted or is closed)
     */
    boolean enqueueFlagWrite(FlagMemory memory, int slot);

    /**
     * Enqueue {@code callback} to run on a host thread once the stream's prior work is done. It
     * must be short and must not call the device (CUDA host functions may not). The thread is a
     * platform thread (the driver's callback thread, the backend's worker), never a virtual one:
     * the reactor tells a callback's thread from its callers' by that first (a virtual thread is
     * never a callback's), without a thread-local lookup on every call.
     *
     * @return false if the stream cannot take it (e.g. it faulted or is closed)
     */
    boolean enqueueHostCallback(Runnable callback);

    /**
     * True when no flag write enqueued on this stream can land any more: every one has executed
     * or was discarded (a fault, for CUDA only once the dead context has been torn down). Until
     * then the reactor keeps the flag memory and any slot quarantined on this stream.
     */
    boolean flagWritesSettled();

    /**
     * Called once, by the stream's {@code close()}, after the stream was marked closed (its
     * {@code isClosed()} is true) and after the close registered its drain (whose flag write or
     * host callback this backend has therefore already taken): stop taking work, flag writes and
     * host callbacks; let what was already enqueued run; release the stream's resources now or
     * once that work is done ({@link #drained()} says when). Must not throw and must not block (a
     * close reports what it throws and goes on: {@code close()} never throws).
     */
    void shutdown();

    /**
     * Called at most once, after {@link #shutdown()}, when the work submitted before the close is
     * known to be done (the close's drain completed without failure): the backend may release the
     * stream now, once its own calls still in flight have returned (e.g. a thread that raced the
     * close). Not called when the drain failed (a fault, the device's close): the device's close
     * releases the stream then. Called on the thread that delivered the drain (the reactor's
     * scanner, a host-callback thread, where a CUDA backend may make no driver call, or the closing
     * thread); must not throw and must not block.
     */
    default void drained() {
    }

    /**
     * Whether the current thread is one this stream's own work runs on (a simulated kernel's
     * thread): a wait for the stream there could never end, so the reactor refuses it. Such a
     * thread is a platform thread: the reactor asks only when the waiter is not a virtual thread.
     */
    default boolean runsOnCurrentThread() {
        return false;
    }
}
