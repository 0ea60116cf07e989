package io.cudaloom.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.bench.DriverContention.Op;
import io.cudaloom.bench.DriverContention.Result;
import io.cudaloom.bench.DriverContention.Settings;
import java.util.List;
import org.junit.jupiter.api.Test;

/** DriverContention's pure helpers (the measurements need a GPU: scripts/gpu-floor.sh). */
class DriverContentionTest {

    @Test
    void argumentsByPositionAndByName() {
        assertEquals(new Settings(50_000, List.of(Op.values())), Settings.parse(new String[0]));
        assertEquals(new Settings(20_000, List.of(Op.values())), Settings.parse(new String[] {"20000"}),
                "the count by position, as scripts/gpu-run.sh passes it");
        assertEquals(new Settings(1_000, List.of(Op.DEMO_STEP, Op.SWEEP_STEP)),
                Settings.parse(new String[] {"1_000", "ops=demo-step,SWEEP_STEP"}));
        assertEquals(new Settings(50_000, List.of(Op.EMPTY_KERNEL)), Settings.parse(new String[] {"op=empty_kernel"}));
        assertEquals(new Settings(7, List.of(Op.values())), Settings.parse(new String[] {"steps=7", "ops=ALL"}));
        assertEquals("unknown operation 'demo' (known: EMPTY_KERNEL, SPIN_10US, COPY_1KIB, DEMO_STEP, SWEEP_STEP)",
                assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"ops=demo"})).getMessage());
        assertEquals("ops lists DEMO_STEP twice", assertThrows(IllegalArgumentException.class,
                () -> Settings.parse(new String[] {"ops=DEMO_STEP,demo-step"})).getMessage());
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"ops=DEMO_STEP,"}));
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"0"}));
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"1", "EMPTY_KERNEL", "x"}));
    }

    @Test
    void theMixesRunAtUpToEightThreadsWithTheContextSetPerStep() {
        for (Op op : List.of(Op.EMPTY_KERNEL, Op.SPIN_10US, Op.COPY_1KIB)) {
            assertEquals(List.of(1, 2, 4, 8, 16), op.threadCounts(), op.name());
            assertEquals(1, op.callsPerStep(), op.name());
            assertEquals("1", op.callsText());
        }
        assertEquals(List.of(1, 2, 4, 8), Op.DEMO_STEP.threadCounts());
        assertEquals(List.of(1, 2, 4, 8), Op.SWEEP_STEP.threadCounts());
        assertEquals(5, Op.DEMO_STEP.callsPerStep(), "H2D, launch, D2H, flag write, cuCtxSetCurrent");
        assertEquals("4 + cuCtxSetCurrent", Op.DEMO_STEP.callsText());
        assertEquals(3, Op.SWEEP_STEP.callsPerStep(), "launch, flag write, cuCtxSetCurrent");
        assertEquals(256, DriverContention.SCALE_FLOATS, "1 KiB of floats, one block");
        assertEquals(8, DriverContention.streamsFor(16));
        assertEquals(4, DriverContention.streamsFor(4));
        assertEquals(DriverContention.BATCH, DriverContention.warmUpSteps(100), "at least one batch");
        assertEquals(12_500, DriverContention.warmUpSteps(50_000));
    }

    @Test
    void rowsPerStepAndPerCall() {
        // 4 threads x 50,000 steps in 2 s of wall, 1.5 s of submitting CPU
        Result r = new Result(Op.DEMO_STEP, 4, 4, 200_000, 1_500_000_000L, 2_000_000_000L);
        assertEquals(100_000, r.stepsPerSecond(), 1e-6);
        assertEquals(7.5, r.cpuMicrosPerStep(), 1e-9);
        assertEquals(1.5, r.cpuMicrosPerCall(), 1e-9);
        assertEquals(0.75, r.coresBusy(), 1e-9);
        assertEquals("| 4 | 4 | 100,000 | 7.50 us | 1.50 us | 0.75 | 2.00 |", DriverContention.markdown(r));
        Result none = new Result(Op.EMPTY_KERNEL, 1, 1, 0, 0, 0);
        assertEquals("| 1 | 1 | 0 | 0.00 us | 0.00 us | 0.00 | 0.00 |", DriverContention.markdown(none), "no division by zero");

        String head = DriverContention.tableHead(Op.SWEEP_STEP);
        assertTrue(head.startsWith("### SWEEP_STEP: the sweep's step: spin_kernel(0)"), head);
        assertTrue(head.contains("Driver calls per step: 2 + cuCtxSetCurrent."), head);
        List<String> lines = head.lines().toList();
        int columns = lines.get(lines.size() - 2).split("\\|", -1).length;
        assertEquals(columns, lines.get(lines.size() - 1).split("\\|", -1).length);
        assertEquals(columns, DriverContention.markdown(r).split("\\|", -1).length, "rows have the header's columns");
    }
}
