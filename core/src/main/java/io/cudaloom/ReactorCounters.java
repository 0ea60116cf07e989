package io.cudaloom;

import java.util.concurrent.atomic.LongAdder;

/**
 * The reactor's multi-writer counters (registrants on any thread add to them); the scanner's own,
 * single-writer counters live in {@link Scanner}. {@link CompletionReactor#stats()} reads both.
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

    /** Counts a withdrawal that succeeded; returns {@code withdrawn}. */
    boolean abandoned(boolean withdrawn) {
        if (withdrawn) {
            abandoned.increment();
        }
        return withdrawn;
    }
}
