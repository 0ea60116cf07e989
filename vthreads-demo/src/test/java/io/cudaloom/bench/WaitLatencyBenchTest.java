package io.cudaloom.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.bench.WaitLatencyBench.Measured;
import io.cudaloom.bench.WaitLatencyBench.Settings;
import java.util.List;
import org.junit.jupiter.api.Test;

/** WaitLatencyBench's arguments and tables (the measurements need a GPU). */
class WaitLatencyBenchTest {

    @Test
    void theOldPositionalFormStillWorks() {
        Settings s = Settings.parse(new String[] {"2000", "2000", "latency.csv"});
        assertEquals(2000, s.iterations());
        assertEquals(2000, s.warmup());
        assertEquals("latency.csv", s.csv());
        assertEquals(WaitLatencyBench.METHODS, s.methods(), "every method by default");
        assertEquals(List.of(0, 20, 200), s.kernelsUs());
        assertNull(Settings.parse(new String[0]).csv());
        assertEquals(3000, Settings.parse(new String[0]).iterations());
    }

    @Test
    void methodsAndKernelsCanBeChosen() {
        Settings s = Settings.parse(new String[] {"iterations=500", "methods=await,sync", "kernelsUs=0,200"});
        assertEquals(List.of("await", "sync"), s.methods().stream().map(WaitLatencyBench.Method::key).toList());
        assertEquals(List.of(0, 200), s.kernelsUs());
        assertEquals(500, s.iterations());
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"methods=await,bogus"}));
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"methods=sync,sync"}));
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"iterations=10"}));
        assertEquals(2000, s.warmup(), "a fixed warm-up by default");
        assertEquals(WaitLatencyBench.AUTO_WARMUP, Settings.parse(new String[] {"warmup=auto"}).warmup());
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"warmup=-3"}));
        assertEquals(WaitLatencyBench.METHODS.size(),
                WaitLatencyBench.METHODS.stream().map(WaitLatencyBench.Method::key).distinct().count(), "unique keys");
    }

    @Test
    void cpuPerWaitSideBySide() {
        Measured await = new Measured(10.2, 12.0, 24.3, 15.0, 12);
        Measured sync = new Measured(9.8, 11.6, 22.8, 10.0, -1);
        String row = WaitLatencyBench.comparison(0, "A", await, sync);
        assertEquals("| empty | A | 10.2 / 24.3 us | 9.8 / 22.8 us | 15.0 us | 10.0 us | 1.50 x |", row);
        int columns = WaitLatencyBench.COMPARISON_HEADER.lines().findFirst().orElseThrow().split("\\|", -1).length;
        assertEquals(columns, row.split("\\|", -1).length);
        assertTrue(WaitLatencyBench.comparison(200_000, "B", await, sync).startsWith("| 200 us | B |"));
        assertEquals("| 20 us | cuStreamSynchronize, platform thread | B | 9.8 | 11.6 | 22.8 | 10.0 us |",
                WaitLatencyBench.row(20_000, WaitLatencyBench.METHODS.stream().filter(m -> m.key().equals("sync")).findFirst().orElseThrow(), "B", sync));
        String withJit = WaitLatencyBench.row(0, WaitLatencyBench.METHODS.stream().filter(m -> m.key().equals("await")).findFirst().orElseThrow(), "A", await);
        assertTrue(withJit.endsWith("| 15.0 us (JIT 12 ms) |"), withJit);
        assertEquals(columns, withJit.split("\\|", -1).length, "the JIT's time shares the CPU column: " + withJit);
        String auto = WaitLatencyBench.row(0, WaitLatencyBench.METHODS.stream().filter(m -> m.key().equals("await")).findFirst()
                .orElseThrow(), "A", new Measured(10.2, 12.0, 24.3, 15.0, 0, 14_000));
        assertTrue(auto.endsWith("| 15.0 us (JIT 0 ms, warm-up 14,000) |"), "an automatic warm-up's waits: " + auto);
    }
}
