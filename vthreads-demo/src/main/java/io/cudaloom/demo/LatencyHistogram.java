package io.cudaloom.demo;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAccumulator;
import org.HdrHistogram.AtomicHistogram;

/**
 * A thread-safe latency histogram in nanoseconds, backed by HdrHistogram's
 * {@link AtomicHistogram} (3 significant digits: a reported percentile is within 0.1% of the true
 * value; values below 2,048 ns are exact). Recording is a few atomic increments and allocates
 * nothing, so thousands of virtual threads can record every await. Values above one hour are
 * counted as one hour; {@link #max()} stays exact.
 */
public final class LatencyHistogram {
    /** Largest value told apart from larger ones: one hour. */
    static final long HIGHEST_TRACKABLE_NANOS = TimeUnit.HOURS.toNanos(1);

    private final AtomicHistogram histogram = new AtomicHistogram(HIGHEST_TRACKABLE_NANOS, 3);
    private final LongAccumulator max = new LongAccumulator(Math::max, 0L);

    /** Records one latency; negative values count as 0. */
    public void record(long nanos) {
        long v = Math.max(0L, nanos);
        histogram.recordValue(Math.min(v, HIGHEST_TRACKABLE_NANOS));
        max.accumulate(v);
    }

    /** Values recorded since the start or the last {@link #reset()}. */
    public long count() {
        return histogram.getTotalCount();
    }

    /** Largest value recorded (exact); 0 if none. */
    public long max() {
        return max.get();
    }

    /**
     * The value at percentile {@code p} (0 < p <= 100): the smallest recorded value such that at
     * least p% of the values are at most it, within the histogram's resolution (and never above
     * {@link #max()}). 0 if nothing was recorded.
     */
    public long percentile(double p) {
        if (!(p > 0 && p <= 100)) {
            throw new IllegalArgumentException("percentile must be in (0, 100], was " + p);
        }
        if (histogram.getTotalCount() == 0) {
            return 0;
        }
        return Math.min(histogram.getValueAtPercentile(p), max());
    }

    /**
     * Forgets every value recorded so far, e.g. those of a warm-up. Not atomic with respect to
     * concurrent {@link #record} calls: call it while nobody records (the demo does so while every
     * thread waits at the start of its steady state).
     */
    public void reset() {
        histogram.reset();
        max.reset();
    }
}
