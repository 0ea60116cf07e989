package io.cudaloom.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.GpuBatcher;
import io.cudaloom.ReactorStats;
import io.cudaloom.bench.ThroughputSweep.AwaitCounts;
import io.cudaloom.bench.ThroughputSweep.Method;
import io.cudaloom.bench.ThroughputSweep.Row;
import io.cudaloom.bench.ThroughputSweep.Settings;
import io.cudaloom.demo.ServletBench;
import io.cudaloom.sim.SimulatedDevice;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The sweep's pure helpers (the measurements themselves need a GPU: BenchGpuTest). */
class ThroughputSweepTest {

    @Test
    void settingsDefaultsAndBothForms() {
        assertEquals(new Settings(10_000, 100, List.of(10, 50, 200, 1000), 2), Settings.parse(new String[] {"sweep"}, 1));
        assertEquals(new Settings(500, 20, List.of(10), 1), Settings.parse(new String[] {"sweep", "500", "20", "10", "1"}, 1));
        assertEquals(new Settings(10_000, 100, List.of(200, 1000), 1),
                Settings.parse(new String[] {"sweep", "kernelsUs=200,1000", "rounds=1"}, 1));
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"sweep", "rounds=0"}, 1));
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"sweep", "kernelsUs=-5"}, 1));
    }

    @Test
    void launchesAreCappedToTheGpuBudget() {
        // 8 s of GPU time over 8 streams: 64 s of kernel time in all
        assertEquals(6_400_000, ThroughputSweep.launchCap(10_000));
        assertEquals(1_280_000, ThroughputSweep.launchCap(50_000));
        assertEquals(320_000, ThroughputSweep.launchCap(200_000));
        assertEquals(64_000, ThroughputSweep.launchCap(1_000_000));
        assertEquals(Long.MAX_VALUE, ThroughputSweep.launchCap(0));
        assertEquals(ThroughputSweep.STREAMS, ThroughputSweep.launchCap(3_600_000_000_000L), "at least one launch per stream");

        assertEquals(1_000_000, ThroughputSweep.totalLaunches(10_000, 100, 10_000));
        assertEquals(1_000_000, ThroughputSweep.totalLaunches(10_000, 100, 50_000));
        assertEquals(320_000, ThroughputSweep.totalLaunches(10_000, 100, 200_000));
        assertEquals(64_000, ThroughputSweep.totalLaunches(10_000, 100, 1_000_000));
        assertEquals(1_000_000_000_000L, ThroughputSweep.totalLaunches(1_000_000, 1_000_000, 0), "no int overflow");
        for (long kernel : new long[] {10_000, 50_000, 200_000, 1_000_000}) {
            long total = ThroughputSweep.totalLaunches(10_000, 100, kernel);
            assertTrue(total * kernel / ThroughputSweep.STREAMS <= ThroughputSweep.GPU_BUDGET_NANOS, "kernel " + kernel);
        }
    }

    @Test
    void everyRowSplitsTheSameTotalEvenly() {
        for (long total : new long[] {1, 7, 64, 1_000_000, 64_000, 320_000, 100_003}) {
            for (int workers : new int[] {1, 8, 16, 64, 10_000}) {
                if (workers > total) {
                    continue; // the sweep never runs more threads than launches
                }
                long sum = 0, min = Long.MAX_VALUE, max = 0;
                for (int i = 0; i < workers; i++) {
                    long n = ThroughputSweep.share(total, workers, i);
                    sum += n;
                    min = Math.min(min, n);
                    max = Math.max(max, n);
                }
                assertEquals(total, sum, total + " over " + workers);
                assertTrue(max - min <= 1 && min >= 1, total + " over " + workers + ": " + min + ".." + max);
            }
        }
        assertEquals(7, ThroughputSweep.share(64_000, 10_000, 3_999));
        assertEquals(6, ThroughputSweep.share(64_000, 10_000, 4_000));
    }

    @Test
    void sweepRowsPicksRowsInTableOrderAndRefusesAnUnknownOne() {
        assertEquals(List.of(Method.values()), ThroughputSweep.selectedRows(null));
        assertEquals(List.of(Method.values()), ThroughputSweep.selectedRows(" "));
        List<Method> picked = ThroughputSweep.selectedRows("ceiling_8, AWAIT");
        assertEquals(List.of(Method.AWAIT, Method.CEILING_8), picked, "table order, case and blanks ignored");
        assertEquals(List.of(Method.CEILING_8, Method.AWAIT), ThroughputSweep.order(2, picked));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ThroughputSweep.selectedRows("AWAIT,POOL"));
        assertTrue(e.getMessage().startsWith("sweep.rows: no row POOL; rows are [AWAIT"), e.getMessage());
    }

    @Test
    void evenRoundsRunTheRowsInReverse() {
        assertEquals(List.of(Method.AWAIT, Method.BATCHED, Method.POOL_64, Method.POOL_CORES, Method.POOL_BLOCKING,
                Method.CEILING_8, Method.CEILING_16), ThroughputSweep.order(1));
        assertEquals(List.of(Method.CEILING_16, Method.CEILING_8, Method.POOL_BLOCKING, Method.POOL_CORES, Method.POOL_64,
                Method.BATCHED, Method.AWAIT), ThroughputSweep.order(2));
        assertEquals(ThroughputSweep.order(1), ThroughputSweep.order(3));
        assertEquals(16, Method.POOL_CORES.threads(10_000, 16));
        assertEquals(10_000, Method.AWAIT.threads(10_000, 16));
        assertEquals(10_000, Method.BATCHED.threads(10_000, 16), "as many callers as await() threads");
        assertTrue(!Method.BATCHED.isPool());
        assertEquals(16, Method.CEILING_16.threads(10_000, 2));
        assertEquals(64, Method.POOL_BLOCKING.threads(10_000, 16));
        assertTrue(Method.POOL_BLOCKING.isPool() && Method.POOL_64.isPool() && !Method.CEILING_8.isPool()
                && !Method.AWAIT.isPool());
        assertEquals(List.of(Method.POOL_64, Method.POOL_CORES), Method.SPIN_POOLS, "the best pool is a spinning one");
    }

    private static Row row(Method m, int workers, double seconds, double cpuSeconds) {
        return new Row(m, workers, 1, 1_000_000, (long) (seconds * 1e9), (long) (cpuSeconds * 1e9),
                m == Method.AWAIT ? new AwaitCounts(900_000, 700_000, 100_000, 0, 250_000, 1_234, 56_700_000, 4_000, 3_000_000_000L, 50_000) : null);
    }

    @Test
    void rowsAndRatios() {
        Map<Method, Row> round = new EnumMap<>(Method.class);
        round.put(Method.AWAIT, row(Method.AWAIT, 10_000, 2.5, 20));      // 400 k/s, 20 us per completion
        round.put(Method.POOL_64, row(Method.POOL_64, 64, 4, 48));        // 250 k/s, 48 us
        round.put(Method.POOL_CORES, row(Method.POOL_CORES, 16, 5, 16));  // 200 k/s, 16 us
        round.put(Method.CEILING_8, row(Method.CEILING_8, 8, 2, 8));      // 500 k/s
        round.put(Method.CEILING_16, row(Method.CEILING_16, 16, 2, 16));
        round.put(Method.POOL_BLOCKING, row(Method.POOL_BLOCKING, 64, 8, 5)); // 125 k/s, 5 us: slower and leaner

        Row a = round.get(Method.AWAIT);
        assertEquals(400_000, a.completionsPerSecond(), 1e-6);
        assertEquals(8.0, a.coresBusy(), 1e-9);
        assertEquals(20.0, a.cpuMicrosPerCompletion(), 1e-9);
        // the best pool is the faster spinning one (64 threads), and the CPU ratio compares with that same
        // pool; the blocking pool, slower, never is the best pool, and has ratios of its own
        assertEquals("0.80 x ceiling(8); 1.60 x best pool (64); CPU/completion 0.42 x; 3.20 x blocking pool (64);"
                + " CPU/completion 4.00 x blocking", ThroughputSweep.ratios(round));
        // 250,000 flag writes for 1,000,000 completions; 1,234 admission waits, 56.7 ms in all
        assertEquals("| `await()`: 10,000 virtual threads, launch + await | 1 | 2.50 | 400,000 | 8.00 | 20.0 us"
                + " | 900,000 / 700,000 / 100,000 / 0 / 4,000 | 0.250 (trackers 0.050) | 56.7 ms, 1,234 | 3.00 us | r |",
                ThroughputSweep.markdown(a, "r"));
        assertEquals("| pool: 16 platform threads (= cores), launch + `synchronize()` | 1 | 5.00 | 200,000 | 3.20 | 16.0 us"
                + " | - | - | - | - |  |", ThroughputSweep.markdown(round.get(Method.POOL_CORES), ""));
        assertEquals("| ceiling: 16 threads, 2 per stream, back to back, one `synchronize()` each | 1 | 2.00 | 500,000 | 8.00"
                + " | 16.0 us | - | - | - | - |  |", ThroughputSweep.markdown(round.get(Method.CEILING_16), ""));
        assertEquals("| pool: 64 platform threads, launch + `cuStreamSynchronize`, blocking-sync context (raw JCuda) | 1"
                + " | 8.00 | 125,000 | 0.63 | 5.0 us | - | - | - | - |  |",
                ThroughputSweep.markdown(round.get(Method.POOL_BLOCKING), ""));
        int columns = ThroughputSweep.tableHeader().lines().findFirst().orElseThrow().split("\\|", -1).length;
        assertEquals(columns, ThroughputSweep.markdown(a, "r").split("\\|", -1).length, "rows have the header's columns");

        // a blocking pool faster than both spinning ones still is not the "best pool"
        round.put(Method.POOL_BLOCKING, row(Method.POOL_BLOCKING, 64, 2, 5)); // 500 k/s
        assertEquals("0.80 x ceiling(8); 1.60 x best pool (64); CPU/completion 0.42 x; 0.80 x blocking pool (64);"
                + " CPU/completion 4.00 x blocking", ThroughputSweep.ratios(round));
        round.remove(Method.POOL_BLOCKING);
        round.remove(Method.POOL_64);
        assertEquals("0.80 x ceiling(8); 2.00 x best pool (16); CPU/completion 1.25 x", ThroughputSweep.ratios(round));
        round.remove(Method.CEILING_8);
        round.remove(Method.POOL_CORES);
        assertEquals("-", ThroughputSweep.ratios(round));
        round.put(Method.POOL_BLOCKING, row(Method.POOL_BLOCKING, 64, 8, 5));
        assertEquals("3.20 x blocking pool (64); CPU/completion 4.00 x blocking", ThroughputSweep.ratios(round),
                "the blocking pool alone");
        assertEquals("-", ThroughputSweep.ratios(new EnumMap<>(Method.class)));
    }

    /** The warm-up: 1/20 of the row, or 1 s of the streams' work if more, at most a quarter of the row. */
    @Test
    void theWarmUpKeepsTheStreamsBusyForASecondWithinAQuarterOfTheRow() {
        assertEquals(50_000, ThroughputSweep.warmUpLaunches(1_000_000, 1_000_000_000L), "1/20 of the row");
        assertEquals(40_000, ThroughputSweep.warmUpLaunches(320_000, 200_000L), "1 s of 8 streams of 200 us kernels");
        assertEquals(8_000, ThroughputSweep.warmUpLaunches(64_000, 1_000_000L), "1 s of 8 streams of 1 ms kernels");
        assertEquals(5_000, ThroughputSweep.warmUpLaunches(20_000, 200_000L), "a quarter of the row, not 1 s of work");
        assertEquals(1, ThroughputSweep.warmUpLaunches(1, 10_000L));
    }

    /** The JIT compilers' time over a row is shown beside its CPU per completion, where it was measured. */
    @Test
    void aRowSaysTheJitCompilersTimeOverIt() {
        Row r = row(Method.AWAIT, 10_000, 2.5, 20);
        assertTrue(ThroughputSweep.markdown(r.withJit(120), "-").contains("| 20.0 us (JIT 120 ms) |"), ThroughputSweep.markdown(r.withJit(120), "-"));
        assertTrue(ThroughputSweep.markdown(r, "-").contains("| 20.0 us |"), "not measured: nothing shown");
    }

    @Test
    void theBatchedRowSaysItsBatchesAndItsRatios() {
        Map<Method, Row> round = new EnumMap<>(Method.class);
        round.put(Method.AWAIT, row(Method.AWAIT, 10_000, 2.5, 20));     // 400 k/s, 20 us per completion
        round.put(Method.CEILING_8, row(Method.CEILING_8, 8, 2, 8));     // 500 k/s
        // 1,000,000 calls in 1.25 s (800 k/s) on 5 s of CPU (5 us each), in 2,000 batches
        Row b = new Row(Method.BATCHED, 10_000, 1, 1_000_000, 1_250_000_000L, 5_000_000_000L, null, 2_000, -1);
        round.put(Method.BATCHED, b);
        assertEquals(500.0, b.meanBatchSize(), 1e-9);
        assertEquals(0.0, row(Method.POOL_64, 64, 1, 1).meanBatchSize(), "no batches outside the batched row");
        assertEquals("1.60 x ceiling(8); 2.00 x await(); CPU/completion 0.25 x await()", ThroughputSweep.batchedRatios(round));
        assertEquals(ThroughputSweep.batchedRatios(round), ThroughputSweep.ratiosOf(Method.BATCHED, round));
        assertEquals(ThroughputSweep.ratios(round), ThroughputSweep.ratiosOf(Method.AWAIT, round));
        assertEquals("", ThroughputSweep.ratiosOf(Method.POOL_64, round));
        String md = ThroughputSweep.markdown(b, ThroughputSweep.batchedRatios(round));
        assertEquals("| batched: 10,000 virtual threads, `GpuBatcher.call`, one kernel per batch | 1 | 1.25 | 800,000 | 4.00"
                + " | 5.0 us | batches 2,000, mean batch 500.0 | - | - | - | 1.60 x ceiling(8); 2.00 x await();"
                + " CPU/completion 0.25 x await() |", md);
        int columns = ThroughputSweep.tableHeader().lines().findFirst().orElseThrow().split("\\|", -1).length;
        assertEquals(columns, md.split("\\|", -1).length, "the batched row has the header's columns");
        round.remove(Method.AWAIT);
        round.remove(Method.CEILING_8);
        assertEquals("-", ThroughputSweep.batchedRatios(round));
        assertEquals("-", ThroughputSweep.batchedRatios(new EnumMap<>(Method.class)));
    }

    @Test
    void theBatchedStepHandsEachCallItsOwnIntBack() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create();
                GpuBatcher<Integer, Integer> b = ThroughputSweep.batcher(d, 20_000)) {
            ThroughputSweep.callAll(b, 200, 1_000);
            GpuBatcher.Stats st = b.stats();
            assertEquals(1_000, st.calls());
            assertTrue(st.batches() >= 1 && st.batches() < 1_000, "calls shared batches: " + st);
        }
    }

    @Test
    void awaitCountsAreTheDifferenceOverTheRow() {
        ReactorStats before = stats(10, 5, 2, 1, 7, 3, 1_000, 20, 5_000, 4);
        ReactorStats after = stats(110, 85, 12, 1, 47, 8, 901_000, 70, 95_000, 10);
        assertEquals(new AwaitCounts(100, 80, 10, 0, 40, 5, 900_000, 50, 90_000, 6), AwaitCounts.between(before, after));
        ReactorStats unknown = stats(110, 85, 12, 1, 47, 8, 901_000, 70, -1, 10);
        assertEquals(-1, AwaitCounts.between(before, unknown).scannerCpuNanos(), "unknown where the JVM cannot tell");
    }

    private static ReactorStats stats(long registrations, long inline, long immediate, long fallbacks, long flagWrites,
            long admissionWaits, long admissionWaitNanos, long coalesced, long scannerCpuNanos, long trackers) {
        return ReactorStats.builder().trackers(trackers).capacity(4096).freeSlots(4096).registrations(registrations)
                .completions(registrations + coalesced + immediate + fallbacks).inlineCompletions(inline)
                .immediate(immediate).fallbacks(fallbacks).flagWrites(flagWrites).admissionWaits(admissionWaits)
                .admissionWaitNanos(admissionWaitNanos).coalesced(coalesced).scannerCpuNanos(scannerCpuNanos).build();
    }

    @Test
    void headingsSayTheLaunchesUsed() {
        Settings s = new Settings(10_000, 100, List.of(10, 1000), 2);
        assertEquals("### 10 us kernels: 1,000,000 launches per row (10,000 x 100)", ThroughputSweep.heading(s, 10));
        assertEquals("### 1000 us kernels: 64,000 launches per row (capped from 10,000 x 100 so that launches x kernel"
                + " / 8 streams <= 8 s; `await()`: 10,000 threads x 6-7)", ThroughputSweep.heading(s, 1000));
        assertEquals("### 1000 us kernels: 64,000 launches per row (capped from 100,000 x 1 so that launches x kernel"
                + " / 8 streams <= 8 s; `await()`: 64,000 threads x 1)",
                ThroughputSweep.heading(new Settings(100_000, 1, List.of(1000), 1), 1000));
        assertEquals("### 0 us (empty spin) kernels: 80 launches per row (8 x 10)",
                ThroughputSweep.heading(new Settings(8, 10, List.of(0), 1), 0));
    }

    @Test
    void servletParameters() {
        ServletBench.Settings d = GpuBench.servletSettings(new String[] {"servlet"}, 1);
        assertEquals(List.of(100, 10_000), d.concurrency());
        assertEquals(Duration.ofSeconds(10), d.timeLimit());
        assertEquals(1_000_000, d.requestsPerLevel());
        ServletBench.Settings s = GpuBench.servletSettings(new String[] {"servlet", "1,50", "seconds=3"}, 1);
        assertEquals(List.of(1, 50), s.concurrency());
        assertEquals(Duration.ofSeconds(3), s.timeLimit());
        assertThrows(IllegalArgumentException.class, () -> GpuBench.servletSettings(new String[] {"servlet", "20001"}, 1));
        assertThrows(IllegalArgumentException.class, () -> GpuBench.servletSettings(new String[] {"servlet", "100", "0"}, 1));
        assertTrue(!GpuBench.servletArgs(new String[] {"servlet"}, 1).simulated(), "CUDA by default");
        GpuBench.ServletArgs sim = GpuBench.servletArgs(new String[] {"servlet", "concurrency=10,200", "seconds=2",
            "requests=3000", "device=sim"}, 1);
        assertTrue(sim.simulated());
        assertEquals(3_000, sim.settings().requestsPerLevel());
        assertEquals(List.of(10, 200), sim.settings().concurrency());
        assertThrows(IllegalArgumentException.class, () -> GpuBench.servletArgs(new String[] {"servlet", "device=tpu"}, 1));
    }

    @Test
    void usageNamesEveryMode() {
        for (String mode : List.of("cpu", "throughput", "sweep", "servlet", "scale", "scale-shared", "diag")) {
            assertTrue(GpuBench.USAGE.contains("GpuBench " + mode + " ") || GpuBench.USAGE.contains("GpuBench " + mode + "\n"),
                    mode);
        }
    }
}
