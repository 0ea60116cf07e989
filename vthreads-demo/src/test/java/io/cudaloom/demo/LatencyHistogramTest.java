package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class LatencyHistogramTest {

    @Test
    void emptyHistogramReportsZero() {
        LatencyHistogram h = new LatencyHistogram();
        assertEquals(0, h.count());
        assertEquals(0, h.percentile(50));
        assertEquals(0, h.max());
    }

    @Test
    void smallValuesAreExact() {
        LatencyHistogram h = new LatencyHistogram();
        for (int v = 1; v <= 100; v++) {
            h.record(v);
        }
        assertEquals(100, h.count());
        assertEquals(50, h.percentile(50));
        assertEquals(90, h.percentile(90));
        assertEquals(99, h.percentile(99));
        assertEquals(100, h.percentile(100));
        assertEquals(100, h.max());
    }

    @Test
    void largeValuesAreWithinThreeSignificantDigits() {
        LatencyHistogram h = new LatencyHistogram();
        for (long v = 1; v <= 100_000; v++) {
            h.record(v * 1_000); // 1 us .. 100 ms
        }
        for (double p : new double[] {50, 90, 99, 99.9}) {
            double expected = p / 100 * 100_000 * 1_000;
            double got = h.percentile(p);
            assertTrue(Math.abs(got - expected) / expected < 1.0 / 1000,
                    "p" + p + ": " + got + " vs " + expected);
        }
        assertEquals(100_000_000L, h.max());
    }

    @Test
    void valuesOutsideTheRangeAreClampedAndTheMaxStaysExact() {
        LatencyHistogram h = new LatencyHistogram();
        h.record(Long.MAX_VALUE);
        h.record(-5); // counts as 0
        assertEquals(2, h.count());
        assertEquals(0, h.percentile(50));
        assertEquals(Long.MAX_VALUE, h.max());
        long top = h.percentile(100);
        assertTrue(top >= LatencyHistogram.HIGHEST_TRACKABLE_NANOS && top < Long.MAX_VALUE,
                "the top percentile is counted as an hour: " + top);
    }

    @Test
    void resetForgetsTheWarmUp() {
        LatencyHistogram h = new LatencyHistogram();
        for (int i = 0; i < 1_000; i++) {
            h.record(5_000_000); // a slow "warm-up"
        }
        h.reset();
        assertEquals(0, h.count());
        assertEquals(0, h.max());
        for (int v = 1; v <= 10; v++) {
            h.record(v * 100);
        }
        assertEquals(10, h.count());
        assertEquals(1_000, h.max());
        assertEquals(1_000, h.percentile(99), "nothing of the warm-up is left in the tail");
    }

    @Test
    void rejectsPercentilesOutsideTheRange() {
        LatencyHistogram h = new LatencyHistogram();
        assertThrows(IllegalArgumentException.class, () -> h.percentile(0));
        assertThrows(IllegalArgumentException.class, () -> h.percentile(100.5));
        assertThrows(IllegalArgumentException.class, () -> h.percentile(Double.NaN));
    }

    @Test
    void concurrentRecordingLosesNothing() throws InterruptedException {
        LatencyHistogram h = new LatencyHistogram();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 64; t++) {
            threads.add(Thread.ofVirtual().start(() -> {
                for (int i = 0; i < 1_000; i++) {
                    h.record(1_000 + i);
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        assertEquals(64_000, h.count());
        assertEquals(1_999, h.max());
    }

    @Test
    void percentileSeriesIsTheDistributionFromTheMedianToTheMaximum() {
        LatencyHistogram h = new LatencyHistogram();
        assertEquals(List.of(), h.percentileSeries(), "nothing recorded: no series");
        for (int v = 1; v <= 1_000; v++) {
            h.record(v);
        }
        List<LatencyHistogram.Point> series = h.percentileSeries();
        assertEquals(LatencyHistogram.SERIES_PERCENTILES.size(), series.size());
        for (double p : List.of(50.0, 90.0, 99.0, 99.9, 100.0)) {
            assertTrue(LatencyHistogram.SERIES_PERCENTILES.contains(p), "the series holds p" + p);
        }
        for (int i = 0; i < series.size(); i++) {
            LatencyHistogram.Point point = series.get(i);
            assertEquals(h.percentile(point.percentile()), point.nanos(), "p" + point.percentile());
            if (i > 0) {
                assertTrue(point.percentile() > series.get(i - 1).percentile(), "percentiles ascend");
                assertTrue(point.nanos() >= series.get(i - 1).nanos(), "values never fall");
            }
        }
        assertEquals(1_000, series.get(series.size() - 1).nanos(), "the last point is the maximum");
    }
}
