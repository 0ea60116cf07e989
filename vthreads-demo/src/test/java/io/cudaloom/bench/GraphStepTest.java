package io.cudaloom.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.cudaloom.bench.GraphStep.Mode;
import io.cudaloom.bench.GraphStep.Result;
import io.cudaloom.bench.GraphStep.Settings;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** GraphStep's pure parts (the measurement needs a GPU: gpu-check.sh GRAPH=1). */
class GraphStepTest {

    @Test
    void settingsDefaultsAndBothForms() {
        assertEquals(new Settings(50_000, List.of(1, 8)), Settings.parse(new String[0]));
        assertEquals(new Settings(1_000, List.of(2)), Settings.parse(new String[] {"1000", "2"}));
        assertEquals(new Settings(50_000, List.of(1, 4, 8)), Settings.parse(new String[] {"threads=1,4,8"}));
        assertEquals(new Settings(10, List.of(1, 8)), Settings.parse(new String[] {"steps=10"}));
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"threads=0"}));
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"threads=65"}));
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"perThread=0"}));
        assertEquals(128, GraphStep.warmUpSteps(10));
        assertEquals(12_500, GraphStep.warmUpSteps(50_000));
    }

    @Test
    void rowsRatiosAndTheSummary() {
        // 400,000 steps in 2 s (200 k/s), 4 s of submitting CPU (10 us a step)
        Result ops = new Result(Mode.OPS, 8, 400_000, 4_000_000_000L, 2_000_000_000L);
        // the same steps in 1 s on 1 s of CPU (2.5 us a step)
        Result graph = new Result(Mode.GRAPH, 8, 400_000, 1_000_000_000L, 1_000_000_000L);
        Result both = new Result(Mode.GRAPH_AND_FLAG, 8, 400_000, 2_000_000_000L, 1_600_000_000L);
        assertEquals("| OPS | 8 | 4 + cuCtxSetCurrent | 200,000 | 10.00 us | 2.00 | 2.00 | - | - |",
                GraphStep.markdown(ops, null));
        assertEquals("| GRAPH | 8 | 1 + cuCtxSetCurrent | 400,000 | 2.50 us | 1.00 | 1.00 | 0.25 | 2.00 |",
                GraphStep.markdown(graph, ops));
        assertEquals("| GRAPH_AND_FLAG | 8 | 2 + cuCtxSetCurrent | 250,000 | 5.00 us | 1.25 | 1.60 | 0.50 | 1.25 |",
                GraphStep.markdown(both, ops));
        int columns = GraphStep.tableHeader().lines().findFirst().orElseThrow().split("\\|", -1).length;
        assertEquals(columns, GraphStep.markdown(graph, ops).split("\\|", -1).length);

        Map<Mode, Result> rows = new EnumMap<>(Mode.class);
        assertEquals("-", GraphStep.ratioLine(rows));
        rows.put(Mode.OPS, ops);
        rows.put(Mode.GRAPH, graph);
        assertEquals("8 threads: graph / op by op: CPU per step 0.25 x, steps/s 2.00 x", GraphStep.ratioLine(rows));
        rows.put(Mode.GRAPH_AND_FLAG, both);
        assertEquals("8 threads: graph / op by op: CPU per step 0.25 x, steps/s 2.00 x; graph + flag write / op by op:"
                + " CPU per step 0.50 x, steps/s 1.25 x", GraphStep.ratioLine(rows));
    }
}
