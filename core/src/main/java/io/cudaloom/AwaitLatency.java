package io.cudaloom;

import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A snapshot of a device's await-latency distribution, from {@link CompletionReactor#awaitLatency()}:
 * how long blocking awaits waited, from registering to returning, whatever their outcome (completed,
 * timed out, interrupted, failed), over the device's lifetime. Kept in an HdrHistogram with 2
 * significant digits, so each percentile is within 1% of the exact one; a wait over an hour counts
 * as one hour. Awaits that found their work already done register nothing and are not counted here
 * (they are {@link ReactorStats#immediate()}); neither are callbacks and futures.
 *
 * <p>Also: the p99 of the recent window (what was recorded in the last 10 to 20 s) and the relative
 * {@code SlowAwait} threshold derived from it ({@link ReactorConfig.Builder#slowAwaitFactor}).
 *
 * <p>The same values are the {@code Await*} attributes of the device's {@link ReactorMXBean}. All
 * times are in nanoseconds.
 */
public final class AwaitLatency {
    private final long count;
    private final long p50;
    private final long p90;
    private final long p99;
    private final long p999;
    private final long max;
    private final double mean;
    private final long recentP99;
    private final long slowAwaitThreshold;

    AwaitLatency(long count, long p50, long p90, long p99, long p999, long max, double mean, long recentP99,
            long slowAwaitThreshold) {
        this.count = count;
        this.p50 = p50;
        this.p90 = p90;
        this.p99 = p99;
        this.p999 = p999;
        this.max = max;
        this.mean = mean;
        this.recentP99 = recentP99;
        this.slowAwaitThreshold = slowAwaitThreshold;
    }

    /** Awaits recorded since the device opened. */
    public long count() { return count; }

    /** The median wait (0 with no await recorded). */
    public long p50Nanos() { return p50; }

    public long p90Nanos() { return p90; }

    public long p99Nanos() { return p99; }

    public long p999Nanos() { return p999; }

    /** The longest wait (to 1% precision). */
    public long maxNanos() { return max; }

    public double meanNanos() { return mean; }

    /** The total time waited, {@code count() * meanNanos()} (as precise as the mean). */
    public double totalNanos() { return count * mean; }

    /** The p99 of the recent window (the last 10 to 20 s); 0 while it holds fewer than 10 awaits. */
    public long recentP99Nanos() { return recentP99; }

    /**
     * The relative {@code SlowAwait} threshold now: {@link ReactorConfig#slowAwaitFactor()} x
     * {@link #recentP99Nanos()}; 0 while unknown or turned off (then only the recording's own
     * threshold applies). An await is recorded as slow when it is over both.
     */
    public long slowAwaitThresholdNanos() { return slowAwaitThreshold; }

    @Override
    public boolean equals(@Nullable Object o) {
        return o instanceof AwaitLatency a && count == a.count && p50 == a.p50 && p90 == a.p90 && p99 == a.p99
                && p999 == a.p999 && max == a.max && Double.compare(mean, a.mean) == 0 && recentP99 == a.recentP99
                && slowAwaitThreshold == a.slowAwaitThreshold;
    }

    @Override
    public int hashCode() {
        return Objects.hash(count, p50, p90, p99, p999, max, mean, recentP99, slowAwaitThreshold);
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "AwaitLatency[count=%d, p50=%dns, p90=%dns, p99=%dns, p999=%dns, max=%dns, "
                + "mean=%.0fns, recentP99=%dns, slowAwaitThreshold=%dns]", count, p50, p90, p99, p999, max, mean,
                recentP99, slowAwaitThreshold);
    }
}
