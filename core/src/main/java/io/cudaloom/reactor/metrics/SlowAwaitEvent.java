package io.cudaloom.reactor.metrics;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Threshold;

/**
 * JFR event {@value #NAME}: a blocking await that took longer than the event's threshold (20 ms
 * unless a recording sets another), from registering to returning. Awaits that found their work
 * already done register nothing and are not timed. Begun ({@link io.cudaloom.reactor.metrics.LatencyRecorder#beginAwait}), ended
 * ({@link #endAwait}) and committed ({@link io.cudaloom.reactor.metrics.LatencyRecorder#awaitEnded}, the one await's one metrics call) only
 * while a recording has the event enabled, so a disabled event allocates nothing.
 */
@Name(SlowAwaitEvent.NAME)
@Label("Slow GPU Await")
@Category("cuda-loom")
@Description("An await() on GPU work that took longer than the threshold, from registering to returning")
@Threshold("20 ms")
public final class SlowAwaitEvent extends Event {
    public static final String NAME = "io.cudaloom.SlowAwait";

    /** The waiter's own spin saw the flag land: no wake-up. */
    public static final String INLINE = "inline";
    /** Armed a completion slot and parked until the scanner woke it. */
    public static final String PARKED = "parked";
    /** Served by a host callback instead of a slot (see {@link io.cudaloom.reactor.metrics.FallbackEvent}). */
    public static final String FALLBACK = "fallback";
    /**
     * Coalescing: shared a flag write armed for the stream's other waiters (it joined their group, or
     * gathered the next one), the awaits {@code stats().coalesced()} counts. A waiter whose own
     * write others join is not: it is {@link #INLINE}, {@link #PARKED} or {@link #FALLBACK}.
     */
    public static final String COALESCED = "coalesced";
    /** The stream was closed: served by the registration its close left ({@link io.cudaloom.reactor.StreamDrain}). */
    public static final String DRAIN = "drain";
    /**
     * Found its work done (a delivered group covered it): waited for nothing, so never committed
     * (as an await that finds its work done before registering); {@link io.cudaloom.reactor.Waiter#path} only.
     */
    public static final String IMMEDIATE = "immediate";

    public static final String COMPLETED = "completed";
    public static final String TIMED_OUT = "timed out";
    public static final String FAILED = "failed";
    // The outcome of an exception is mapped in JfrEvents (awaitOutcome, eventOutcome), not here: a static method of
    // an Event subclass loads it and with it JFR (0.1 s or more), in a JVM that never records too.
    // The constants above are compile-time constants: using them loads nothing.

    @Label("Device")
    String device = "";

    @Label("Stream")
    String stream = "";

    @Label("Path")
    @Description("inline: the waiter's spin saw its flag; parked: a slot, woken by the scanner; "
            + "fallback: a host callback; coalesced: shared a flag write armed for the stream's other waiters "
            + "(counted by coalesced); "
            + "drain: the stream was closed, served by the registration its close left")
    String path = PARKED;

    @Label("Outcome")
    @Description("completed, timed out, interrupted, fault, closed, or failed (another exception)")
    String outcome = "";

    /**
     * Ends this begun event and fills it in; true if the caller should commit it: a recording
     * wants it (its threshold passed) and the await waited for something (an {@link #IMMEDIATE}
     * path, work found done, is never recorded). The one place the one blocking wait
     * ({@link io.cudaloom.reactor.BlockingWait#acquire}, every mode) ends the event, through its one
     * metrics call ({@link LatencyRecorder#awaitEnded}), which commits it, so that the event's stack
     * trace starts there, at the await, not here. An instance method: one exists only while a
     * recording has the event enabled, so nothing here loads JFR otherwise.
     *
     * @param stream the stream waited on (its {@code toString()} is taken only if committed)
     * @param path what happened to the await ({@link io.cudaloom.reactor.Waiter#path}, or {@link #DRAIN})
     * @param outcome the event's outcome ({@link JfrEvents#eventOutcome})
     */
    public boolean endAwait(String device, Object stream, String path, String outcome) {
        end();
        if (path == IMMEDIATE || !shouldCommit()) { // a constant: compared by identity, as Waiter#path is set
            return false;
        }
        this.device = device;
        this.stream = stream.toString();
        this.path = path;
        this.outcome = outcome;
        return true;
    }
}
