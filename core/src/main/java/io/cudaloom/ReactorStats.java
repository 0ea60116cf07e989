package io.cudaloom;

import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * A snapshot of a reactor's counters, from {@link CompletionReactor#stats()}. Each counter is read
 * separately, so a snapshot taken while awaits run is not one instant.
 *
 * <p>Two groups. <b>Operator metrics</b>, what to watch and alert on: the slots
 * ({@link #capacity}, {@link #armedNow}, {@link #freeSlots}, {@link #quarantined}), the awaits and
 * their outcomes ({@link #registrations}, {@link #completions}, {@link #immediate}, {@link #fallbacks},
 * {@link #abandoned}, {@link #faults}, {@link #timeouts}), load now ({@link #waitersNow},
 * {@link #workInFlight}), back-pressure ({@link #admissionWaits}, {@link #admissionWaitNanos}) and
 * {@link #scannerErrors}; with the latency distribution beside them
 * ({@link CompletionReactor#awaitLatency()}). <b>Internals</b>, how the reactor did it (for tuning
 * and bug reports): {@link #internals()}, the scanner's parks and passes, fault probes, its CPU, and
 * the protocol's shortcuts (inline completions, coalesced awaits, flag writes, trackers). The
 * internals' flat accessors here stay, for compatibility; the MXBean publishes them apart, as
 * {@link ReactorInternalsMXBean}.
 *
 * <p>A value class that can grow: new counters are added as new accessors, never as constructor
 * parameters, so callers keep compiling. Snapshots are made by the reactor, or with
 * {@link #builder()} (for test doubles and tools). Two snapshots are equal when every counter is.
 * The same counters are published as JMX attributes ({@link ReactorMXBean}) and as the periodic
 * JDK Flight Recorder event {@code io.cudaloom.ReactorCounters}.
 */
public final class ReactorStats {
    private final int capacity;
    private final long armedNow;
    private final int freeSlots;
    private final long registrations;
    private final long completions;
    private final long inlineCompletions;
    private final long immediate;
    private final long fallbacks;
    private final long abandoned;
    private final long faults;
    private final long scannerParks;
    private final long scannerTimedParks;
    private final long scannerUnparks;
    private final long scanPasses;
    private final long faultProbes;
    private final int quarantined;
    private final long coalesced;
    private final long scannerErrors;
    private final long scannerCpuNanos;
    private final long flagWrites;
    private final long admissionWaits;
    private final long admissionWaitNanos;
    private final long trackers;
    private final long timeouts;
    private final int waitersNow;
    private final long workInFlight;

    private ReactorStats(Builder b) {
        this.capacity = b.capacity;
        this.armedNow = b.armedNow;
        this.freeSlots = b.freeSlots;
        this.registrations = b.registrations;
        this.completions = b.completions;
        this.inlineCompletions = b.inlineCompletions;
        this.immediate = b.immediate;
        this.fallbacks = b.fallbacks;
        this.abandoned = b.abandoned;
        this.faults = b.faults;
        this.scannerParks = b.scannerParks;
        this.scannerTimedParks = b.scannerTimedParks;
        this.scannerUnparks = b.scannerUnparks;
        this.scanPasses = b.scanPasses;
        this.faultProbes = b.faultProbes;
        this.quarantined = b.quarantined;
        this.coalesced = b.coalesced;
        this.scannerErrors = b.scannerErrors;
        this.scannerCpuNanos = b.scannerCpuNanos;
        this.flagWrites = b.flagWrites;
        this.admissionWaits = b.admissionWaits;
        this.admissionWaitNanos = b.admissionWaitNanos;
        this.trackers = b.trackers;
        this.timeouts = b.timeouts;
        this.waitersNow = b.waitersNow;
        this.workInFlight = b.workInFlight;
    }

    /** A builder whose counters all start at 0. */
    public static Builder builder() {
        return new Builder();
    }

    /** Completion slots. */
    public int capacity() { return capacity; }

    /** Slots armed and not yet retired. */
    public long armedNow() { return armedNow; }

    /** Slots on the free list (exact only while quiescent). */
    public int freeSlots() { return freeSlots; }

    /** Awaits and callbacks that armed a slot. */
    public long registrations() { return registrations; }

    /** Awaits that returned normally (any path), and callbacks completed without failure. */
    public long completions() { return completions; }

    /** Of the completions, those completed by the waiter's own spin, without a wake-up. */
    public long inlineCompletions() { return inlineCompletions; }

    /** Awaits that found their stream already idle and registered nothing. */
    public long immediate() { return immediate; }

    /**
     * Registrations served by a host callback: the pool was exhausted, the flag write was refused,
     * or the strategy is {@link CompletionStrategy#HOST_CALLBACK}.
     */
    public long fallbacks() { return fallbacks; }

    /**
     * Awaits that gave up (timeout, interrupt) while registered, and non-blocking registrations
     * withdrawn before delivery (a cancelled future or coroutine, {@link GpuEvent.Subscription#cancel()}
     * returning true).
     */
    public long abandoned() { return abandoned; }

    /** Awaits and callbacks that ended with a device fault. */
    public long faults() { return faults; }

    /** Times the scanner parked with nothing armed. */
    public long scannerParks() { return scannerParks; }

    /** Timed parks of the scanner's back-off while slots stayed armed. */
    public long scannerTimedParks() { return scannerTimedParks; }

    /** Unparks of the scanner by registrants (idle-to-active transitions). */
    public long scannerUnparks() { return scannerUnparks; }

    /** Scan passes. */
    public long scanPasses() { return scanPasses; }

    /** Fault-probe rounds (stream queries made by the scanner). */
    public long faultProbes() { return faultProbes; }

    /** Slots held back because a device write into them might still land. */
    public int quarantined() { return quarantined; }

    /** Awaits that joined another waiter's slot instead of arming their own. */
    public long coalesced() { return coalesced; }

    /**
     * Exceptions and errors the scanner caught in its loop (a backend hook that threw, for
     * example); each was reported to the scanner thread's uncaught-exception handler.
     */
    public long scannerErrors() { return scannerErrors; }

    /** CPU time the scanner thread has used (its total once it has stopped; -1 where the JVM cannot tell). */
    public long scannerCpuNanos() { return scannerCpuNanos; }

    /**
     * Device flag writes enqueued ({@code cuStreamWriteValue32} on CUDA): one per registration
     * that armed a slot. With shared flag writes (the default, {@link ReactorConfig.Builder#coalesce})
     * many waiters share one, so under load this stays far below the awaits.
     */
    public long flagWrites() { return flagWrites; }

    /** Submissions that found their stream's admission bound reached and waited (parked) for room. */
    public long admissionWaits() { return admissionWaits; }

    /** Total time submissions spent waiting for admission, in nanoseconds. */
    public long admissionWaitNanos() { return admissionWaitNanos; }

    /**
     * Flag writes (or host callbacks) the reactor enqueued on its own, with no waiter, to prove a
     * full stream's work complete and so return its admission permits when nobody awaits it.
     * Included in {@link #flagWrites()} when a slot served it.
     */
    public long trackers() { return trackers; }

    /** Blocking awaits that timed out while registered (a part of {@link #abandoned()}). */
    public long timeouts() { return timeouts; }

    /** Threads inside a blocking await now (registered or about to; a gauge, not a count). */
    public int waitersNow() { return waitersNow; }

    /**
     * Work entries submitted to the device's open streams and not yet proven complete (a gauge):
     * the sum of {@link GpuStream#workInFlight()}.
     */
    public long workInFlight() { return workInFlight; }

    /** The reactor's internals: the scanner's and the protocol's counters, apart from the operator metrics. */
    public Internals internals() { return new Internals(); }

    /**
     * The internal counters of a {@link ReactorStats} (the same values as its flat accessors of
     * those names): how the reactor served the awaits, for tuning and bug reports rather than for
     * alerts. Published over JMX as {@link ReactorInternalsMXBean}.
     */
    public final class Internals {
        private Internals() {}

        /** {@link ReactorStats#inlineCompletions()}. */
        public long inlineCompletions() { return inlineCompletions; }
        /** {@link ReactorStats#coalesced()}. */
        public long coalesced() { return coalesced; }
        /** {@link ReactorStats#flagWrites()}. */
        public long flagWrites() { return flagWrites; }
        /** {@link ReactorStats#trackers()}. */
        public long trackers() { return trackers; }
        /** {@link ReactorStats#scannerParks()}. */
        public long scannerParks() { return scannerParks; }
        /** {@link ReactorStats#scannerTimedParks()}. */
        public long scannerTimedParks() { return scannerTimedParks; }
        /** {@link ReactorStats#scannerUnparks()}. */
        public long scannerUnparks() { return scannerUnparks; }
        /** {@link ReactorStats#scanPasses()}. */
        public long scanPasses() { return scanPasses; }
        /** {@link ReactorStats#faultProbes()}. */
        public long faultProbes() { return faultProbes; }
        /** {@link ReactorStats#scannerCpuNanos()}. */
        public long scannerCpuNanos() { return scannerCpuNanos; }

        @Override
        public String toString() {
            return "ReactorStats.Internals[inlineCompletions=" + inlineCompletions + ", coalesced=" + coalesced
                    + ", flagWrites=" + flagWrites + ", trackers=" + trackers + ", scannerParks=" + scannerParks
                    + ", scannerTimedParks=" + scannerTimedParks + ", scannerUnparks=" + scannerUnparks
                    + ", scanPasses=" + scanPasses + ", faultProbes=" + faultProbes
                    + ", scannerCpuNanos=" + scannerCpuNanos + "]";
        }
    }

    /** The names of the internal counters ({@link Internals}); every other counter is an operator metric. */
    static final java.util.Set<String> INTERNAL = java.util.Set.of("inlineCompletions", "coalesced", "flagWrites",
            "trackers", "scannerParks", "scannerTimedParks", "scannerUnparks", "scanPasses", "faultProbes",
            "scannerCpuNanos");

    /** Every counter in declaration order: what equals, hashCode and toString compare and print. */
    private long[] values() {
        return new long[] {capacity, armedNow, freeSlots, registrations, completions, inlineCompletions, immediate,
            fallbacks, abandoned, faults, scannerParks, scannerTimedParks, scannerUnparks, scanPasses, faultProbes,
            quarantined, coalesced, scannerErrors, scannerCpuNanos, flagWrites, admissionWaits, admissionWaitNanos, trackers,
            timeouts, waitersNow, workInFlight};
    }

    private static final String[] NAMES = {"capacity", "armedNow", "freeSlots", "registrations", "completions",
        "inlineCompletions", "immediate", "fallbacks", "abandoned", "faults", "scannerParks", "scannerTimedParks",
        "scannerUnparks", "scanPasses", "faultProbes", "quarantined", "coalesced", "scannerErrors",
        "scannerCpuNanos", "flagWrites", "admissionWaits", "admissionWaitNanos", "trackers", "timeouts", "waitersNow",
        "workInFlight"};

    @Override
    public boolean equals(@Nullable Object o) {
        return o instanceof ReactorStats other && Arrays.equals(values(), other.values());
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(values());
    }

    /** {@code ReactorStats[capacity=4096, armedNow=0, ...]}, every counter by name. */
    @Override
    public String toString() {
        long[] values = values();
        StringBuilder sb = new StringBuilder("ReactorStats[");
        for (int i = 0; i < values.length; i++) {
            sb.append(i == 0 ? "" : ", ").append(NAMES[i]).append('=').append(values[i]);
        }
        return sb.append(']').toString();
    }

    /** Builds a {@link ReactorStats}; unset counters are 0. Not thread-safe. */
    public static final class Builder {
        private int capacity;
        private long armedNow;
        private int freeSlots;
        private long registrations;
        private long completions;
        private long inlineCompletions;
        private long immediate;
        private long fallbacks;
        private long abandoned;
        private long faults;
        private long scannerParks;
        private long scannerTimedParks;
        private long scannerUnparks;
        private long scanPasses;
        private long faultProbes;
        private int quarantined;
        private long coalesced;
        private long scannerErrors;
        private long scannerCpuNanos;
        private long flagWrites;
        private long admissionWaits;
        private long admissionWaitNanos;
        private long trackers;
        private long timeouts;
        private int waitersNow;
        private long workInFlight;

        private Builder() {}

        public Builder capacity(int v) { capacity = v; return this; }
        public Builder armedNow(long v) { armedNow = v; return this; }
        public Builder freeSlots(int v) { freeSlots = v; return this; }
        public Builder registrations(long v) { registrations = v; return this; }
        public Builder completions(long v) { completions = v; return this; }
        public Builder inlineCompletions(long v) { inlineCompletions = v; return this; }
        public Builder immediate(long v) { immediate = v; return this; }
        public Builder fallbacks(long v) { fallbacks = v; return this; }
        public Builder abandoned(long v) { abandoned = v; return this; }
        public Builder faults(long v) { faults = v; return this; }
        public Builder scannerParks(long v) { scannerParks = v; return this; }
        public Builder scannerTimedParks(long v) { scannerTimedParks = v; return this; }
        public Builder scannerUnparks(long v) { scannerUnparks = v; return this; }
        public Builder scanPasses(long v) { scanPasses = v; return this; }
        public Builder faultProbes(long v) { faultProbes = v; return this; }
        public Builder quarantined(int v) { quarantined = v; return this; }
        public Builder coalesced(long v) { coalesced = v; return this; }
        public Builder scannerErrors(long v) { scannerErrors = v; return this; }
        public Builder scannerCpuNanos(long v) { scannerCpuNanos = v; return this; }
        public Builder flagWrites(long v) { flagWrites = v; return this; }
        public Builder admissionWaits(long v) { admissionWaits = v; return this; }
        public Builder admissionWaitNanos(long v) { admissionWaitNanos = v; return this; }
        public Builder trackers(long v) { trackers = v; return this; }
        public Builder timeouts(long v) { timeouts = v; return this; }
        public Builder waitersNow(int v) { waitersNow = v; return this; }
        public Builder workInFlight(long v) { workInFlight = v; return this; }

        public ReactorStats build() {
            return new ReactorStats(this);
        }
    }
}
