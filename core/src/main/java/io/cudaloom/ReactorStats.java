package io.cudaloom;

import io.cudaloom.reactor.metrics.Counter;
import io.cudaloom.reactor.metrics.CounterSnapshot;
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
 * {@link #scannerErrors}, {@link #callbackErrors}; with the latency distribution beside them
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
// Implementation note: each counter is declared once, by a constant of the reactor's enum
// io.cudaloom.reactor.metrics.Counter, which also says how it is counted and where it is published; a
// snapshot is the reactor's CounterSnapshot, indexed by it, which the accessors here read.
public final class ReactorStats {
    /** Every counter's value: {@link Counter} says what each one is. */
    private final CounterSnapshot values;

    /** The reactor's snapshot (made by its counters, wrapped by {@link CompletionReactor#stats()}). */
    ReactorStats(CounterSnapshot values) {
        this.values = values;
    }

    /** The value of {@code c} (an int counter's is in int range). */
    long get(Counter c) {
        return values.get(c);
    }

    private int getInt(Counter c) {
        return (int) values.get(c);
    }

    /** A builder whose counters all start at 0. */
    public static Builder builder() {
        return new Builder();
    }

    /** Completion slots. */
    public int capacity() { return getInt(Counter.CAPACITY); }

    /** Slots armed and not yet retired. */
    public long armedNow() { return get(Counter.ARMED_NOW); }

    /** Slots on the free list (exact only while quiescent). */
    public int freeSlots() { return getInt(Counter.FREE_SLOTS); }

    /** Awaits and callbacks that armed a slot. */
    public long registrations() { return get(Counter.REGISTRATIONS); }

    /** Awaits that returned normally (any path), and callbacks completed without failure. */
    public long completions() { return get(Counter.COMPLETIONS); }

    /** Of the completions, those completed by the waiter's own spin, without a wake-up. */
    public long inlineCompletions() { return get(Counter.INLINE_COMPLETIONS); }

    /** Awaits that found their stream already idle and registered nothing. */
    public long immediate() { return get(Counter.IMMEDIATE); }

    /**
     * Registrations served by a host callback: the pool was exhausted, the flag write was refused,
     * or the strategy is {@link CompletionStrategy#HOST_CALLBACK}.
     */
    public long fallbacks() { return get(Counter.FALLBACKS); }

    /**
     * Awaits that gave up (timeout, interrupt) while registered, and non-blocking registrations
     * withdrawn before delivery (a cancelled future or coroutine, {@link Subscription#cancel()}
     * returning true).
     */
    public long abandoned() { return get(Counter.ABANDONED); }

    /** Awaits and callbacks that ended with a device fault. */
    public long faults() { return get(Counter.FAULTS); }

    /** Times the scanner parked with nothing armed. */
    public long scannerParks() { return get(Counter.SCANNER_PARKS); }

    /** Timed parks of the scanner's back-off while slots stayed armed. */
    public long scannerTimedParks() { return get(Counter.SCANNER_TIMED_PARKS); }

    /** Unparks of the scanner by registrants (idle-to-active transitions). */
    public long scannerUnparks() { return get(Counter.SCANNER_UNPARKS); }

    /**
     * Untimed parks of the scanner that ran out their time box (1 s) and then found work armed:
     * a registration's idle-to-active wake-up that did not come (or came just as the box ran out).
     * Should stay 0; a count that grows means lost wake-ups, each served late by at most the box.
     */
    public long scannerMissedWakeups() { return get(Counter.SCANNER_MISSED_WAKEUPS); }

    /** Waiters the scanner woke at the time they asked, shortly before their predicted completion. */
    public long preWakes() { return get(Counter.PRE_WAKES); }

    /** Scan passes. */
    public long scanPasses() { return get(Counter.SCAN_PASSES); }

    /** Fault-probe rounds (stream queries made by the scanner). */
    public long faultProbes() { return get(Counter.FAULT_PROBES); }

    /** Slots held back because a device write into them might still land. */
    public int quarantined() { return getInt(Counter.QUARANTINED); }

    /** Awaits that joined another waiter's slot instead of arming their own. */
    public long coalesced() { return get(Counter.COALESCED); }

    /**
     * Exceptions and errors the scanner caught in its loop (a backend hook that threw, for
     * example); each was reported to the scanner thread's uncaught-exception handler.
     */
    public long scannerErrors() { return get(Counter.SCANNER_ERRORS); }

    /**
     * Completion callbacks ({@link GpuEvent#subscribe}, {@link GpuEvent#onComplete}) that threw:
     * each was logged once at WARNING on the {@code System.Logger} {@code io.cudaloom}, with its
     * stack trace, and otherwise ignored (it reached neither the registering caller nor the thread
     * that ran it).
     */
    public long callbackErrors() { return get(Counter.CALLBACK_ERRORS); }

    /** CPU time the scanner thread has used (its total once it has stopped; -1 where the JVM cannot tell). */
    public long scannerCpuNanos() { return get(Counter.SCANNER_CPU_NANOS); }

    /**
     * Device flag writes enqueued ({@code cuStreamWriteValue32} on CUDA): one per registration
     * that armed a slot. With shared flag writes (the default, {@link ReactorConfig.Builder#coalesce})
     * many waiters share one, so under load this stays far below the awaits.
     */
    public long flagWrites() { return get(Counter.FLAG_WRITES); }

    /** Submissions that found their stream's admission bound reached and waited (parked) for room. */
    public long admissionWaits() { return get(Counter.ADMISSION_WAITS); }

    /** Total time submissions spent waiting for admission, in nanoseconds. */
    public long admissionWaitNanos() { return get(Counter.ADMISSION_WAIT_NANOS); }

    /**
     * Flag writes (or host callbacks) the reactor enqueued on its own, with no waiter, to prove a
     * full stream's work complete and so return its admission permits when nobody awaits it.
     * Included in {@link #flagWrites()} when a slot served it.
     */
    public long trackers() { return get(Counter.TRACKERS); }

    /** Blocking awaits that timed out while registered (a part of {@link #abandoned()}). */
    public long timeouts() { return get(Counter.TIMEOUTS); }

    /** Threads inside a blocking await now (registered or about to; a gauge, not a count). */
    public int waitersNow() { return getInt(Counter.WAITERS_NOW); }

    /**
     * Work entries submitted to the device's open streams and not yet proven complete (a gauge):
     * the sum of {@link GpuStream#workInFlight()}.
     */
    public long workInFlight() { return get(Counter.WORK_IN_FLIGHT); }

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
        public long inlineCompletions() { return get(Counter.INLINE_COMPLETIONS); }
        /** {@link ReactorStats#coalesced()}. */
        public long coalesced() { return get(Counter.COALESCED); }
        /** {@link ReactorStats#flagWrites()}. */
        public long flagWrites() { return get(Counter.FLAG_WRITES); }
        /** {@link ReactorStats#trackers()}. */
        public long trackers() { return get(Counter.TRACKERS); }
        /** {@link ReactorStats#scannerParks()}. */
        public long scannerParks() { return get(Counter.SCANNER_PARKS); }
        /** {@link ReactorStats#scannerTimedParks()}. */
        public long scannerTimedParks() { return get(Counter.SCANNER_TIMED_PARKS); }
        /** {@link ReactorStats#scannerUnparks()}. */
        public long scannerUnparks() { return get(Counter.SCANNER_UNPARKS); }
        /** {@link ReactorStats#scannerMissedWakeups()}. */
        public long scannerMissedWakeups() { return get(Counter.SCANNER_MISSED_WAKEUPS); }
        /** {@link ReactorStats#preWakes()}. */
        public long preWakes() { return get(Counter.PRE_WAKES); }
        /** {@link ReactorStats#scanPasses()}. */
        public long scanPasses() { return get(Counter.SCAN_PASSES); }
        /** {@link ReactorStats#faultProbes()}. */
        public long faultProbes() { return get(Counter.FAULT_PROBES); }
        /** {@link ReactorStats#scannerCpuNanos()}. */
        public long scannerCpuNanos() { return get(Counter.SCANNER_CPU_NANOS); }

        /** {@code ReactorStats.Internals[inlineCompletions=..., ...]}, every internal counter by name. */
        @Override
        public String toString() {
            return print("ReactorStats.Internals[", Counter.Group.INTERNAL);
        }
    }

    /**
     * {@code prefix}, then {@code name=value} of every counter (of {@code group}; null: all) in
     * declaration order, then {@code ]}.
     */
    private String print(String prefix, Counter.@Nullable Group group) {
        StringBuilder sb = new StringBuilder(prefix);
        String separator = "";
        for (Counter c : Counter.ALL) {
            if (group == null || c.group == group) {
                sb.append(separator).append(c.statName).append('=').append(values.get(c));
                separator = ", ";
            }
        }
        return sb.append(']').toString();
    }

    @Override
    public boolean equals(@Nullable Object o) {
        return o instanceof ReactorStats other && values.equals(other.values);
    }

    @Override
    public int hashCode() {
        return values.hashCode();
    }

    /** {@code ReactorStats[capacity=4096, armedNow=0, ...]}, every counter by name. */
    @Override
    public String toString() {
        return print("ReactorStats[", null);
    }

    /** Builds a {@link ReactorStats}; unset counters are 0. Not thread-safe. */
    public static final class Builder {
        /** By {@link Counter#ordinal()}, as {@link ReactorStats#values}. */
        private final long[] values = new long[Counter.COUNT];

        private Builder() {}

        private Builder set(Counter c, long v) {
            values[c.ordinal()] = v;
            return this;
        }

        public Builder capacity(int v) { return set(Counter.CAPACITY, v); }
        public Builder armedNow(long v) { return set(Counter.ARMED_NOW, v); }
        public Builder freeSlots(int v) { return set(Counter.FREE_SLOTS, v); }
        public Builder registrations(long v) { return set(Counter.REGISTRATIONS, v); }
        public Builder completions(long v) { return set(Counter.COMPLETIONS, v); }
        public Builder inlineCompletions(long v) { return set(Counter.INLINE_COMPLETIONS, v); }
        public Builder immediate(long v) { return set(Counter.IMMEDIATE, v); }
        public Builder fallbacks(long v) { return set(Counter.FALLBACKS, v); }
        public Builder abandoned(long v) { return set(Counter.ABANDONED, v); }
        public Builder faults(long v) { return set(Counter.FAULTS, v); }
        public Builder scannerParks(long v) { return set(Counter.SCANNER_PARKS, v); }
        public Builder scannerTimedParks(long v) { return set(Counter.SCANNER_TIMED_PARKS, v); }
        public Builder scannerUnparks(long v) { return set(Counter.SCANNER_UNPARKS, v); }
        public Builder scannerMissedWakeups(long v) { return set(Counter.SCANNER_MISSED_WAKEUPS, v); }
        public Builder preWakes(long v) { return set(Counter.PRE_WAKES, v); }
        public Builder scanPasses(long v) { return set(Counter.SCAN_PASSES, v); }
        public Builder faultProbes(long v) { return set(Counter.FAULT_PROBES, v); }
        public Builder quarantined(int v) { return set(Counter.QUARANTINED, v); }
        public Builder coalesced(long v) { return set(Counter.COALESCED, v); }
        public Builder scannerErrors(long v) { return set(Counter.SCANNER_ERRORS, v); }
        public Builder callbackErrors(long v) { return set(Counter.CALLBACK_ERRORS, v); }
        public Builder scannerCpuNanos(long v) { return set(Counter.SCANNER_CPU_NANOS, v); }
        public Builder flagWrites(long v) { return set(Counter.FLAG_WRITES, v); }
        public Builder admissionWaits(long v) { return set(Counter.ADMISSION_WAITS, v); }
        public Builder admissionWaitNanos(long v) { return set(Counter.ADMISSION_WAIT_NANOS, v); }
        public Builder trackers(long v) { return set(Counter.TRACKERS, v); }
        public Builder timeouts(long v) { return set(Counter.TIMEOUTS, v); }
        public Builder waitersNow(int v) { return set(Counter.WAITERS_NOW, v); }
        public Builder workInFlight(long v) { return set(Counter.WORK_IN_FLIGHT, v); }

        public ReactorStats build() {
            return new ReactorStats(new CounterSnapshot(values.clone()));
        }
    }
}
