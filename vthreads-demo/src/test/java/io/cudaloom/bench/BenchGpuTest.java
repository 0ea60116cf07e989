package io.cudaloom.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.demo.ServletBench;
import io.cudaloom.junit.GpuTest;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@code GpuBench sweep} and {@code GpuBench servlet} in miniature on a real GPU (a few seconds
 * each), so that {@code bash .gpu/junit} checks every code path before the full runs: the seven
 * sweep rows (await, batched, both pools in {@code synchronize()}, the blocking-sync pool on its own context,
 * both ceilings) and every server (the batched one included), the
 * platform one waiting in {@code CudaStream.synchronize()} and the blocking-sync pool (raw JCuda on a
 * {@code CU_CTX_SCHED_BLOCKING_SYNC} context), each level loaded from a child JVM. The
 * benchmarks open their own devices;
 * {@link GpuTest} skips the class, with a printed reason, where there is no CUDA device.
 */
@Tag("gpu")
@GpuTest
class BenchGpuTest {
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);

    private String output() {
        String text = bytes.toString(StandardCharsets.UTF_8);
        System.out.println(text);
        return text;
    }

    @Test
    void sweepInMiniature() throws Exception {
        ThroughputSweep.run(new ThroughputSweep.Settings(256, 5, List.of(10), 2), out, System.err);
        String text = output();
        List<String> rows = text.lines().filter(l -> l.startsWith("| `await()`") || l.startsWith("| pool")
                || l.startsWith("| ceiling") || l.startsWith("| batched")).toList();
        assertEquals(2 * ThroughputSweep.Method.values().length, rows.size(), text); // 2 rounds
        for (String r : rows) {
            String[] cells = r.split("\\|", -1);
            double perSecond = Double.parseDouble(cells[4].strip().replace(",", ""));
            assertTrue(perSecond > 0, r);
            if (r.startsWith("| `await()`")) {
                // | method | round | wall | /s | cores | CPU | counts | flag writes | admission | scanner CPU | ratios |
                assertEquals(13, cells.length, "the header's columns: " + r);
                assertTrue(cells[11].contains("x ceiling(8)") && cells[11].contains("x best pool")
                        && cells[11].contains("x blocking pool (64)"), r);
                assertEquals("0", cells[7].split("/")[3].strip(), "no fallback: " + r);
                double flagWrites = Double.parseDouble(cells[8].strip().split(" ")[0]);
                assertTrue(flagWrites >= 0 && flagWrites <= 1.0, "at most one flag write per completion: " + r);
                assertTrue(cells[8].contains("(trackers "), r);
                assertTrue(cells[9].strip().matches("[0-9,]+\\.[0-9] ms, [0-9,]+"), "admission wait: " + r);
                assertTrue(cells[10].strip().matches("[0-9]+\\.[0-9]+ us"), "scanner CPU per completion: " + r);
            } else if (r.startsWith("| batched")) {
                assertEquals(13, cells.length, "the header's columns: " + r);
                assertTrue(cells[7].strip().matches("batches [1-9][0-9,]*, mean batch [0-9]+\\.[0-9]"), "batches: " + r);
                assertTrue(cells[11].contains("x ceiling(8)") && cells[11].contains("x await()"), r);
            } else {
                assertEquals("-", cells[8].strip(), r);
                assertEquals("-", cells[9].strip(), r);
                assertEquals("-", cells[10].strip(), r);
            }
        }
        assertTrue(text.contains("### 10 us kernels: 1,280 launches per row (256 x 5)"), text);
        assertEquals(2, rows.stream().filter(r -> r.contains("blocking-sync context")).count(), text); // 2 rounds
    }

    @Test
    void servletInMiniature() throws Exception {
        ServletBench.Settings s = new ServletBench.Settings(List.of(1, 64), Duration.ofSeconds(2), 2_000, 500,
                Duration.ofSeconds(5), 8);
        boolean ok = ServletBench.run(config -> CudaDevice.open(0, config), s, out, System.err);
        String text = output();
        assertTrue(ok, text);
        assertEquals(10, text.lines().filter(l -> l.startsWith("| Jetty")).count(), text);
        assertTrue(text.contains("vectors per launch) | 64 |"), "the batched server: " + text);
        assertTrue(text.contains("no device work (the HTTP floor) | 64 |"), text);
        assertTrue(text.contains("`synchronize()` (cuStreamSynchronize) | 64 |"), text);
        assertTrue(text.contains("`cuStreamSynchronize` on a `CU_CTX_SCHED_BLOCKING_SYNC` context (raw JCuda) | 64 | HTTP/1.1"),
                "the blocking-sync pool ran: " + text);
        assertTrue(text.contains("waits in cuStreamSynchronize; reactor over the levels (warm-ups included): 0 registrations"),
                text);
        assertTrue(text.contains("waits in cuStreamSynchronize on a context of its own created with CU_CTX_SCHED_BLOCKING_SYNC"
                + " (raw JCuda; no reactor); over the levels (warm-ups included): "), text);
        // await() and batched against both pools: every figure there
        List<String> ratios = text.lines().filter(l -> l.matches("\\| [0-9,]+ \\| (`await\\(\\)`|batched) \\|.*")).toList();
        assertEquals(4, ratios.size(), text);
        for (String r : ratios) {
            assertTrue(!r.contains("n/a"), "both pools measured: " + r);
        }
        // the server's own CPU, and the load generator's apart, on every row
        for (String r : text.lines().filter(l -> l.startsWith("| Jetty")).toList()) {
            String[] cells = r.split("\\|", -1);
            assertTrue(Double.parseDouble(cells[9].strip()) > 0, "server CPU s: " + r);
            assertTrue(Double.parseDouble(cells[13].strip()) > 0, "load generator CPU s: " + r);
        }
    }
}
