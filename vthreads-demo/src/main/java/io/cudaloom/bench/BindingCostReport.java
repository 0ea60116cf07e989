package io.cudaloom.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The pure part of {@code BindingCost} (which is compiled for Java 22, from {@code src/main/java22},
 * because it calls libcuda through {@code java.lang.foreign}): its arguments, the variants and
 * their order, and the tables. Kept here, compiled with the module's release 21, so that the tests
 * (release 21 too) can reach it; {@code BindingCost} itself only measures.
 */
final class BindingCostReport {
    /** The kernels' argument counts: {@code empty_kernel()}, {@code spin_kernel(u64)}, {@code scale_f32(f32*, f32, u32)}. */
    static final List<Integer> ARITIES = List.of(0, 1, 3);

    private BindingCostReport() {}

    /** How a launch reaches the driver's {@code cuLaunchKernel}. */
    enum Path {
        JCUDA("jcuda", "JCuda's cuLaunchKernel; the arguments packed per launch as the library's KernelArgs packs them"
                + " (Pointer.to(Pointer.to(...), ...); 0 arguments: Pointer.to() of none)"),
        JCUDA_PREBUILT("jcuda-prebuilt", "JCuda's cuLaunchKernel; the arguments' Pointer packed once and reused"
                + " (0 arguments: null)"),
        FFM("ffm", "a java.lang.foreign downcall to libcuda's cuLaunchKernel; the argument values written per launch"
                + " into a reused native block of pointers and values (0 arguments: NULL)"),
        FFM_CRITICAL("ffm-critical", "the same downcall linked with Linker.Option.critical(false): no thread-state"
                + " transition (the JVM cannot reach a safepoint while it runs; here only to show that transition's cost)");

        final String label;
        final String description;

        Path(String label, String description) {
            this.label = label;
            this.description = description;
        }
    }

    /** One path with one kernel. */
    record Variant(Path path, int args) {
        /** E.g. "jcuda-0arg", "ffm-3arg", "ffm-critical-1arg". */
        String label() {
            return path.label + "-" + args + "arg";
        }
    }

    /** The program's arguments. */
    record Settings(int launches, int rounds, int warmup) {
        static final List<BenchArgs.Param> PARAMS = List.of(
                new BenchArgs.Param("launches", "50000"),
                new BenchArgs.Param("rounds", "5"),
                new BenchArgs.Param("warmup", "20000"));

        /** Parses {@code args} ({@link BenchArgs}: by position or {@code name=value}). */
        static Settings parse(String[] args) {
            Map<String, String> v = BenchArgs.bind(args, 0, PARAMS);
            return new Settings(BenchArgs.intValue("launches", v.get("launches"), 1, 100_000_000),
                    BenchArgs.intValue("rounds", v.get("rounds"), 1, 100),
                    BenchArgs.intValue("warmup", v.get("warmup"), 0, 100_000_000));
        }
    }

    /** One round of one variant: {@code launches} launches, their CPU (syncs excluded) and wall (syncs included). */
    record Sample(Variant variant, int round, long launches, long cpuNanos, long wallNanos) {
        double cpuMicrosPerLaunch() {
            return launches <= 0 ? 0 : cpuNanos / 1e3 / launches;
        }

        double launchesPerSecond() {
            return wallNanos <= 0 ? 0 : launches * 1e9 / wallNanos;
        }
    }

    /** Every variant, by kernel then path: jcuda-0arg, jcuda-prebuilt-0arg, ffm-0arg, ffm-critical-0arg, jcuda-1arg, ... */
    static List<Variant> variants() {
        List<Variant> v = new ArrayList<>();
        for (int args : ARITIES) {
            for (Path p : Path.values()) {
                v.add(new Variant(p, args));
            }
        }
        return List.copyOf(v);
    }

    /** The variants' order in round {@code round} (1-based): as listed in odd rounds, reversed in even ones. */
    static List<Variant> order(int round) {
        List<Variant> v = new ArrayList<>(variants());
        if (round % 2 == 0) {
            Collections.reverse(v);
        }
        return v;
    }

