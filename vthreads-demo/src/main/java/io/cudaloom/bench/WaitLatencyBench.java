package io.cudaloom.bench;

import io.cudaloom.CompletionStrategy;
import io.cudaloom.ReactorConfig;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaStream;
import io.cudaloom.demo.DemoKernels;
import io.cudaloom.demo.LatencyHistogram;
import java.io.PrintWriter;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/**
 * One waiter, one kernel at a time: launch, then wait by each method, side by side in one run.
 * Prints a Markdown table of p50/p90/p99 latency (launch to waiter running again) and the process
 * CPU time per wait (process CPU time over a method's timed iterations, divided by those
 * iterations: every thread of the JVM, the reactor's scanner included). Each method runs twice
 * (rounds A and B) to show the noise. A second table puts {@code await()} (reactor defaults) and
 * {@code cuStreamSynchronize} side by side per kernel and round, with their CPU per wait.
 *
 * <p>Usage: {@code WaitLatencyBench [iterations=3000] [warmup=2000|auto] [csv=FILE] [methods=all|KEY,...]
 * [kernelsUs=0,20,200]} (needs a CUDA device), by position or as {@code name=value}; method keys:
 * {@code await, await-spin20, await-nospin, await-scannerspin, await-scannerpark, sync, query-spin,
 * host-callback}; e.g. {@code methods=await,sync} for the side-by-side comparison alone. The CSV
 * file receives every empty-kernel sample of round A (for docs/plot_latency.py).
 */
public final class WaitLatencyBench {
    interface Waiter {
        void waitFor(CudaStream s) throws Exception;
    }

    /** How the benchmark thread waits. */
    enum Wait { AWAIT, SYNCHRONIZE, QUERY_SPIN }

    record Method(String key, String name, ReactorConfig config, boolean virtualThread, Wait waitBy) {}

    static final List<Method> METHODS = List.of(
            new Method("await", "await(), virtual thread, reactor defaults (waiter spin 50 us)", ReactorConfig.defaults(), true, Wait.AWAIT),
            new Method("await-spin20", "await(), virtual thread, waiter spin 20 us (the earlier default)",
                    ReactorConfig.builder().waiterSpin(Duration.ofNanos(20_000)).build(), true, Wait.AWAIT),
            new Method("await-nospin", "await(), virtual thread, no waiter spin (scanner wakes it)",
                    ReactorConfig.builder().waiterSpin(Duration.ZERO).build(), true, Wait.AWAIT),
            new Method("await-scannerspin", "await(), no waiter spin, scanner spins 1 ms before backing off",
                    ReactorConfig.builder().waiterSpin(Duration.ZERO).scannerSpin(Duration.ofMillis(1)).build(), true, Wait.AWAIT),
            new Method("await-scannerpark", "await(), no waiter spin, scanner parks at once (20 us..1 ms back-off)",
                    ReactorConfig.builder().waiterSpin(Duration.ZERO).scannerSpin(Duration.ZERO).build(), true, Wait.AWAIT),
            new Method("await-nolinger", "await(), virtual thread, scanner parks at once when nothing is armed (no linger)",
                    ReactorConfig.builder().scannerLinger(Duration.ZERO).build(), true, Wait.AWAIT),
            new Method("await-noprewake", "await(), virtual thread, a waiter sleeping through a predicted wait ends it on its own timer (no pre-wake)",
                    ReactorConfig.builder().waiterPreWake(false).build(), true, Wait.AWAIT),
            new Method("await-defer", "await(), virtual thread, the scanner parks while every armed slot's waiter spins on its flag (the default)",
                    ReactorConfig.builder().scannerDefersToSpinningWaiters(true).build(), true, Wait.AWAIT),
            new Method("await-nodefer", "await(), virtual thread, the scanner spins beside a spinning waiter (no deferral)",
                    ReactorConfig.builder().scannerDefersToSpinningWaiters(false).build(), true, Wait.AWAIT),
            new Method("sync", "cuStreamSynchronize, platform thread", ReactorConfig.defaults(), false, Wait.SYNCHRONIZE),
            new Method("query-spin", "spin on cuStreamQuery, platform thread", ReactorConfig.defaults(), false, Wait.QUERY_SPIN),
            new Method("host-callback", "cuLaunchHostFunc + unpark, virtual thread",
                    ReactorConfig.builder().strategy(CompletionStrategy.HOST_CALLBACK).build(), true, Wait.AWAIT));

