package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.sim.SimulatedDevice;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * {@code GpuBench servlet} end to end on the simulated device (the CUDA run is BenchGpuTest's
 * servletInMiniature): every server, every level, every body checked, a markdown table; the
 * blocking-sync pool reported as not available here; the table against both pools.
 */
class ServletBenchTest {
    @Test
    void theRelayKnobIsOnUnlessSetFalseAndRefusesAnythingElse() {
        assertTrue(ServletBench.relayWakeups(), "on by default, as the library's");
        try {
            System.setProperty(ServletBench.RELAY_PROPERTY, "false");
            assertEquals(false, ServletBench.relayWakeups());
            System.setProperty(ServletBench.RELAY_PROPERTY, "off");
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, ServletBench::relayWakeups);
            assertEquals("servlet.relayWakeups must be true or false, was 'off'", bad.getMessage());
        } finally {
            System.clearProperty(ServletBench.RELAY_PROPERTY);
        }
    }


    @Test
    void everyServerAnswersEveryLevelAndTheTableHasARowEach() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        AtomicInteger opened = new AtomicInteger();
        ServletBench.Settings s = new ServletBench.Settings(List.of(1, 40), Duration.ofSeconds(5), 150, 50,
                Duration.ofSeconds(5), 4);
        boolean ok = ServletBench.run(config -> {
            opened.incrementAndGet();
            return SimulatedDevice.create(config);
        }, s, out, new PrintStream(PrintStream.nullOutputStream()));
        String text = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(ok, "the blocking-sync pool, not available here, fails nothing: " + text);
        assertEquals(5, opened.get(), "a fresh device per server (the blocking-sync pool's only to learn its kind)");
        List<String> rows = text.lines().filter(l -> l.startsWith("| Jetty")).toList();
        assertEquals(10, rows.size(), text);
        assertTrue(rows.get(0).startsWith("| Jetty VirtualThreadPool, no device work (the HTTP floor) | 1 |"), rows.get(0));
        assertTrue(rows.get(2).startsWith("| Jetty VirtualThreadPool, `await()` | 1 |"), rows.get(2));
        assertTrue(rows.get(3).startsWith("| Jetty VirtualThreadPool, `await()` | 40 |"), rows.get(3));
        assertTrue(rows.get(4).startsWith("| Jetty VirtualThreadPool, batched (`GpuBatcher.call`, up to 256 vectors per launch)"
                + " | 1 |"), rows.get(4));
        assertTrue(rows.get(5).startsWith("| Jetty VirtualThreadPool, batched (`GpuBatcher.call`, up to 256 vectors per launch)"
                + " | 40 |"), rows.get(5));
        assertTrue(rows.get(6).startsWith("| Jetty QueuedThreadPool (200 platform threads), blocking wait (simulated synchronize) | 1 |"),
                rows.get(6));
        // the blocking-sync pool: not available on the simulated device, a row per level all the same
        String blocking = "Jetty QueuedThreadPool (200 platform threads), `cuStreamSynchronize` on a"
                + " `CU_CTX_SCHED_BLOCKING_SYNC` context (raw JCuda)";
        assertEquals("| " + blocking + " | 1 | not available | - | - | - | - | - | - | - | - | - | - |", rows.get(8));
        assertEquals("| " + blocking + " | 40 | not available | - | - | - | - | - | - | - | - | - | - |", rows.get(9));
        int columns = ServletBench.tableHeader().lines().findFirst().orElseThrow().split("\\|", -1).length;
        for (String r : rows) {
            String[] cells = r.split("\\|", -1);
            assertEquals(columns, cells.length, r);
            if (r.startsWith("| " + blocking)) {
                continue;
            }
            assertEquals("HTTP/1.1 (raw sockets, keep-alive)", cells[3].strip(), "the raw client ran: " + r);
            assertEquals("0", cells[5].strip(), "no failed request: " + r);
            assertEquals("150", cells[4].strip(), "every request of the level answered: " + r);
        }
        String blockingNote = text.lines().filter(l -> l.startsWith("- " + blocking)).findFirst()
                .orElseThrow(() -> new AssertionError("no note for the blocking-sync pool:\n" + text));
        assertEquals("- " + blocking + ": not available: " + ServletBench.NOT_ON_SIMULATED, blockingNote);
        for (String server : List.of("blocking wait (simulated synchronize)", "no device work (the HTTP floor)")) {
            String note = text.lines().filter(l -> l.startsWith("- Jetty") && l.contains(server + ": ")).findFirst()
                    .orElseThrow(() -> new AssertionError("no note for " + server + ":\n" + text));
            assertTrue(note.contains("reactor over the levels (warm-ups included): 0 registrations, 0 inline, 0 already done,"
                    + " 0 fallbacks"), "this server never used the reactor: " + note);
        }
        String awaitNote = text.lines().filter(l -> l.startsWith("- Jetty VirtualThreadPool, `await()`: ")).findFirst()
                .orElseThrow();
        assertTrue(!awaitNote.contains(": 0 registrations, 0 inline, 0 already done,"), "the await() server used the reactor: "
                + awaitNote);
        String batchedNote = text.lines().filter(l -> l.startsWith("- Jetty VirtualThreadPool, batched")).findFirst()
                .orElseThrow(() -> new AssertionError("no note for the batched server:\n" + text));
        assertTrue(batchedNote.contains("factors 1 to 7") && batchedNote.matches(".*; [1-9][0-9,]* batches over the levels.*"),
                "the batched server launched batches for the load's factors: " + batchedNote);
        // against both pools: await() and batched at each level, the spinning pool's figures, none of the blocking one's
        assertTrue(text.contains("\n" + ServletBench.ratioHeader() + "\n"), text);
        List<String> ratios = text.lines().filter(l -> l.matches("\\| [0-9,]+ \\| (`await\\(\\)`|batched) \\|.*")).toList();
        assertEquals(4, ratios.size(), text);
        int ratioColumns = ServletBench.ratioHeader().lines().findFirst().orElseThrow().split("\\|", -1).length;
        for (String r : ratios) {
            String[] cells = r.split("\\|", -1);
            assertEquals(ratioColumns, cells.length, r);
            assertTrue(cells[3].strip().matches("[0-9]+\\.[0-9]{2} \\([0-9,]+ / [0-9,]+\\)"), "x spinning pool: " + r);
            assertEquals("n/a", cells[4].strip(), "no blocking-sync pool here: " + r);
            assertTrue(cells[5].strip().matches("[0-9.]+ / [0-9.]+ / n/a"), "p99: " + r);
            assertTrue(cells[6].strip().matches("[0-9.]+ / [0-9.]+ / n/a"), "CPU per request: " + r);
            assertTrue(cells[7].strip().matches("[0-9]+\\.[0-9]{2} \\([0-9,]+ / [0-9,]+\\)"), "per CPU-second: " + r);
            assertEquals("n/a", cells[8].strip(), r);
        }
        assertTrue(ratios.get(0).startsWith("| 1 | `await()` |") && ratios.get(1).startsWith("| 1 | batched |")
                && ratios.get(2).startsWith("| 40 | `await()` |") && ratios.get(3).startsWith("| 40 | batched |"), text);
        assertTrue(text.contains("result: every request answered correctly"), text);
    }

    @Test
    void theFlagWritesKnobIsTheLibrarysDefaultUnlessSetAndKeepsItsBounds() {
        assertEquals(io.cudaloom.ReactorConfig.defaults().flagWritesInFlight(), ServletBench.flagWritesInFlight());
        try {
            System.setProperty(ServletBench.WRITES_PROPERTY, "4");
            assertEquals(4, ServletBench.flagWritesInFlight());
            System.setProperty(ServletBench.WRITES_PROPERTY, "four");
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, ServletBench::flagWritesInFlight);
            assertEquals("servlet.flagWritesInFlight must be a whole number, was 'four'", bad.getMessage());
            System.setProperty(ServletBench.WRITES_PROPERTY, "0");
            bad = assertThrows(IllegalArgumentException.class, ServletBench::flagWritesInFlight);
            assertEquals("flagWritesInFlight must be between 1 and 64, was 0", bad.getMessage());
        } finally {
            System.clearProperty(ServletBench.WRITES_PROPERTY);
        }
    }

    @Test
    void theServersKnobChoosesServersInTheTablesOrderAndRefusesUnknownNames() {
        assertEquals(ServletBench.VARIANTS, ServletBench.servers(null), "all by default");
        assertEquals(ServletBench.VARIANTS, ServletBench.servers(" "), "all when blank");
        assertEquals(List.of(ServletBench.FLOOR, ServletBench.AWAIT), ServletBench.servers("await, floor"),
                "in the table's order, whatever the order named");
        assertEquals(List.of(ServletBench.BLOCKING_POOL), ServletBench.servers("blocking"));
        assertEquals(List.of(ServletBench.FLOOR, ServletBench.AWAIT, ServletBench.HELD_FLOOR),
                ServletBench.servers("held,await,floor"), "the held floor last: it takes its hold from the two before");
        assertEquals(List.of(ServletBench.AWAIT, ServletBench.MINIMAL), ServletBench.servers("minimal,await"));
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> ServletBench.servers("floor,pool"));
        assertEquals("servlet.servers takes names of [floor, await, batched, spinning, blocking, held, minimal], was 'pool'",
                bad.getMessage());
    }

    /**
     * The held floor: its hold is the await() server's p50 over the floor's at each level of the
     * run, each request is held that long (the level's p50 is at least the hold), and the GPU path
     * table sets the await() server's CPU per request over both floors'.
     */
    @Test
    void theHeldFloorHoldsEachRequestForTheAwaitServersP50OverTheFloorsAndTheGpuPathTableSetsBoth() throws Exception {
        String text = runOnSimulated("floor,await,held");
        List<String> rows = text.lines().filter(l -> l.startsWith("| Jetty")).toList();
        assertEquals(4, rows.size(), text);
        String label = "Jetty VirtualThreadPool, no device work, each request held (the HTTP floor at the `await()` server's rate)";
        assertTrue(rows.get(2).startsWith("| " + label + " (first hold) | 40 |"), rows.get(2));
        String held = rows.get(3);
        assertTrue(held.startsWith("| " + label + " | 40 |"), held);
        double awaitP50 = Double.parseDouble(rows.get(1).split("\\|")[7].strip());
        double floorP50 = Double.parseDouble(rows.get(0).split("\\|")[7].strip());
        double heldP50 = Double.parseDouble(held.split("\\|")[7].strip());
        double awaitRate = Double.parseDouble(rows.get(1).split("\\|")[6].strip().replace(",", ""));
        double firstRate = Double.parseDouble(rows.get(2).split("\\|")[6].strip().replace(",", ""));
        String note = text.lines().filter(l -> l.contains(", 40 concurrent: each request held ")).findFirst()
                .orElseThrow(() -> new AssertionError("no hold note:\n" + text));
        double hold = Double.parseDouble(note.replaceAll(".*each request held ([0-9.]+) ms.*", "$1"));
        double first = Double.parseDouble(note.replaceAll(".*the first hold ([0-9.]+) ms.*", "$1"));
        assertEquals(Math.max(0, awaitP50 - floorP50), first, 0.02, "the first hold is the await() p50 over the floor's: " + note);
        // the adjustment: the first hold plus the await() server's time per request over the first pass's (Little's law)
        assertEquals(Math.max(0, first + (40 / awaitRate - 40 / firstRate) * 1e3), hold, 0.05 + first * 0.01, note);
        assertTrue(heldP50 >= hold, "each request was held: p50 " + heldP50 + " ms, hold " + hold + " ms");
        assertTrue(text.contains("### The `await()` server's GPU path"), text);
        String path = text.lines().filter(l -> l.startsWith("| 40 | ") && l.split("\\|").length == 8).findFirst()
                .orElseThrow(() -> new AssertionError("no GPU path row:\n" + text));
        String[] cells = path.split("\\|");
        assertTrue(cells[2].strip().matches("[0-9.]+ / [0-9.]+ / [0-9.]+ / n/a"), path);
        assertTrue(cells[4].strip().matches("-?[0-9.]+") && cells[5].strip().matches("-?[0-9.]+"), path);
        assertEquals("n/a", cells[7].strip(), "no minimal server ran: " + path);
    }

    /**
     * The minimal server (MinimalReactor, on its stand-in here) answers every request correctly, and
     * the GPU path table sets the await() server's CPU per request over its.
     */
    @Test
    void theMinimalServerAnswersEveryRequestAndTheGpuPathTableSetsAwaitOverIt() throws Exception {
        Assumptions.assumeTrue(classExists("io.cudaloom.bench.MinimalReactor"), () -> {
            String reason = "skipped: MinimalReactor is not compiled (the module was built with a JDK below 22)";
            System.out.println("ServletBenchTest " + reason);
            return reason;
        });
        String text = runOnSimulated("floor,await,minimal");
        List<String> rows = text.lines().filter(l -> l.startsWith("| Jetty")).toList();
        assertEquals(3, rows.size(), text);
        assertTrue(rows.get(2).startsWith("| Jetty VirtualThreadPool, the step waited for by MinimalReactor (no project code),"
                + " on its in-process stand-in | 40 | "), rows.get(2));
        assertTrue(rows.get(2).split("\\|")[5].strip().equals("0"), "no request failed: " + rows.get(2));
        String path = text.lines().filter(l -> l.startsWith("| 40 | ") && l.split("\\|").length == 8).findFirst()
                .orElseThrow(() -> new AssertionError("no GPU path row:\n" + text));
        String[] cells = path.split("\\|");
        assertTrue(cells[2].strip().matches("[0-9.]+ / [0-9.]+ / n/a / [0-9.]+"), path);
        assertTrue(cells[6].strip().matches("-?[0-9.]+") && cells[7].strip().matches("-?[0-9.]+"), path);
        assertTrue(text.contains("MinimalReactor (combining per stream, one flag write per drain, one scanner; no project code)"),
                "the note names the workload:\n" + text);
    }

    /** The servers {@code servers} names at 40 concurrent on the simulated device: the output; every request answered. */
    private static String runOnSimulated(String servers) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        ServletBench.Settings s = new ServletBench.Settings(List.of(40), Duration.ofSeconds(5), 150, 50,
                Duration.ofSeconds(5), 4);
        boolean ok;
        System.setProperty(ServletBench.SERVERS_PROPERTY, servers);
        try {
            ok = ServletBench.run(SimulatedDevice::create, s, out, new PrintStream(PrintStream.nullOutputStream()));
        } finally {
            System.clearProperty(ServletBench.SERVERS_PROPERTY);
        }
        String text = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(ok, text);
        return text;
    }

    private static boolean classExists(String name) {
        try {
            Class.forName(name, false, ServletBenchTest.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    @Test
    void theHoldKnobIsWholeMillisecondsAndWithoutItOrTheTwoP50sTheDefault() {
        assertEquals(ServletBench.DEFAULT_HOLD, ServletBench.holdFor(java.util.Map.of(), 0));
        try {
            System.setProperty(ServletBench.HOLD_PROPERTY, "12");
            assertEquals(Duration.ofMillis(12), ServletBench.holdFor(java.util.Map.of(), 0));
            System.setProperty(ServletBench.HOLD_PROPERTY, "1.5");
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                    () -> ServletBench.holdFor(java.util.Map.of(), 0));
            assertEquals("servlet.holdMillis must be a whole number of milliseconds, was '1.5'", bad.getMessage());
            System.setProperty(ServletBench.HOLD_PROPERTY, "-1");
            bad = assertThrows(IllegalArgumentException.class, () -> ServletBench.holdFor(java.util.Map.of(), 0));
            assertEquals("servlet.holdMillis must be >= 0, was -1", bad.getMessage());
        } finally {
            System.clearProperty(ServletBench.HOLD_PROPERTY);
        }
    }

    @Test
    void theServersInOrderTheBlockingSyncPoolLast() {
        assertEquals(List.of(ServletBench.FLOOR, ServletBench.AWAIT, ServletBench.BATCHED, ServletBench.SPINNING_POOL,
                ServletBench.BLOCKING_POOL), ServletBench.VARIANTS);
        ServletBench.Variant b = ServletBench.BLOCKING_POOL;
        assertTrue(b.blockingSync() && !b.batched() && b.threads() == DemoServer.RequestThreads.PLATFORM_200, b.toString());
        assertEquals(b.label(false), b.label(true), "one label: it runs on a GPU only");
        assertTrue(!ServletBench.SPINNING_POOL.blockingSync(), ServletBench.SPINNING_POOL.toString());
        ServletBench.Settings s = new ServletBench.Settings(List.of(1), Duration.ofSeconds(1), 1, 1, Duration.ofSeconds(1), 8);
        try (var device = SimulatedDevice.create()) {
            assertThrows(IllegalStateException.class, () -> b.workload(device, s), "no workload on a GpuDevice");
        }
    }

    @Test
    void theRatioTableSetsAwaitAndBatchedAgainstBothPools() {
        // per level: requests in 1 s of the child's clock, p99, server CPU
        java.util.function.BiFunction<Integer, long[], LoadGeneratorProcess.Outcome> outcome = (c, f) ->
                new LoadGeneratorProcess.Outcome(new LoadGenerator.Level(c, "HTTP/1.1", (int) f[0], (int) f[0], 0,
                        1_000_000_000L, 1_000_000, 2_000_000, f[1], 40, 1_000_000_000L, false, null), 100, 0, null, f[2],
                        1_000_000_000L, 20, null, 1);
        java.util.Map<ServletBench.Variant, List<LoadGeneratorProcess.Outcome>> results = new java.util.LinkedHashMap<>();
        results.put(ServletBench.AWAIT, List.of(outcome.apply(100, new long[] {12_000, 3_000_000, 1_000_000_000L})));
        results.put(ServletBench.BATCHED, List.of(outcome.apply(100, new long[] {15_000, 2_000_000, 500_000_000L})));
        results.put(ServletBench.SPINNING_POOL, List.of(outcome.apply(100, new long[] {10_000, 4_000_000, 2_000_000_000L})));
        results.put(ServletBench.BLOCKING_POOL, List.of(outcome.apply(100, new long[] {8_000, 5_000_000, 800_000_000L})));
        List<String> lines = ServletBench.ratioTable(List.of(100), results);
        assertTrue(lines.get(0).startsWith("### Against the pools"), lines.get(0));
        assertEquals(ServletBench.ratioHeader(), lines.get(2));
        assertEquals("| 100 | `await()` | 1.20 (12,000 / 10,000) | 1.50 (12,000 / 8,000) | 3.00 / 4.00 / 5.00"
                + " | 83.3 / 200.0 / 100.0 | 2.40 (12,000 / 5,000) | 1.20 (12,000 / 10,000) |", lines.get(3));
        assertEquals("| 100 | batched | 1.50 (15,000 / 10,000) | 1.88 (15,000 / 8,000) | 2.00 / 4.00 / 5.00"
                + " | 33.3 / 200.0 / 100.0 | 6.00 (30,000 / 5,000) | 3.00 (30,000 / 10,000) |", lines.get(4));
        assertEquals(5, lines.size());

        // a pool not available (null) or failed: its figures n/a, the rest as before
        LoadGeneratorProcess.Outcome failed = new LoadGeneratorProcess.Outcome(null, 0, 0, null, -1, 0, 0, "killed", 1);
        results.put(ServletBench.SPINNING_POOL, java.util.Collections.singletonList(failed));
        results.put(ServletBench.BLOCKING_POOL, java.util.Collections.singletonList(null));
        assertEquals("| 100 | `await()` | n/a | n/a | 3.00 / n/a / n/a | 83.3 / n/a / n/a | n/a | n/a |",
                ServletBench.ratioTable(List.of(100), results).get(3));
    }

    @Test
    void theBatchedServerHasABatcherPerFactorOfTheLoad() throws Exception {
        ServletBench.Variant v = ServletBench.VARIANTS.get(2);
        assertTrue(v.batched() && v.threads() == DemoServer.RequestThreads.VIRTUAL, v.toString());
        assertEquals(1, ServletBench.Variant.streamsPerFactor(3));
        assertEquals(2, ServletBench.Variant.streamsPerFactor(8));
        ServletBench.Settings s = new ServletBench.Settings(List.of(1), Duration.ofSeconds(1), 1, 1, Duration.ofSeconds(1), 8);
        try (var device = SimulatedDevice.create(); DemoWorkload w = v.workload(device, s)) {
            for (int factor = 1; factor <= LoadGenerator.MAX_FACTOR; factor++) {
                float[] data = new float[DemoWorkload.VECTOR_LENGTH];
                java.util.Arrays.fill(data, 1.5f);
                w.scale(data, factor);
                assertEquals(1.5f * factor, data[DemoWorkload.VECTOR_LENGTH - 1], "factor " + factor);
            }
            assertThrows(IllegalArgumentException.class, () -> w.scale(new float[DemoWorkload.VECTOR_LENGTH], 8));
        }
    }

    @Test
    void aFailedLoadGeneratorIsAnErrorRowWithTheHeadersColumns() {
        LoadGeneratorProcess.Outcome failed = new LoadGeneratorProcess.Outcome(null, 0, 0, null, -1, 0, 0,
                "the load generator's JVM (pid 1) did not finish within 70 s: killed", 1);
        String row = ServletBench.markdown("Jetty VirtualThreadPool, `await()`", 10_000, failed);
        assertEquals("| Jetty VirtualThreadPool, `await()` | 10,000 | error | - | - | - | - | - | - | - | - | - | - |", row);
        int columns = ServletBench.tableHeader().lines().findFirst().orElseThrow().split("\\|", -1).length;
        assertEquals(columns, row.split("\\|", -1).length);

        LoadGenerator.Level l = new LoadGenerator.Level(100, "HTTP/1.1", 20_000, 20_000, 0, 2_000_000_000L, 1_000_000,
                2_000_000, 3_000_000, 40, 1_500_000_000L, false, null);
        // 2.5 s of server CPU over a 2.1 s window (the parent's), for 20,000 answers
        LoadGeneratorProcess.Outcome ok = new LoadGeneratorProcess.Outcome(l, 5_000, 0, null, 2_500_000_000L,
                2_100_000_000L, 57, null, 1);
        assertEquals("| s | 100 | HTTP/1.1 | 20,000 | 0 | 10,000 | 1.00 | 3.00 | 2.50 | 1.19 | 8,000 | 57 | 1.50 |",
                ServletBench.markdown("s", 100, ok));
    }

    @Test
    void settingsAreBounded() {
        assertThrows(IllegalArgumentException.class, () -> ServletBench.Settings.of(List.of(), Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class, () -> ServletBench.Settings.of(List.of(0), Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class,
                () -> ServletBench.Settings.of(List.of(DemoServer.MAX_CONCURRENT + 1), Duration.ofSeconds(1)));
        assertEquals(DemoMain.WARM_UP_REQUESTS, ServletBench.Settings.of(List.of(1), Duration.ofSeconds(1)).warmUpRequests());
    }
}
