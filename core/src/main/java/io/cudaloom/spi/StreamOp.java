package io.cudaloom.spi;

import org.jspecify.annotations.Nullable;

/**
 * One entry of a stream's submission queue (submission by combining, {@code io.cudaloom.reactor.CombinedSubmission}):
 * a driver call with its arguments checked and packed at the caller's call, made later by the
 * stream's drainer; or, with direct submission, made at once on the caller's thread ({@link #call()}).
 * A backend makes one per launch, copy or memset and hands it to {@link StreamSubmission#submit};
 * the reactor makes the flag writes' and host callbacks'.
 *
 * <p>The reactor calls {@link #submit} (the drainer) or {@link #call} (the caller, direct) at most
 * once, then {@link #finish} exactly once (also for an entry it discards: the stream faulted or was
 * released before it, or the direct call threw), so an entry that holds memory lifetimes (entered at
 * the caller's call) exits them there: queued work keeps its memory alive until it is in the
 * driver's queue.
 */
public abstract class StreamOp {
    private final boolean work;

    /** {@code work}: a launch, copy, memset or external entry, which takes room in the admission bound. */
    protected StreamOp(boolean work) {
        this.work = work;
    }

    /** Whether this entry takes room in the stream's admission bound (work), or always has room (flag writes, callbacks). */
    public final boolean isWork() {
        return work;
    }

    /**
     * Makes the driver call, on the drainer's thread, for the entry at queue {@code position}. Returns null on success, else the stream's
     * fault message naming the call and the driver's error ({@code cuLaunchKernel(scale_f32) failed:
     * CUDA_ERROR_...}). Must not throw.
     */
    public abstract @Nullable String submit(long position);

    /**
     * Makes the driver call now, on the caller's thread, within the stream's admission (direct
     * submission): throws what the caller of the work call gets (the closed stream's exception, the
     * stream's fault, the driver's error), so that nothing was enqueued when it throws. By default,
     * {@link #submit} with no queue position, a fault message thrown as an
     * {@link IllegalStateException}; the backends' work entries override it.
     */
    public void call() {
        String fault = submit(-1L);
        if (fault != null) {
            throw new IllegalStateException(fault);
        }
    }

    /** After {@link #submit} or {@link #call} ({@code submitted}: it returned null, or returned), or instead of them (discarded): exits the lifetimes held. */
    public void finish(boolean submitted) {}
}
