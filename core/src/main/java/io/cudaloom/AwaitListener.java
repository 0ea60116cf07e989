package io.cudaloom;

/**
 * Told of every blocking await that registered, as it ends: how it ended and how long it waited.
 * Added with {@link CompletionReactor#addAwaitListener}; the Micrometer binder
 * ({@code io.cudaloom.micrometer.CudaLoomMetrics}) records these into its {@code cudaloom.await}
 * timer, and any other metrics library can do the same.
 *
 * <p>The awaits are exactly those {@link AwaitLatency} counts, and the duration is the one it
 * records: from registering to returning (or throwing). Awaits that found their work already done
 * register nothing and are not reported (they are {@link ReactorStats#immediate()}); neither are
 * polls ({@code await(0, unit)}), callbacks and futures.
 *
 * <h2>When and where it is called</h2>
 * On the awaiting thread, once per await, after the await's outcome is decided, counted in
 * {@link CompletionReactor#stats()} and recorded in {@link CompletionReactor#awaitLatency()} (and
 * its {@code io.cudaloom.SlowAwait} JFR event, if recorded, ended), and before the await returns or
 * throws: so keep it short and non-blocking (a counter, a histogram),
 * or it delays the await and holds its carrier. Listeners are called in the order they were added.
 * An exception a listener throws changes nothing of the await's result; it is logged (logger
 * {@code io.cudaloom}: at {@code WARNING} with its stack the first time on a device, at
 * {@code DEBUG} after that) and the other listeners are still called.
 *
 * <p>With no listener added, an await pays one volatile read for this (it allocates nothing). An
 * await calls the listeners added before its end (it reads the list once, as it ends): one ending
 * while a listener is added or removed may call it or not, and one that read the list before
 * {@link CompletionReactor#removeAwaitListener} returned may still call the removed listener once.
 */
@FunctionalInterface
public interface AwaitListener {
    /** How a blocking await ended. */
    enum Outcome {
        /** The work completed: the await returned normally ({@code true} for a timed one). */
        COMPLETED,
        /** A timed await ran out of time ({@code false}); counted in {@link ReactorStats#timeouts()}. */
        TIMEOUT,
        /** Interrupted while waiting: threw {@link InterruptedException}. */
        INTERRUPTED,
        /** The device faulted: threw {@link GpuFaultException}. */
        FAULT,
        /** The device was closed while waiting: threw {@link ReactorClosedException}. */
        CLOSED,
        /** Any other exception (e.g. a shared registration the reactor refused: {@link IllegalStateException}). */
        FAILED
    }

    /**
     * One await ended.
     *
     * @param outcome how it ended
     * @param nanos how long it waited, from registering to returning (or throwing), in nanoseconds
     */
    void awaitEnded(Outcome outcome, long nanos);
}
