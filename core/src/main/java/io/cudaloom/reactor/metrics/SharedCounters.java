package io.cudaloom.reactor.metrics;

import io.cudaloom.protocol.SlotTable;
import java.util.concurrent.atomic.LongAdder;

/**
 * The reactor's multi-writer counters (registrants on any thread add to them): one
 * {@link LongAdder} per {@link Counter.Source#ADDER} counter, indexed by its ordinal. A part
 * holds the adders it increments, handed over once ({@link #adder}, as Agrona hands an agent its
 * counters: the wait, its checks, the registrar and the callback registrations), so no path of
 * theirs goes through this class; the facade increments the few it counts itself here. The
 * scanner's own, single-writer counters live in the scanner, read through {@link ScannerCounts};
 * {@link #snapshot} reads both, and samples the rest.
 */
public final class SharedCounters {
    /** The scanner's single-writer counters and its CPU time ({@link io.cudaloom.reactor.Scanner} implements it). */
    public interface ScannerCounts {
        /** A {@link Counter.Source#SCANNER} counter's value now (an opaque load of a single writer's count; any thread). */
        long count(Counter c);

        /** The scanner thread's CPU time in nanoseconds, or what it had used when it exited; -1 if unknown. */
        long cpuNanos(Thread scannerThread);
    }

    /** By {@link Counter#ordinal()}; null for a counter that is not an adder. */
    private final LongAdder[] adders = new LongAdder[Counter.COUNT];

    public SharedCounters() {
        for (Counter c : Counter.ALL) {
            if (c.source == Counter.Source.ADDER) {
                adders[c.ordinal()] = new LongAdder();
            }
        }
    }

    /**
     * The adder behind {@code c}, for a part that increments it on its own path (handed over once, as
     * Agrona hands an agent its counters).
     *
     * @throws IllegalArgumentException if {@code c} is not a multi-writer counter kept here
     */
    public LongAdder adder(Counter c) {
        LongAdder adder = adders[c.ordinal()];
        if (adder == null) {
            throw new IllegalArgumentException("counter " + c + " is not kept by SharedCounters (its source is "
                    + c.source + ")");
        }
        return adder;
    }

    /** Counts one; {@code c} must be an {@link Counter.Source#ADDER} counter. Allocation-free. */
    public void increment(Counter c) {
        adders[c.ordinal()].increment();
    }

    /** Adds {@code n}; {@code c} must be an {@link Counter.Source#ADDER} counter. Allocation-free. */
    public void add(Counter c, long n) {
        adders[c.ordinal()].add(n);
    }

    /** {@link io.cudaloom.CompletionReactor#stats()}: these counters, the scanner's and the table's, now. */
    public CounterSnapshot snapshot(SlotTable<?> table, ScannerCounts scanner, Thread scannerThread, int waitersNow, long workInFlight) {
        long[] values = new long[Counter.COUNT];
        for (Counter c : Counter.ALL) {
            values[c.ordinal()] = switch (c.source) {
                case ADDER -> adders[c.ordinal()].sum();
                case SCANNER -> scanner.count(c);
                case SAMPLED -> switch (c) {
                    case CAPACITY -> table.capacity();
                    case ARMED_NOW -> table.armedCount();
                    case FREE_SLOTS -> table.freeCount();
                    case SCANNER_CPU_NANOS -> scanner.cpuNanos(scannerThread);
                    case WAITERS_NOW -> waitersNow;
                    case WORK_IN_FLIGHT -> workInFlight;
                    default -> throw new AssertionError(c + " is sampled, but the snapshot does not say how");
                };
            };
        }
        return new CounterSnapshot(values);
    }
}
