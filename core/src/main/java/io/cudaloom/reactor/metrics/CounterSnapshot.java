package io.cudaloom.reactor.metrics;

import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * One reading of every {@link Counter}, indexed by its ordinal: what {@link io.cudaloom.reactor.metrics.SharedCounters#snapshot}
 * makes, what the MXBeans and the counters event read, and what the public {@code ReactorStats}
 * wraps (the facade wraps it; no part names the API's value type). Immutable: the array is the
 * snapshot's own.
 */
public final class CounterSnapshot {
    private final long[] values;

    /** Keeps {@code values} (by {@link Counter#ordinal()}): the caller must not change them. */
    public CounterSnapshot(long[] values) {
        if (values.length != Counter.COUNT) {
            throw new IllegalArgumentException(values.length + " values for " + Counter.COUNT + " counters");
        }
        this.values = values;
    }

    /** The value of {@code c} (an int counter's is in int range). */
    public long get(Counter c) {
        return values[c.ordinal()];
    }

    @Override
    public boolean equals(@Nullable Object o) {
        return o instanceof CounterSnapshot other && Arrays.equals(values, other.values);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(values);
    }

    @Override
    public String toString() {
        return Arrays.toString(values);
    }
}
