package io.cudaloom.reactor.metrics;

import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Every counter of a reactor, declared once. A constant says what the counter is called on every
 * surface, what it means, how it is written, and where it is shown; everything else is derived
 * from it:
 * <ul>
 *   <li>where its value lives: {@link io.cudaloom.reactor.metrics.SharedCounters} holds a {@code LongAdder} per
 *       {@link Source#ADDER} counter, {@link io.cudaloom.reactor.Scanner} a single-writer slot per
 *       {@link Source#SCANNER} counter, both indexed by {@link #ordinal()}; a
 *       {@link Source#SAMPLED} counter is read when the snapshot is taken
 *       ({@link io.cudaloom.reactor.metrics.SharedCounters#snapshot});
 *   <li>{@link io.cudaloom.ReactorStats}: a snapshot is one array of values indexed by ordinal, compared, hashed
 *       and printed in declaration order ({@code ReactorStats[capacity=..., ...]}); its accessors,
 *       the builder's setters and {@link io.cudaloom.ReactorStats.Internals}' accessors (public API, so declared
 *       one by one) read and write that array;
 *   <li>JMX: the getters of {@link io.cudaloom.ReactorMXBean} ({@link Group#OPERATOR}) or
 *       {@link io.cudaloom.ReactorInternalsMXBean} ({@link Group#INTERNAL}) are answered from the counter of the
 *       attribute's name ({@link #attribute()}), with {@link #description} as the attribute's
 *       description ({@link io.cudaloom.reactor.metrics.Monitoring});
 *   <li>JFR: the field of {@link io.cudaloom.reactor.metrics.CountersEvent} named {@link #statName} is set from it
 *       ({@link io.cudaloom.reactor.metrics.JfrEvents#counters}). JFR needs its fields declared statically, so the event
 *       declares one per counter; CounterSurfacesTest fails for a counter without its field;
 *   <li>Micrometer: {@code io.cudaloom.micrometer.CudaLoomMetrics} binds {@link #meter} (a gauge for
 *       a {@link Measure#LEVEL}, a function counter otherwise, in seconds for a
 *       {@link Unit#NANOSECONDS} counter; {@link Group#INTERNAL} ones only when asked), but for
 *       {@link #TIMEOUTS}, whose meter is the count of the await timer {@value #AWAIT_TIMER} tagged
 *       {@code outcome=timeout} (the same awaits, counted at the same point). That
 *       package may name only the public API, so it lists its meters itself; CounterSurfacesTest
 *       fails for a counter whose meter it does not bind, or binds under another name.
 * </ul>
 * Every counter is on every surface; {@link #group} says which MXBean, and whether Micrometer
 * binds it by default. The names are public (attributes, JFR fields, meter names): rename one only
 * with a CHANGELOG entry (0.1.0 renamed two meters: {@code cudaloom.awaits.completed} to
 * {@code cudaloom.completions}, {@code cudaloom.timeouts} to the await timer's outcome tag).
 *
 * <p>Adding a counter: a constant here (in the place where {@code toString} should print it), its
 * accessor and builder setter in {@link io.cudaloom.ReactorStats} (and in {@link io.cudaloom.ReactorStats.Internals} for an
 * internal one), its getter in the MXBean interface of its group, its field in
 * {@link io.cudaloom.reactor.metrics.CountersEvent}, its meter in the binder, and where it is counted: an
 * {@link io.cudaloom.reactor.metrics.SharedCounters#increment} (an adder), a {@link io.cudaloom.reactor.Scanner} {@code increment} (the scanner's),
 * or a case of {@link io.cudaloom.reactor.metrics.SharedCounters#snapshot} (sampled). The tests name any public surface
 * forgotten.
 */
public enum Counter {
    CAPACITY("capacity", Source.SAMPLED, Type.INT, Measure.LEVEL, Unit.NONE, Group.OPERATOR,
            "cudaloom.slots.capacity", "Completion slots"),
    ARMED_NOW("armedNow", Source.SAMPLED, Type.LONG, Measure.LEVEL, Unit.NONE, Group.OPERATOR,
            "cudaloom.slots.armed", "Slots armed and not yet retired"),
    FREE_SLOTS("freeSlots", Source.SAMPLED, Type.INT, Measure.LEVEL, Unit.NONE, Group.OPERATOR,
            "cudaloom.slots.free", "Slots on the free list (exact only while quiescent)"),
    REGISTRATIONS("registrations", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.OPERATOR,
            "cudaloom.registrations", "Awaits and callbacks that armed a slot"),
    COMPLETIONS("completions", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.OPERATOR,
            "cudaloom.completions", "Awaits that returned normally, and callbacks completed without failure"),
    INLINE_COMPLETIONS("inlineCompletions", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.INTERNAL,
            "cudaloom.internal.inline.completions", "Completions seen by the waiter's own spin, without a wake-up"),
    IMMEDIATE("immediate", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.OPERATOR,
            "cudaloom.awaits.immediate", "Awaits that found their work already done and registered nothing"),
    FALLBACKS("fallbacks", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.OPERATOR,
            "cudaloom.fallbacks", "Registrations served by a host callback"),
    ABANDONED("abandoned", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.OPERATOR,
            "cudaloom.abandoned", "Registrations given up (timeout, interrupt, withdrawal)"),
    FAULTS("faults", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.OPERATOR,
            "cudaloom.faults", "Awaits and callbacks that ended with a device fault"),
    SCANNER_PARKS("scannerParks", Source.SCANNER, Type.LONG, Measure.COUNT, Unit.NONE, Group.INTERNAL,
            "cudaloom.internal.scanner.parks", "Times the scanner parked with nothing armed"),
    SCANNER_TIMED_PARKS("scannerTimedParks", Source.SCANNER, Type.LONG, Measure.COUNT, Unit.NONE, Group.INTERNAL,
            "cudaloom.internal.scanner.timed.parks", "Timed parks of the scanner's back-off while slots stayed armed"),
    SCANNER_UNPARKS("scannerUnparks", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.INTERNAL,
            "cudaloom.internal.scanner.unparks", "Unparks of the scanner by registrants (idle-to-active transitions)"),
    SCANNER_MISSED_WAKEUPS("scannerMissedWakeups", Source.SCANNER, Type.LONG, Measure.COUNT, Unit.NONE, Group.INTERNAL,
            "cudaloom.internal.scanner.missed.wakeups",
            "Untimed parks of the scanner that ran out their time box and then found work armed (a wake-up that did not come)"),
    PRE_WAKES("preWakes", Source.SCANNER, Type.LONG, Measure.COUNT, Unit.NONE, Group.INTERNAL,
            "cudaloom.internal.pre.wakes", "Waiters the scanner woke at the time they asked, shortly before their predicted completion"),
    SCAN_PASSES("scanPasses", Source.SCANNER, Type.LONG, Measure.COUNT, Unit.NONE, Group.INTERNAL,
            "cudaloom.internal.scan.passes", "Scan passes"),
    FAULT_PROBES("faultProbes", Source.SCANNER, Type.LONG, Measure.COUNT, Unit.NONE, Group.INTERNAL,
            "cudaloom.internal.fault.probes", "Fault-probe rounds (stream queries made by the scanner)"),
    QUARANTINED("quarantined", Source.SCANNER, Type.INT, Measure.LEVEL, Unit.NONE, Group.OPERATOR,
            "cudaloom.slots.quarantined", "Slots held back because a device write into them might still land"),
    COALESCED("coalesced", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.INTERNAL,
            "cudaloom.internal.coalesced", "Awaits that joined another waiter's registration"),
    SCANNER_ERRORS("scannerErrors", Source.SCANNER, Type.LONG, Measure.COUNT, Unit.NONE, Group.OPERATOR,
            "cudaloom.scanner.errors", "Exceptions and errors the scanner caught in its loop"),
    CALLBACK_ERRORS("callbackErrors", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.OPERATOR,
            "cudaloom.callback.errors", "Completion callbacks that threw (each logged at WARNING on io.cudaloom, then ignored)"),
    /** -1 where the JVM cannot tell: JFR's N/A there, 0 for Micrometer. */
    SCANNER_CPU_NANOS("scannerCpuNanos", Source.SAMPLED, Type.LONG, Measure.COUNT, Unit.NANOSECONDS, Group.INTERNAL,
            "cudaloom.internal.scanner.cpu", "CPU time the scanner thread has used (-1: unknown)"),
    FLAG_WRITES("flagWrites", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.INTERNAL,
            "cudaloom.internal.flag.writes", "Device flag writes enqueued (shared ones count once)"),
    ADMISSION_WAITS("admissionWaits", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.OPERATOR,
            "cudaloom.admission.waits", "Submissions that parked for room in their stream's admission bound"),
    ADMISSION_WAIT_NANOS("admissionWaitNanos", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NANOSECONDS,
            Group.OPERATOR, "cudaloom.admission.wait", "Total time submissions parked for admission"),
    TRACKERS("trackers", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.INTERNAL,
            "cudaloom.internal.trackers", "Flag writes enqueued with no waiter, to prove a full stream's work complete"),
    TIMEOUTS("timeouts", Source.ADDER, Type.LONG, Measure.COUNT, Unit.NONE, Group.OPERATOR,
            Counter.AWAIT_TIMER, "Blocking awaits that timed out while registered"),
    WAITERS_NOW("waitersNow", Source.SAMPLED, Type.INT, Measure.LEVEL, Unit.NONE, Group.OPERATOR,
            "cudaloom.waiters", "Threads inside a blocking await now"),
    WORK_IN_FLIGHT("workInFlight", Source.SAMPLED, Type.LONG, Measure.LEVEL, Unit.NONE, Group.OPERATOR,
            "cudaloom.work.in.flight", "Work entries submitted to open streams and not yet proven complete");

    /** Who writes a counter, and so where its value lives until a snapshot reads it. */
    enum Source {
        /** Any thread adds to it (registrants, awaits): a {@code LongAdder} in {@link io.cudaloom.reactor.metrics.SharedCounters}. */
        ADDER,
        /** The scanner alone writes it, with opaque stores; the snapshot reads it with opaque loads ({@link io.cudaloom.reactor.Scanner}). */
        SCANNER,
        /** Not counted but read when the snapshot is taken: the table, the scanner thread's CPU, the waiters, the streams. */
        SAMPLED
    }

    /** The Java type of the counter's accessor, MXBean attribute and JFR field. */
    public enum Type {
        INT(int.class),
        LONG(long.class);

        public final Class<?> javaType;

        Type(Class<?> javaType) {
            this.javaType = javaType;
        }
    }

    /** Whether the value only grows (since the device opened) or is a level now. */
    public enum Measure {
        /** Cumulative since the device opened: a Micrometer function counter. */
        COUNT,
        /** A level now: a Micrometer gauge. */
        LEVEL
    }

    /** The counter's unit. */
    public enum Unit {
        NONE,
        /** Nanoseconds (Micrometer: seconds); a negative value means unknown (JFR: N/A). */
        NANOSECONDS
    }

    /** Where the counter is shown (see {@link io.cudaloom.ReactorStats}'s class comment for the two groups). */
    public enum Group {
        /** What to watch and alert on: {@link io.cudaloom.ReactorMXBean}, and Micrometer by default. */
        OPERATOR,
        /** How the reactor did it: {@link io.cudaloom.ReactorStats.Internals}, {@link io.cudaloom.ReactorInternalsMXBean}, Micrometer when asked. */
        INTERNAL
    }

    /** The Micrometer await timer (one meter, tagged by outcome), the meter of {@link #TIMEOUTS}. */
    public static final String AWAIT_TIMER = "cudaloom.await";

    /** {@link #values()}, made once (values() copies its array on every call). */
    public static final List<Counter> ALL = List.of(values());
    /** How many counters there are: the length of the arrays indexed by ordinal. */
    public static final int COUNT = ALL.size();

    /**
     * The name on every surface but Micrometer's: the {@link io.cudaloom.ReactorStats} accessor, the
     * {@link io.cudaloom.reactor.metrics.CountersEvent} field, and (capitalized, {@link #attribute()}) the JMX attribute.
     */
    public final String statName;
    final Source source;
    public final Type type;
    public final Measure measure;
    public final Unit unit;
    public final Group group;
    /** The Micrometer meter's name. */
    public final String meter;
    /** One line, for the JMX attribute's description. */
    public final String description;

    Counter(String statName, Source source, Type type, Measure measure, Unit unit, Group group, String meter,
            String description) {
        this.statName = statName;
        this.source = source;
        this.type = type;
        this.measure = measure;
        this.unit = unit;
        this.group = group;
        this.meter = meter;
        this.description = description;
    }

    /** The JMX attribute's name: {@link #statName} capitalized ({@code getScanPasses} is {@code ScanPasses}). */
    public String attribute() {
        return statName.substring(0, 1).toUpperCase(Locale.ROOT) + statName.substring(1);
    }

    /** The counter whose JMX attribute is {@code attribute}, or null. */
    static @Nullable Counter ofAttribute(String attribute) {
        for (Counter c : ALL) {
            if (c.attribute().equals(attribute)) {
                return c;
            }
        }
        return null;
    }
}