    static final List<String> ROUNDS = List.of("A", "B");

    /**
     * {@code warmup=auto}: each row warms up until the JIT is quiet: at least {@value #AUTO_MIN}
     * waits, then chunks of {@value #AUTO_CHUNK} until the JIT compilers spent at most 1 ms over a
     * chunk, at most {@value #AUTO_MAX} waits in all (JMH's warm-up, made a stopping rule). A fixed
     * warm-up of 2,000 waits leaves the first row of a JVM (round A of the first kernel) partly
     * running before the await path is compiled: its JIT column shows compilation during the timed
     * waits.
     */
    static final int AUTO_WARMUP = -1;
    static final int AUTO_MIN = 2_000;
    static final int AUTO_CHUNK = 1_000;
    static final int AUTO_MAX = 100_000;

    /** The parsed arguments. */
    record Settings(int iterations, int warmup, String csv, List<Method> methods, List<Integer> kernelsUs) {
        static Settings parse(String[] args) {
            Map<String, String> v = BenchArgs.bind(args, 0, List.of(
                    new BenchArgs.Param("iterations", "3000"),
                    new BenchArgs.Param("warmup", "2000"),
                    new BenchArgs.Param("csv", "-"),
                    new BenchArgs.Param("methods", "all"),
                    new BenchArgs.Param("kernelsUs", "0,20,200", "kernels")));
            List<Method> methods = new ArrayList<>();
            if (v.get("methods").equalsIgnoreCase("all")) {
                methods.addAll(METHODS);
            } else {
                for (String key : v.get("methods").split(",", -1)) {
                    Method m = METHODS.stream().filter(x -> x.key().equalsIgnoreCase(key.strip())).findFirst()
                            .orElseThrow(() -> new IllegalArgumentException("unknown method '" + key + "' (known: all, "
                                    + String.join(", ", METHODS.stream().map(Method::key).toList()) + ")"));
                    if (methods.contains(m)) {
                        throw new IllegalArgumentException("methods lists " + m.key() + " twice");
                    }
                    methods.add(m);
                }
            }
            return new Settings(BenchArgs.intValue("iterations", v.get("iterations"), 100, 10_000_000),
                    v.get("warmup").equalsIgnoreCase("auto") ? AUTO_WARMUP
                            : BenchArgs.intValue("warmup", v.get("warmup"), 0, 10_000_000),
                    v.get("csv").equals("-") ? null : v.get("csv"), List.copyOf(methods),
                    BenchArgs.intList("kernelsUs", v.get("kernelsUs"), 0, 100_000));
        }
    }

    /**
     * One measured row: latencies in microseconds, CPU per wait in microseconds, and the JIT
     * compilers' time over the timed waits in milliseconds (-1 where the JVM does not report it): a
     * first round whose waits ran partly before the await path was compiled shows it here.
     */
    record Measured(double p50, double p90, double p99, double cpuMicrosPerWait, long jitMillis, int autoWarmupWaits) {
        /** A row with a fixed warm-up. */
        Measured(double p50, double p90, double p99, double cpuMicrosPerWait, long jitMillis) {
            this(p50, p90, p99, cpuMicrosPerWait, jitMillis, -1);
        }
    }

    /** The JIT compilers' total time, or -1 where the JVM does not monitor it. */
    private static long jitMillis() {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
    }

    static String kernelLabel(long kernelNanos) {
        return kernelNanos == 0 ? "empty" : (kernelNanos / 1000) + " us";
    }

    static String row(long kernelNanos, Method m, String round, Measured r) {
        return String.format(Locale.ROOT, "| %s | %s | %s | %.1f | %.1f | %.1f | %.1f us%s |", kernelLabel(kernelNanos),
                m.name(), round, r.p50(), r.p90(), r.p99(), r.cpuMicrosPerWait(),
                r.jitMillis() >= 0 ? " (JIT " + r.jitMillis() + " ms" + (r.autoWarmupWaits() >= 0
                        ? String.format(Locale.ROOT, ", warm-up %,d", r.autoWarmupWaits()) : "") + ")" : "");
    }

    static final String COMPARISON_HEADER = "| kernel | round | `await()` p50 / p99 | `cuStreamSynchronize` p50 / p99"
            + " | `await()` CPU per wait | `cuStreamSynchronize` CPU per wait | CPU per wait, `await()` / sync |\n"
            + "|---|---|---|---|---|---|---|";