    /** The median (the mean of the middle two for an even count); 0 for none. */
    static double median(double[] values) {
        if (values.length == 0) {
            return 0;
        }
        double[] s = values.clone();
        Arrays.sort(s);
        int mid = s.length / 2;
        return s.length % 2 == 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
    }

    /** A variant's summary over its rounds. */
    record Summary(Variant variant, int rounds, long launchesPerRound, double medianCpuMicros, double minCpuMicros,
            double maxCpuMicros, double medianLaunchesPerSecond) {}

    /** The samples' summaries, per variant in {@link #variants()} order; variants without samples left out. */
    static List<Summary> summarize(List<Sample> samples) {
        Map<Variant, List<Sample>> by = new LinkedHashMap<>();
        for (Variant v : variants()) {
            by.put(v, new ArrayList<>());
        }
        for (Sample s : samples) {
            by.computeIfAbsent(s.variant(), k -> new ArrayList<>()).add(s);
        }
        List<Summary> out = new ArrayList<>();
        for (Map.Entry<Variant, List<Sample>> e : by.entrySet()) {
            List<Sample> l = e.getValue();
            if (l.isEmpty()) {
                continue;
            }
            double[] cpu = l.stream().mapToDouble(Sample::cpuMicrosPerLaunch).toArray();
            double[] rate = l.stream().mapToDouble(Sample::launchesPerSecond).toArray();
            out.add(new Summary(e.getKey(), l.size(), l.get(0).launches(), median(cpu),
                    Arrays.stream(cpu).min().orElse(0), Arrays.stream(cpu).max().orElse(0), median(rate)));
        }
        return out;
    }

    static String tableHeader() {
        return "| variant | rounds x launches | CPU per launch, median | min | max | launches/s (median, syncs included) |\n"
                + "|---|---|---|---|---|---|";
    }

    static String markdown(Summary s) {
        return String.format(Locale.ROOT, "| %s | %d x %,d | %.3f us | %.3f us | %.3f us | %,.0f |", s.variant().label(),
                s.rounds(), s.launchesPerRound(), s.medianCpuMicros(), s.minCpuMicros(), s.maxCpuMicros(),
                s.medianLaunchesPerSecond());
    }

    static String ratiosHeader() {
        return "| kernel arguments | jcuda / ffm | jcuda - ffm | jcuda-prebuilt / ffm | ffm / ffm-critical |\n"
                + "|---|---|---|---|---|";
    }

    /**
     * One line of the ratio table per argument count: the median CPU per launch of JCuda over the
     * FFM downcall's (and their difference, the binding's extra cost per launch), of JCuda with
     * prebuilt arguments over FFM's, and of FFM over FFM without the thread-state transition. "-"
     * where a variant is missing or measured 0.
     */
    static List<String> ratioLines(List<Summary> summaries) {
        Map<Variant, Double> cpu = new LinkedHashMap<>();
        for (Summary s : summaries) {
            cpu.put(s.variant(), s.medianCpuMicros());
        }
        List<String> lines = new ArrayList<>();
        for (int args : ARITIES) {
            Double jcuda = cpu.get(new Variant(Path.JCUDA, args));
            Double prebuilt = cpu.get(new Variant(Path.JCUDA_PREBUILT, args));
            Double ffm = cpu.get(new Variant(Path.FFM, args));
            Double critical = cpu.get(new Variant(Path.FFM_CRITICAL, args));
            if (jcuda == null && prebuilt == null && ffm == null && critical == null) {
                continue;
            }
            lines.add(String.format(Locale.ROOT, "| %d | %s | %s | %s | %s |", args, ratio(jcuda, ffm),
                    jcuda == null || ffm == null ? "-" : String.format(Locale.ROOT, "%+.3f us", jcuda - ffm),
                    ratio(prebuilt, ffm), ratio(ffm, critical)));
        }
        return lines;
    }

    private static String ratio(Double a, Double b) {
        return a == null || b == null || b <= 0 ? "-" : String.format(Locale.ROOT, "%.2f x", a / b);
    }
}
