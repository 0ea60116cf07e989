package io.cudaloom.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
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

    /** One point of a latency distribution: at most {@code nanos} for {@code percentile}% of the values. */
    public record Point(double percentile, long nanos) {}

    /**
     * The percentiles a {@link #percentileSeries()} holds: from the median out to the tail in steps
     * that halve what is left above (50, 75, 87.5, ... up to 99.999), with 1, 10 and 25 before, the
     * round ones (90, 99, 99.9, 99.99) among them and 100 (the maximum) at the end, so that a plot
     * over {@code 1 / (1 - p)} spreads them evenly and the tables can read p50 and p99 off it.
     */
    static final List<Double> SERIES_PERCENTILES = seriesPercentiles();

    private static List<Double> seriesPercentiles() {
        TreeSet<Double> ps = new TreeSet<>(List.of(1.0, 10.0, 25.0, 90.0, 99.0, 99.9, 99.99, 100.0));
        for (double left = 50; left >= 0.001; left /= 2) {
            ps.add(100 - left);
        }
        return List.copyOf(ps);
    }

    /**
     * The distribution as HdrHistogram's percentile series at {@link #SERIES_PERCENTILES}: what
     * {@code ./demo --report} plots. Empty if nothing was recorded.
     */
    public List<Point> percentileSeries() {
        if (count() == 0) {
            return List.of();
        }
        List<Point> points = new ArrayList<>(SERIES_PERCENTILES.size());
        for (double p : SERIES_PERCENTILES) {
            points.add(new Point(p, percentile(p)));
        }
        return List.copyOf(points);
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