    /** A row of the side-by-side table: {@code await()} with the reactor defaults against {@code cuStreamSynchronize}. */
    static String comparison(long kernelNanos, String round, Measured await, Measured sync) {
        String ratio = sync.cpuMicrosPerWait() > 0
                ? String.format(Locale.ROOT, "%.2f x", await.cpuMicrosPerWait() / sync.cpuMicrosPerWait()) : "-";
        return String.format(Locale.ROOT, "| %s | %s | %.1f / %.1f us | %.1f / %.1f us | %.1f us | %.1f us | %s |",
                kernelLabel(kernelNanos), round, await.p50(), await.p99(), sync.p50(), sync.p99(),
                await.cpuMicrosPerWait(), sync.cpuMicrosPerWait(), ratio);
    }

    public static void main(String[] args) throws Exception {
        Settings s;
        try {
            s = Settings.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.err.println("usage: WaitLatencyBench [iterations=3000] [warmup=2000|auto] [csv=FILE] [methods=all|KEY,...]"
                    + " [kernelsUs=0,20,200]");
            System.exit(2);
            return;
        }
        // A CSV file receives every empty-kernel sample of round A (method,microseconds), for the
        // latency-distribution plot (docs/plot_latency.py).
        PrintWriter csv = s.csv() != null ? new PrintWriter(s.csv(), "UTF-8") : null;
        if (csv != null) {
            csv.println("method,us");
        }
        System.out.printf("# Wait latency, one waiter (%d iterations, %s warm-up; microseconds)%n%n", s.iterations(),
                s.warmup() == AUTO_WARMUP ? String.format(Locale.ROOT, "an automatic (until the JIT is quiet, %,d to %,d waits)",
                        AUTO_MIN, AUTO_MAX) : String.valueOf(s.warmup()));
        System.out.println("CPU per wait: process CPU time over a method's timed iterations / iterations (every thread"
                + " of the JVM, the reactor's scanner included); JIT: the JIT compilers' time over those iterations.");
        System.out.println();
        System.out.println("| kernel | wait method | round | p50 | p90 | p99 | CPU per wait |");
        System.out.println("|---|---|---|---|---|---|---|");
        Map<String, Measured> results = new HashMap<>();
        for (int kernelUs : s.kernelsUs()) {
            long kernelNanos = 1000L * kernelUs;
            for (String round : ROUNDS) {
                for (Method m : s.methods()) {
                    double[] r = run(m, kernelNanos, s.iterations(), s.warmup(),
                            csv != null && kernelNanos == 0 && round.equals("A") ? csv : null);
                    Measured measured = new Measured(r[0], r[1], r[2], r[3], (long) r[4], (int) r[5]);
                    results.put(kernelUs + "/" + round + "/" + m.key(), measured);
                    System.out.println(row(kernelNanos, m, round, measured));
                    System.out.flush();
                }
            }
        }
        if (csv != null) {
            csv.close();
        }
        boolean both = s.methods().stream().anyMatch(m -> m.key().equals("await"))
                && s.methods().stream().anyMatch(m -> m.key().equals("sync"));
        if (both) {
            System.out.printf("%n## `await()` (reactor defaults, virtual thread) and `cuStreamSynchronize` (platform"
                    + " thread), side by side%n%n%s%n", COMPARISON_HEADER);
            for (int kernelUs : s.kernelsUs()) {
                for (String round : ROUNDS) {
                    System.out.println(comparison(1000L * kernelUs, round, results.get(kernelUs + "/" + round + "/await"),
                            results.get(kernelUs + "/" + round + "/sync")));
                }
            }
        }
    }

    /** One launch and its wait, {@code m}'s way. */
    private static void waitOnce(Method m, DemoKernels k, CudaStream stream, CudaDevice device, long kernelNanos)
            throws InterruptedException {
        if (kernelNanos == 0) {
            k.launchEmpty(stream);
        } else {
            k.launchSpin(stream, kernelNanos);
        }
        if (m.waitBy() == Wait.QUERY_SPIN) {
            device.makeCurrent();
            int r;
            while ((r = JCudaDriver.cuStreamQuery(stream.handle())) == CUresult.CUDA_ERROR_NOT_READY) {
                Thread.onSpinWait();
            }
            if (r != CUresult.CUDA_SUCCESS) {
                throw new IllegalStateException("cuStreamQuery: " + CUresult.stringFor(r));
            }
        } else if (m.waitBy() == Wait.SYNCHRONIZE) {
            stream.synchronize();
        } else {
            stream.await();
        }
    }

