package io.cudaloom.reactor;

import io.cudaloom.spi.StreamState;
import java.util.function.Supplier;

/**
 * The one step every wait and registration takes before registering (in the manner of AQS's
 * {@code tryAcquire} before it queues): the reactor is open, the stream is open, and the stream is
 * not already done or faulted; and, for a blocking wait, that the calling thread may block. A
 * fault found here becomes an exception through {@link DeviceFaults}, its one factory.
 */
public final class RegistrationChecks {
    private final ReactorState state;
    private final ReactorCounters counters;
    private final String deviceName;
    /** The reactor's scanner thread (made after these checks, so asked for when needed). */
    private final Supplier<Thread> scannerThread;

    public RegistrationChecks(ReactorState state, ReactorCounters counters, String deviceName, Supplier<Thread> scannerThread) {
        this.state = state;
        this.counters = counters;
        this.deviceName = deviceName;
        this.scannerThread = scannerThread;
    }

    /**
     * The stream's state: IDLE (the work is done, counted as an immediate completion) or BUSY; a
     * faulted stream throws. With {@code assumeBusy}, a stream with counted work submitted after
     * its last known completion is reported BUSY without a driver call (a fault is then found when
     * registering or by the scanner's probe).
     *
     * @throws ReactorClosedException if the reactor is closed
     * @throws IllegalStateException if the stream is closed
     * @throws GpuFaultException if the stream has faulted
     */
    StreamState precheck(ReactorStream stream, boolean assumeBusy) {
        state.checkOpen();
        if (stream.isClosed()) {
            throw new IllegalStateException("stream " + stream + " is closed");
        }
        if (assumeBusy && stream.hasWorkNotKnownComplete()) {
            return StreamState.BUSY;
        }
        long counted = stream.submissionCount(); // before the query: an idle answer covers these
        StreamState state = stream.queryState();
        if (state == StreamState.IDLE) {
            stream.completedThrough(counted);
            counters.increment(Counter.IMMEDIATE);
            counters.increment(Counter.COMPLETIONS);
        } else if (state == StreamState.FAULTED) {
            counters.increment(Counter.FAULTS);
            throw stream.faults().neverCompletes(); // the fault owner's one factory
        }
        return state;
    }

    /**
     * Refuses a blocking wait on a thread the reactor or the stream itself depends on: the scanner
     * (a completion callback run there with a direct executor), a host-callback thread (the same,
     * on a fallback), or the stream's own worker (a simulated kernel that awaits).
     */
    public void checkMayBlock(ReactorStream stream) {
        String where = null;
        if (Thread.currentThread() == scannerThread.get()) {
            where = "the scanner thread of " + deviceName + " (a completion callback run there)";
        } else if (FallbackRegistration.onHostCallback()) {
            where = "a host-callback thread (a completion callback run there)";
        } else if (stream.isOwnWorkerThread()) {
            where = "the thread that runs " + stream + "'s own work";
        }
        if (where != null) {
            throw new IllegalStateException("await() called on " + where + ": it would stall every waiter it "
                    + "serves; hand the wait to another thread (e.g. an executor for the callback)");
        }
    }
}
