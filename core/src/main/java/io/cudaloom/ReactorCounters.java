package io.cudaloom;

import io.cudaloom.protocol.SlotTable;
import java.util.concurrent.atomic.LongAdder;

/**
 * The reactor's multi-writer counters (registrants on any thread add to them); the scanner's own,
 * single-writer counters live in {@link Scanner}. {@link #snapshot} reads both.
 */
final class ReactorCounters {
    final LongAdder registrations = new LongAdder();
    final LongAdder completions = new LongAdder();
    final LongAdder inlineCompletions = new LongAdder();
    final LongAdder immediate = new LongAdder();
    final LongAdder fallbacks = new LongAdder();
    final LongAdder abandoned = new LongAdder();
    final LongAdder faults = new LongAdder();
    final LongAdder scannerUnparks = new LongAdder();
    final LongAdder coalesced = new LongAdder();
    final LongAdder flagWrites = new LongAdder();
    final LongAdder admissionWaits = new LongAdder();
    final LongAdder admissionWaitNanos = new LongAdder();
    final LongAdder trackers = new LongAdder();
    final LongAdder timeouts = new LongAdder();

    /** Counts a withdrawal that succeeded; returns {@code withdrawn}. */
    boolean abandoned(boolean withdrawn) {
        if (withdrawn) {
            abandoned.increment();
        }
        return withdrawn;
    }

    /** {@link CompletionReactor#stats()}: these counters, the scanner's and the table's, now. */
    ReactorStats snapshot(SlotTable<?> table, Scanner scanner, Thread scannerThread, int waitersNow, long workInFlight) {
        return ReactorStats.builder()
                .capacity(table.capacity())
                .armedNow(table.armedCount())
                .freeSlots(table.freeCount())
                .registrations(registrations.sum())
                .completions(completions.sum())
                .inlineCompletions(inlineCompletions.sum())
                .immediate(immediate.sum())
                .fallbacks(fallbacks.sum())
                .abandoned(abandoned.sum())
                .faults(faults.sum())
                .scannerParks(scanner.count(Scanner.PARKS))
                .scannerTimedParks(scanner.count(Scanner.TIMED_PARKS))
                .scannerUnparks(scannerUnparks.sum())
                .scanPasses(scanner.count(Scanner.PASSES))
                .faultProbes(scanner.count(Scanner.PROBES))
                .quarantined((int) scanner.count(Scanner.QUARANTINED))
                .coalesced(coalesced.sum())
                .scannerErrors(scanner.count(Scanner.ERRORS))
                .scannerCpuNanos(scanner.cpuNanos(scannerThread))
                .flagWrites(flagWrites.sum())
                .admissionWaits(admissionWaits.sum())
                .admissionWaitNanos(admissionWaitNanos.sum())
                .trackers(trackers.sum())
                .timeouts(timeouts.sum())
                .waitersNow(waitersNow)
                .workInFlight(workInFlight)
                .build();
    }
}