    /**
     * Returns {p50, p90, p99, cpu-us-per-wait, jit-ms over the timed waits (-1: not monitored),
     * the waits of an automatic warm-up (-1: fixed)}.
     */
    static double[] run(Method m, long kernelNanos, int iterations, int warmup, PrintWriter csv)
            throws Exception {
        AtomicReference<double[]> result = new AtomicReference<>();
        AtomicInteger warmedUp = new AtomicInteger(-1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        try (CudaDevice device = CudaDevice.open(0, m.config()); DemoKernels k = DemoKernels.load(device)) {
            CudaStream stream = device.newStream();
            Runnable body = () -> {
                try {
                    long[] samples = csv != null ? new long[iterations] : null; // the raw samples, for the CSV only
                    LatencyHistogram latency = new LatencyHistogram(); // HdrHistogram: no sort, no array to keep
                    var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
                    long cpu0 = 0;
                    long jit0 = 0;
                    io.cudaloom.ReactorStats before = null;
                    int warmups = warmup;
                    if (warmup == AUTO_WARMUP) {
                        warmups = 0;
                        long jitBefore = jitMillis();
                        while (warmups < AUTO_MAX) {
                            for (int j = 0; j < AUTO_CHUNK; j++) {
                                waitOnce(m, k, stream, device, kernelNanos);
                            }
                            warmups += AUTO_CHUNK;
                            long jitNow = jitMillis();
                            boolean quiet = jitBefore < 0 || jitNow - jitBefore <= 1;
                            jitBefore = jitNow;
                            if (warmups >= AUTO_MIN && quiet) {
                                break;
                            }
                        }
                    }
                    warmedUp.set(warmups);
                    for (int i = warmup == AUTO_WARMUP ? 0 : -warmup; i < iterations; i++) {
                        if (i == 0) {
                            cpu0 = os.getProcessCpuTime();
                            jit0 = jitMillis();
                            before = device.reactor().stats();
                        }
                        long t0 = System.nanoTime();
                        waitOnce(m, k, stream, device, kernelNanos);
                        if (i >= 0) {
                            long took = System.nanoTime() - t0;
                            latency.record(took);
                            if (samples != null) {
                                samples[i] = took;
                            }
                        }
                    }
                    long cpu = os.getProcessCpuTime() - cpu0;
                    long jit = jit0 < 0 ? -1 : jitMillis() - jit0;
                    io.cudaloom.ReactorStats after = device.reactor().stats();
                    if (before != null && m.waitBy() == Wait.AWAIT) { // which path the timed awaits took (stderr)
                        System.err.printf(Locale.ROOT, "%s, %s: registrations %d, inline %d, joined %d, already done %d,"
                                + " scanner timed parks %d, scan passes %d, pre-wakes %d, scanner CPU %.1f us per wait%n", m.key(),
                                kernelLabel(kernelNanos), after.registrations() - before.registrations(),
                                after.inlineCompletions() - before.inlineCompletions(),
                                after.coalesced() - before.coalesced(), after.immediate() - before.immediate(),
                                after.scannerTimedParks() - before.scannerTimedParks(),
                                after.scanPasses() - before.scanPasses(), after.preWakes() - before.preWakes(),
                                (after.scannerCpuNanos() - before.scannerCpuNanos()) / 1e3 / iterations);
                    }
                    if (csv != null && samples != null) {
                        synchronized (csv) {
                            for (long v : samples) {
                                csv.printf("\"%s\",%.2f%n", m.name(), v / 1e3);
                            }
                        }
                    }
                    result.set(new double[] {
                        latency.percentile(50) / 1e3, latency.percentile(90) / 1e3,
                        latency.percentile(99) / 1e3, cpu / 1e3 / iterations, jit,
                        warmup == AUTO_WARMUP ? warmedUp.get() : -1});
                } catch (Throwable t) {
                    failure.set(t);
                }
            };
            Thread t = m.virtualThread() ? Thread.ofVirtual().start(body) : Thread.ofPlatform().start(body);
            t.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException(m.name() + " failed", failure.get());
        }
        return result.get();
    }
}
