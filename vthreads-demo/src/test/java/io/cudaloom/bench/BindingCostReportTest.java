package io.cudaloom.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.bench.BindingCostReport.Path;
import io.cudaloom.bench.BindingCostReport.Sample;
import io.cudaloom.bench.BindingCostReport.Settings;
import io.cudaloom.bench.BindingCostReport.Summary;
import io.cudaloom.bench.BindingCostReport.Variant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** BindingCost's pure part (the measurement itself, Java 22 and a GPU: scripts/gpu-floor.sh). */
class BindingCostReportTest {

    @Test
    void arguments() {
        assertEquals(new Settings(50_000, 5, 20_000), Settings.parse(new String[0]));
        assertEquals(new Settings(1_000, 3, 20_000), Settings.parse(new String[] {"1_000", "3"}));
        assertEquals(new Settings(50_000, 1, 0), Settings.parse(new String[] {"rounds=1", "warmup=0"}));
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"0"}));
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"launches=10", "rounds=0"}));
        assertThrows(IllegalArgumentException.class, () -> Settings.parse(new String[] {"1", "2", "3", "4"}));
    }

    @Test
    void variantsByKernelThenPathReversedInEvenRounds() {
        List<String> labels = BindingCostReport.variants().stream().map(Variant::label).toList();
        assertEquals(List.of("jcuda-0arg", "jcuda-prebuilt-0arg", "ffm-0arg", "ffm-critical-0arg",
                "jcuda-1arg", "jcuda-prebuilt-1arg", "ffm-1arg", "ffm-critical-1arg",
                "jcuda-3arg", "jcuda-prebuilt-3arg", "ffm-3arg", "ffm-critical-3arg"), labels);
        assertEquals(BindingCostReport.variants(), BindingCostReport.order(1));
        List<Variant> reversed = new ArrayList<>(BindingCostReport.variants());
        java.util.Collections.reverse(reversed);
        assertEquals(reversed, BindingCostReport.order(2));
        assertEquals(BindingCostReport.order(1), BindingCostReport.order(3));
    }

    @Test
    void medians() {
        assertEquals(0, BindingCostReport.median(new double[0]));
        assertEquals(3, BindingCostReport.median(new double[] {5, 3, 1}));
        assertEquals(2.5, BindingCostReport.median(new double[] {4, 1, 3, 2}));
        double[] v = {2, 1};
        BindingCostReport.median(v);
        assertEquals(2, v[0], "the input is left as it was");
    }

    private static Sample sample(Path p, int args, int round, double cpuMicrosPerLaunch) {
        return new Sample(new Variant(p, args), round, 10_000, (long) (cpuMicrosPerLaunch * 10_000 * 1e3), 50_000_000L);
    }

    @Test
    void summariesAndRatios() {
        List<Sample> samples = new ArrayList<>();
        double[][] rounds = {{4.0, 3.0, 2.0, 1.0}, {5.0, 3.5, 2.5, 1.5}, {4.5, 3.2, 2.4, 1.2}}; // jcuda, prebuilt, ffm, critical
        for (int r = 0; r < rounds.length; r++) {
            for (Path p : Path.values()) {
                samples.add(sample(p, 1, r + 1, rounds[r][p.ordinal()]));
            }
        }
        samples.add(sample(Path.JCUDA, 3, 1, 6.0)); // 3 arguments: only two paths measured
        samples.add(sample(Path.FFM, 3, 1, 4.0));
        List<Summary> sums = BindingCostReport.summarize(samples);
        assertEquals(List.of("jcuda-1arg", "jcuda-prebuilt-1arg", "ffm-1arg", "ffm-critical-1arg", "jcuda-3arg", "ffm-3arg"),
                sums.stream().map(s -> s.variant().label()).toList(), "variants in table order, unmeasured ones left out");
        Summary jcuda1 = sums.get(0);
        assertEquals(4.5, jcuda1.medianCpuMicros(), 1e-9);
        assertEquals(4.0, jcuda1.minCpuMicros(), 1e-9);
        assertEquals(5.0, jcuda1.maxCpuMicros(), 1e-9);
        assertEquals(200_000, jcuda1.medianLaunchesPerSecond(), 1e-6);
        assertEquals("| jcuda-1arg | 3 x 10,000 | 4.500 us | 4.000 us | 5.000 us | 200,000 |", BindingCostReport.markdown(jcuda1));
        int columns = BindingCostReport.tableHeader().lines().findFirst().orElseThrow().split("\\|", -1).length;
        assertEquals(columns, BindingCostReport.markdown(jcuda1).split("\\|", -1).length);

        // medians: jcuda 4.5, prebuilt 3.2, ffm 2.4, critical 1.2
        assertEquals(List.of("| 1 | 1.88 x | +2.100 us | 1.33 x | 2.00 x |", "| 3 | 1.50 x | +2.000 us | - | - |"),
                BindingCostReport.ratioLines(sums));
        int ratioColumns = BindingCostReport.ratiosHeader().lines().findFirst().orElseThrow().split("\\|", -1).length;
        assertEquals(ratioColumns, BindingCostReport.ratioLines(sums).get(0).split("\\|", -1).length);
        assertTrue(BindingCostReport.ratioLines(List.of()).isEmpty());
    }
}
