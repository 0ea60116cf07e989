package io.cudaloom.demo;

import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAccumulator;

/**
 * A fixed-size, thread-safe latency histogram in nanoseconds (log-linear buckets, HdrHistogram
 * style): values below 128 are exact, larger ones fall in one of 64 buckets per power of two, so a
 * reported percentile is within 1/64 (1.6%) of the true value. Recording is one atomic increment and
 * allocates nothing, so thousands of virtual threads can record every await.
 */
public final class LatencyHistogram {
    private static final int SUB_BUCKETS = 64;
    private static final int EXACT = 2 * SUB_BUCKETS; // values 0..127 have a bucket each
    /** Enough buckets for any non-negative long: 128 exact + 56 magnitudes of 64 sub-buckets. */
    private static final int BUCKETS = EXACT + 56 * SUB_BUCKETS;

    private final AtomicLongArray counts = new AtomicLongArray(BUCKETS);
    private final LongAccumulator max = new LongAccumulator(Math::max, 0L);

    /** Records one latency; negative values count as 0. */
    public void record(long nanos) {
        long v = Math.max(0L, nanos);
        counts.incrementAndGet(indexOf(v));
        max.accumulate(v);
    }

    /** Values recorded so far. */
    public long count() {
        long n = 0;
        for (int i = 0; i < BUCKETS; i++) {
            n += counts.get(i);
        }
        return n;
    }

    /** Largest value recorded (exact); 0 if none. */
    public long max() {
        return max.get();
    }

    /**
     * The value at percentile {@code p} (0 < p <= 100): the smallest recorded value such that at
     * least p% of the values are at most it, within the bucket resolution. 0 if nothing was recorded.
     */
    public long percentile(double p) {
        if (!(p > 0 && p <= 100)) {
            throw new IllegalArgumentException("percentile must be in (0, 100], was " + p);
        }
        long[] snapshot = new long[BUCKETS];
        long total = 0;
        for (int i = 0; i < BUCKETS; i++) {
            snapshot[i] = counts.get(i);
            total += snapshot[i];
        }
        if (total == 0) {
            return 0;
        }
        long rank = Math.max(1, (long) Math.ceil(p / 100.0 * total));
        long seen = 0;
        for (int i = 0; i < BUCKETS; i++) {
            seen += snapshot[i];
            if (seen >= rank) {
                return Math.min(representative(i), max());
            }
        }
        return max();
    }

    static int indexOf(long v) {
        if (v < EXACT) {
            return (int) v;
        }
        int bits = 64 - Long.numberOfLeadingZeros(v); // >= 8
        int shift = bits - 7;                          // v >>> shift is in [64, 128)
        int sub = (int) (v >>> shift) - SUB_BUCKETS;
        return EXACT + (shift - 1) * SUB_BUCKETS + sub;
    }

    /** The middle of bucket {@code index}'s value range. */
    static long representative(int index) {
        if (index < EXACT) {
            return index;
        }
        int k = index - EXACT;
        int shift = k / SUB_BUCKETS + 1;
        long top = SUB_BUCKETS + (k % SUB_BUCKETS);
        long low = top << shift;
        long width = 1L << shift;
        return low + (width - 1) / 2;
    }
}
