package io.cudaloom.stress.jcstress;

import java.util.concurrent.atomic.AtomicReference;

/**
 * A model of one stream's work as a stream-ordered free sees it, for the {@code OrderedRelease}
 * tests: a completion flag and a one-shot completion callback. It never blocks and has no race of
 * its own, so a FORBIDDEN outcome of a test that uses it is the release protocol's.
 *
 * <p>The callback runs exactly once: {@link #register} runs it at once, on the registering
 * thread, if the work is already complete; otherwise it stores it and {@link #complete} runs it,
 * on the completing thread. One compare-and-set (register) against one get-and-set (complete) on
 * the callback slot decide which: the slot holds {@code null} (nothing registered, not complete),
 * the registered callback, or {@link #DONE} (complete), and each side acts only on what it
 * swapped out. The flag is set before the slot, so a callback, wherever it runs, sees the work
 * complete. One registration per stream (as the closing thread makes).
 */
public final class StreamWorkModel {
    /** In the slot once the work is complete: a callback registered later runs at once. */
    private static final Runnable DONE = () -> { };

    private final AtomicReference<Runnable> callback = new AtomicReference<>();
    private volatile boolean complete;

    /**
     * Registers the completion callback: runs it now and returns true if the work is already
     * complete, else stores it for {@link #complete} to run and returns false.
     */
    public boolean register(Runnable onComplete) {
        Runnable witness = callback.compareAndExchange(null, onComplete);
        if (witness == null) {
            return false; // stored: the completing thread runs it
        }
        if (witness != DONE) {
            throw new IllegalStateException("a second registration on one stream");
        }
        onComplete.run();
        return true;
    }

    /** The stream's work completes: set the flag, then run the callback registered so far (if any). */
    public void complete() {
        complete = true;
        Runnable registered = callback.getAndSet(DONE);
        if (registered == DONE) {
            throw new IllegalStateException("completed twice");
        }
        if (registered != null) {
            registered.run();
        }
    }

    /** Whether the work is complete (read by the release to check that it runs after the work). */
    public boolean isComplete() {
        return complete;
    }
}
