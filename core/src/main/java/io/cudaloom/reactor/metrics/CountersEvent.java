package io.cudaloom.reactor.metrics;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Period;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * JFR event {@value #NAME}: a reactor's counters, once per period (1 s unless a recording sets
 * another) for every open device, and once more as the device's close begins (its totals, also
 * for a run shorter than a period). Emitted by the periodic hook each reactor adds when it opens
 * (or, if Flight Recorder is not initialized yet, when it is) and removes when it closes
 * ({@link io.cudaloom.reactor.metrics.Monitoring}). The fields are {@link io.cudaloom.ReactorStats}'s accessors, by the same
 * names; counters are cumulative since the device opened.
 *
 * <p>JFR reads an event's fields from its class, so each {@link io.cudaloom.reactor.metrics.Counter} has its field declared
 * here, named {@link io.cudaloom.reactor.metrics.Counter#statName} and of its {@link io.cudaloom.reactor.metrics.Counter#type}: {@link io.cudaloom.reactor.metrics.JfrEvents#counters}
 * sets every one of them from the snapshot by that name, and CounterSurfacesTest fails for a counter
 * whose field is missing (or of another type). The labels and descriptions are JFR metadata, and
 * stay here.
 */
@Name(CountersEvent.NAME)
@Label("Reactor Counters")
@Category("cuda-loom")
@Description("A GPU device's completion-reactor counters (ReactorStats), cumulative since it opened")
@Period("1 s")
@StackTrace(false)
public final class CountersEvent extends Event {
    public static final String NAME = "io.cudaloom.ReactorCounters";

    @Label("Device")
    String device = "";

    @Label("Capacity")
    @Description("Completion slots")
    int capacity;

    @Label("Armed Slots")
    @Description("Slots armed and not yet retired")
    long armedNow;

    @Label("Free Slots")
    int freeSlots;

    @Label("Quarantined Slots")
    @Description("Slots held back because a device write into them might still land")
    int quarantined;

    @Label("Registrations")
    @Description("Awaits and callbacks that armed a slot")
    long registrations;

    @Label("Completions")
    long completions;

    @Label("Inline Completions")
    @Description("Completions seen by the waiter's own spin, without a wake-up")
    long inlineCompletions;

    @Label("Immediate")
    @Description("Awaits that found their work already done and registered nothing")
    long immediate;

    @Label("Fallbacks")
    @Description("Registrations served by a host callback")
    long fallbacks;

    @Label("Abandoned")
    @Description("Registrations given up (timeout, interrupt, withdrawal)")
    long abandoned;

    @Label("Faults")
    long faults;

    @Label("Coalesced")
    @Description("Awaits that joined another waiter's registration")
    long coalesced;

    @Label("Flag Writes")
    @Description("Device flag writes enqueued (shared ones count once)")
    long flagWrites;

    @Label("Admission Waits")
    @Description("Submissions that parked for room in their stream's admission bound")
    long admissionWaits;

    @Label("Admission Wait Nanos")
    @Description("Total time submissions parked for admission, ns")
    long admissionWaitNanos;

    @Label("Trackers")
    @Description("Flag writes enqueued with no waiter, to prove a full stream's work complete")
    long trackers;

    @Label("Scanner Parks")
    long scannerParks;

    @Label("Scanner Timed Parks")
    long scannerTimedParks;

    @Label("Scanner Unparks")
    long scannerUnparks;

    @Label("Scanner Missed Wake-ups")
    long scannerMissedWakeups;

    @Label("Pre-wakes")
    long preWakes;

    @Label("Scan Passes")
    long scanPasses;

    @Label("Fault Probes")
    long faultProbes;

    @Label("Scanner Errors")
    long scannerErrors;

    @Label("Callback Errors")
    @Description("Completion callbacks that threw (each logged at WARNING on io.cudaloom, then ignored)")
    long callbackErrors;

    @Label("Scanner CPU Time")
    @Description("CPU time the scanner thread has used; N/A (Long.MIN_VALUE) where the JVM cannot tell")
    @Timespan(Timespan.NANOSECONDS)
    long scannerCpuNanos;

    @Label("Timeouts")
    @Description("Blocking awaits that timed out while registered")
    long timeouts;

    @Label("Waiters Now")
    @Description("Threads inside a blocking await now")
    int waitersNow;

    @Label("Work In Flight")
    @Description("Work entries submitted to open streams and not yet proven complete")
    long workInFlight;

    @Label("Await p99")
    @Description("The p99 of the device's await latency since it opened")
    @Timespan(Timespan.NANOSECONDS)
    long awaitP99Nanos;

    @Label("Await Max")
    @Description("The longest await since the device opened")
    @Timespan(Timespan.NANOSECONDS)
    long awaitMaxNanos;

    @Label("Slow Await Threshold")
    @Description("The relative SlowAwait threshold now (slowAwaitFactor x the recent p99); 0: none yet")
    @Timespan(Timespan.NANOSECONDS)
    long slowAwaitThresholdNanos;
}
