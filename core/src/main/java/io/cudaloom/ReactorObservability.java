package io.cudaloom;

import jdk.jfr.FlightRecorder;

/**
 * What a reactor publishes for operators while it is open: its hook for the periodic JFR event
 * {@link ReactorCountersEvent}. It is installed when the reactor opens and removed when it closes
 * (the hook's event is emitted once more as the close begins, with the final counters), so a
 * closed device leaves no hook holding on to it.
 *
 * <p>Monitoring never stops a device from opening or closing: a failure is logged and ignored.
 *
 * <p>Thread safety: {@link #open} (the constructing thread, last thing in the constructor) and
 * {@link #close} (whoever finishes the shutdown: the closing thread, or the scanner when it was
 * closed from its own thread or stopped by an Error, possibly before the constructor returned)
 * may race, so both hold this object's monitor, and a close that comes first makes the open
 * install nothing.
 */
final class ReactorObservability {
    private static final System.Logger LOG = System.getLogger("io.cudaloom");

    private final CompletionReactor reactor;
    private final Runnable countersHook;
    private boolean hookAdded; // guarded by this
    private boolean closed; // guarded by this

    ReactorObservability(CompletionReactor reactor) {
        this.reactor = reactor;
        this.countersHook = () -> ReactorEvents.counters(reactor);
    }

    synchronized void open() {
        if (closed) {
            return;
        }
        try {
            FlightRecorder.addPeriodicEvent(ReactorCountersEvent.class, countersHook);
            hookAdded = true;
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: no periodic JFR counters for "
                    + reactor.device().name() + ": " + e, e);
        }
    }

    /**
     * Emits the counters event once more, as {@link CompletionReactor#close()} begins: the totals
     * of a run shorter than a period, taken before the shutdown holds back the free slots.
     */
    synchronized void closing() {
        if (hookAdded) {
            try {
                ReactorEvents.counters(reactor);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: the final JFR counters failed: " + e, e);
            }
        }
    }

    /** Removes the hook; idempotent. */
    synchronized void close() {
        closed = true;
        if (hookAdded) {
            hookAdded = false;
            try {
                FlightRecorder.removePeriodicEvent(countersHook);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: removing the periodic JFR hook failed: " + e, e);
            }
        }
    }

    /** The periodic JFR hook (for tests: once closed, removing it again must find nothing). */
    Runnable countersHook() {
        return countersHook;
    }
}
