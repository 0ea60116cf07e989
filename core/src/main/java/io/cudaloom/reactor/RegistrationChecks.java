package io.cudaloom.reactor;

import io.cudaloom.reactor.metrics.Counter;
import io.cudaloom.reactor.metrics.SharedCounters;
import io.cudaloom.spi.StreamState;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The one step every wait and registration takes before registering (in the manner of AQS's
 * {@code tryAcquire} before it queues): the reactor is open, the stream is open, and the stream is
 * not already done or faulted; and, for a blocking wait, that the calling thread may block. A
 * fault found here becomes an exception through {@link DeviceFaults}, its one factory.
 */
public final class RegistrationChecks {
    private final LifecycleState state;
    private final SharedCounters counters;
    private final String deviceName;
    /** The reactor's scanner thread (made after these checks, so asked for when needed). */
    private final Supplier<Thread> scannerThread;

    public RegistrationChecks(LifecycleState state, SharedCounters counters, String deviceName, Supplier<Thread> scannerThread) {
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
     * @throws io.cudaloom.ReactorClosedException if the reactor is closed
     * @throws IllegalStateException if the stream is closed
     * @throws io.cudaloom.GpuFaultException if the stream has faulted
     */
    StreamState precheck(ReactorStream stream, boolean assumeBusy) {
        state.checkOpen();
        if (stream.isClosed()) {
            throw new IllegalStateException("stream " + stream + " is closed");
        }
        return examine(stream, assumeBusy);
    }

    /**
     * {@link #precheck} after its open checks, for the blocking wait, which reads the reactor's and
     * the stream's state itself and routes a closed stream to its drain ({@link BlockingWait#acquire}).
     */
    StreamState examine(ReactorStream stream, boolean assumeBusy) {
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
     * A look at the stream for {@code GpuEvent.isDone()} and the work-in-flight gauges: the
     * stream's state now, from one query ({@code cuStreamQuery} on CUDA; FAULTED with no driver
     * call once a fault is recorded), an IDLE answer recorded as a proof of the work counted
     * before the query, as {@link #precheck} does. Unlike it, this is no await: it counts nothing
     * and never throws.
     *
     * <p>Ordering: the count is read before the query. A submission is counted only after its
     * enqueue returned ({@code GpuStream.submissionCount}), so an IDLE answer that follows the read
     * covers every counted entry, and the proof it records ({@link ReactorStream#completedThrough()},
     * a compare-and-set that only raises) is never ahead of the work. The proof's volatile write is
     * what later readers of the counts (the gauges, {@code isKnownComplete}) observe.
     *
     * @return IDLE (the proof recorded), BUSY or FAULTED (the fault recorded by the fault owner);
     *     null where no query may be made: the reactor is closed, the caller runs on a host
     *     callback (CUDA forbids driver calls there; a recorded fault is still answered), or the
     *     backend's query threw
     */
    public @Nullable StreamState query(ReactorStream stream) {
        if (state.isClosed()) {
            return null;
        }
        if (FallbackRegistration.onHostCallback()) {
            return stream.faults().hasFaulted() ? StreamState.FAULTED : null;
        }
        long counted = stream.submissionCount(); // before the query: an idle answer covers these
        StreamState answer;
        try {
            answer = stream.queryState();
        } catch (RuntimeException e) {
            return null; // a look, not a wait: the waits and the scanner's probe report what the backend does
        }
        if (answer == StreamState.IDLE) {
            stream.completedThrough(counted);
        }
        return answer;
    }

    /**
     * The gauges' refresh ({@code GpuStream.workInFlight()}, {@code ReactorStats.workInFlight()}):
     * one {@link #query} of {@code stream} if its counts show work not yet proven complete, none
     * otherwise, so that work finished without anyone awaiting it leaves the gauge once the stream
     * is idle. Bounded: at most one query per stream per read.
     */
    public void proveIfIdle(ReactorStream stream) {
        if (stream.hasWorkNotKnownComplete() && !stream.isClosed()) {
            query(stream);
        }
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
