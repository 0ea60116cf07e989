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
import org.junit.jupiter.api.Test;

/**
 * {@code GpuBench servlet} end to end on the simulated device (the CUDA run is ServletBenchGpuTest):
 * both servers, every level, every body checked, a markdown table.
 */
class ServletBenchTest {

    @Test
    void bothServersAnswerEveryLevelAndTheTableHasARowEach() throws Exception {
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
        assertTrue(ok, text);
        assertEquals(4, opened.get(), "a fresh device per server");
        List<String> rows = text.lines().filter(l -> l.startsWith("| Jetty")).toList();
        assertEquals(8, rows.size(), text);
        assertTrue(rows.get(0).startsWith("| Jetty VirtualThreadPool, no device work (the HTTP floor) | 1 |"), rows.get(0));
        assertTrue(rows.get(2).startsWith("| Jetty VirtualThreadPool, `await()` | 1 |"), rows.get(2));
        assertTrue(rows.get(3).startsWith("| Jetty VirtualThreadPool, `await()` | 40 |"), rows.get(3));
        assertTrue(rows.get(4).startsWith("| Jetty VirtualThreadPool, batched (`GpuBatcher.call`, up to 256 vectors per launch)"
                + " | 1 |"), rows.get(4));
        assertTrue(rows.get(5).startsWith("| Jetty VirtualThreadPool, batched (`GpuBatcher.call`, up to 256 vectors per launch)"
                + " | 40 |"), rows.get(5));
        assertTrue(rows.get(6).startsWith("| Jetty QueuedThreadPool (200 platform threads), blocking wait (simulated synchronize) | 1 |"),
                rows.get(6));
        int columns = ServletBench.tableHeader().lines().findFirst().orElseThrow().split("\\|", -1).length;
        for (String r : rows) {
            String[] cells = r.split("\\|", -1);
            assertEquals(columns, cells.length, r);
            assertEquals("HTTP/1.1 (raw sockets, keep-alive)", cells[3].strip(), "the raw client ran: " + r);
            assertEquals("0", cells[5].strip(), "no failed request: " + r);
            assertEquals("150", cells[4].strip(), "every request of the level answered: " + r);
        }
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
        assertTrue(text.contains("result: every request answered correctly"), text);
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
