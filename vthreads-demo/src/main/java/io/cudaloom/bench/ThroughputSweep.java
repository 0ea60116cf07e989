package io.cudaloom.bench;

import static jcuda.driver.JCudaDriver.cuCtxCreate;
import static jcuda.driver.JCudaDriver.cuCtxDestroy;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuInit;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuBatcher;
import io.cudaloom.GpuStream;
import io.cudaloom.ReactorConfig;
import io.cudaloom.ReactorStats;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaStream;
import io.cudaloom.demo.DemoKernels;
import java.io.PrintStream;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUctx_flags;
import jcuda.driver.CUdevice;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * {@code GpuBench sweep}: {@code await()} against thread pools and against the driver's own
 * ceiling, side by side in one process, for several kernel lengths. For each kernel length and
 * round, seven rows, each on a freshly opened {@link CudaDevice} with {@value #STREAMS} streams (the
 * blocking-sync pool on a context of its own, see below):
 * <ol>
 *   <li>{@link Method#AWAIT}: {@code threads} virtual threads, each {@code launchSpin} then
 *       {@code stream.await()}, streams round-robin by thread index;
 *   <li>{@link Method#BATCHED}: {@code threads} virtual threads, each {@code call}ing one
 *       {@link GpuBatcher} ({@value #STREAMS} streams, up to {@value #BATCH_MAX} calls per batch,
 *       no added delay: a batch closes whenever a stream is free) whose step launches the spin
 *       kernel once per batch for the row's kernel time: a batch of N calls costs one kernel, the
 *       point of batching. Each call is a 4-byte in-place slot (an int packed, copied in and back,
 *       unpacked and checked);
 *   <li>{@link Method#POOL_64}: 64 platform threads, each {@code launchSpin} then
 *       {@code stream.synchronize()} ({@code cuStreamSynchronize});
 *   <li>{@link Method#POOL_CORES}: the same with {@code availableProcessors()} platform threads;
 *   <li>{@link Method#POOL_BLOCKING}: 64 platform threads, each {@code spin_kernel} launch then
 *       {@code cuStreamSynchronize}, in raw JCuda on a context of the row's own created with
 *       {@code CU_CTX_SCHED_BLOCKING_SYNC} (the library's {@link CudaDevice} retains the primary
 *       context with its default scheduling, {@code CU_CTX_SCHED_AUTO}, which spins in
 *       {@code cuStreamSynchronize} while the process has fewer active contexts than cores, and
 *       takes no scheduling flags): the waiting threads sleep in the driver instead, the honest
 *       CPU competitor of {@code await()}. Its own module and {@value #STREAMS}
 *       {@code CU_STREAM_NON_BLOCKING} streams; each pool thread makes the context current once (a
 *       platform thread keeps it) and packs the spin argument per launch, as the library does; the
 *       context is destroyed after the row;
 *   <li>{@link Method#CEILING_8}: 8 platform threads, one per stream, launching back to back, one
 *       {@code synchronize()} each at the end: what the driver and GPU do with no waiting at all;
 *   <li>{@link Method#CEILING_16}: the same with 16 threads, two per stream.
 * </ol>
 * Every row makes the same number of launches ({@link #totalLaunches}), split as evenly as
 * possible over its threads ({@link #share}). Before each row: an empty kernel awaited per stream,
 * then, for kernels longer than 10 us, the JIT's warm-up ({@link #JIT_WARM_UP_LAUNCHES} launches of
 * 10 us kernels), then a warm-up of 1/20 of the row's launches (at least 1 s of the streams' work,
 * at most a quarter of the row: {@link #warmUpLaunches}), all run the same way (the batched row, whose
 * batcher launches one kernel per batch of the row's length, has the second warm-up only). Odd rounds run the rows in the
 * order above, even rounds in reverse, so that no method always runs first. Each row reports
 * completions/s, wall time, cores busy (process CPU time / wall), process CPU time per completion,
 * and for {@code await()} the reactor's counters over the row: registrations, inline completions,
 * already done, fallbacks, device flag writes per completion ({@link ReactorStats#flagWrites()})
 * and the time launches spent waiting for admission to a full stream
 * ({@link ReactorStats#admissionWaitNanos()}, {@link ReactorStats#admissionWaits()}); the
 * {@code await()} row's last column holds its ratios to the 8-thread ceiling, to the faster of the
 * two spinning pools ({@link Method#POOL_64}, {@link Method#POOL_CORES}: the library's own
 * {@code synchronize()}, as before), and, separately, to the blocking-sync pool: completions/s
 * and CPU per completion over that pool's.
 */
final class ThroughputSweep {
    static final int STREAMS = 8;
    /** Launches per row are capped so that launches x kernel / STREAMS stays within this. */
    static final long GPU_BUDGET_NANOS = 8_000_000_000L;
    /** A row (warm-up included) still running after this is reported as a stall; the process halts. */
    static final long ROW_LIMIT_NANOS = 120_000_000_000L;
    /** Warm-up before each row: this fraction (1/n) of the row's launches, run the same way. */
    static final int WARM_UP_DIVISOR = 20;

    /**
     * A row's warm-up: 1/{@value #WARM_UP_DIVISOR} of its launches, or as many as keep the streams
     * busy for 1 s if that is more (at most a quarter of the row's): with long kernels 1/20 of the
     * row was 0.4 s, and the JIT compilers were still at work in the measured row (its JIT column).
     */
    static long warmUpLaunches(long total, long kernelNanos) {
        long oneSecond = kernelNanos <= 0 ? total : 1_000_000_000L * STREAMS / kernelNanos;
        return Math.max(1, Math.max(total / WARM_UP_DIVISOR, Math.min(total / 4, oneSecond)));
    }

    /**
     * The JIT's warm-up before a row of kernels longer than {@value #JIT_KERNEL_NANOS} ns: this many
     * launches of that short kernel, made the same way (same method, threads and streams). The
     * JIT compiles a method once it has run often enough, not after a time: a row of 1 ms kernels
     * makes 8,000 launches a second, and after its 1 s warm-up the JIT compilers still spent 0.6-0.7 s
     * in its measured 8 s (an H100, s14-run22): a third of its CPU. The code path does not depend
     * on the kernel's length.
     */
    static final long JIT_WARM_UP_LAUNCHES = 100_000;
    /** The kernel of the JIT's warm-up (see {@link #JIT_WARM_UP_LAUNCHES}). */
    static final long JIT_KERNEL_NANOS = 10_000;

    private static final CompilationMXBean JIT = ManagementFactory.getCompilationMXBean();

    /** The JIT compilers' accumulated time (ms), or -1 where the JVM does not say. */
    static long jitMillis() {
        return JIT != null && JIT.isCompilationTimeMonitoringSupported() ? JIT.getTotalCompilationTime() : -1;
    }
    /** The {@link Method#BATCHED} row's batcher: the most calls in one batch. */
    static final int BATCH_MAX = 256;

    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private ThroughputSweep() {}

    /** The mode's parameters. */
    record Settings(int threads, int awaitsPerThread, List<Integer> kernelsUs, int rounds) {
        static final List<BenchArgs.Param> PARAMS = List.of(
                new BenchArgs.Param("threads", "10000"),
                new BenchArgs.Param("awaitsPerThread", "100", "awaits"),
                new BenchArgs.Param("kernelsUs", "10,50,200,1000", "kernels"),
                new BenchArgs.Param("rounds", "2"));

        /** Parses {@code args[from..]} ({@link BenchArgs}: by position or {@code name=value}). */
        static Settings parse(String[] args, int from) {
            Map<String, String> v = BenchArgs.bind(args, from, PARAMS);
            return new Settings(
                    BenchArgs.intValue("threads", v.get("threads"), 1, 1_000_000),
                    BenchArgs.intValue("awaitsPerThread", v.get("awaitsPerThread"), 1, 1_000_000),
                    BenchArgs.intList("kernelsUs", v.get("kernelsUs"), 0, 1_000_000),
                    BenchArgs.intValue("rounds", v.get("rounds"), 1, 10));
        }
    }

    /** The rows of each round, in table order. */
    enum Method {
        AWAIT, BATCHED, POOL_64, POOL_CORES, POOL_BLOCKING, CEILING_8, CEILING_16;

        /** The pools the ratios' "best pool" is chosen from: the library's {@code synchronize()}, spinning. */
        static final List<Method> SPIN_POOLS = List.of(POOL_64, POOL_CORES);

        /** Threads the row would use before capping to the launches: {@code threads} for AWAIT. */
        int threads(int awaitThreads, int cores) {
            return switch (this) {
                case AWAIT, BATCHED -> awaitThreads;
                case POOL_64, POOL_BLOCKING -> 64;
                case POOL_CORES -> cores;
                case CEILING_8 -> STREAMS;
                case CEILING_16 -> 2 * STREAMS;
            };
        }

        /** A thread pool: each thread waits for each of its launches ({@code synchronize()} or {@code cuStreamSynchronize}). */
        boolean isPool() {
            return this == POOL_64 || this == POOL_CORES || this == POOL_BLOCKING;
        }

        String label(int workers) {
            return switch (this) {
                case AWAIT -> String.format(Locale.ROOT, "`await()`: %,d virtual threads, launch + await", workers);
                case BATCHED -> String.format(Locale.ROOT,
                        "batched: %,d virtual threads, `GpuBatcher.call`, one kernel per batch", workers);
                case POOL_64 -> String.format(Locale.ROOT, "pool: %d platform threads, launch + `synchronize()`", workers);
                case POOL_CORES -> String.format(Locale.ROOT,
                        "pool: %d platform threads (= cores), launch + `synchronize()`", workers);
                case POOL_BLOCKING -> String.format(Locale.ROOT,
                        "pool: %d platform threads, launch + `cuStreamSynchronize`, blocking-sync context (raw JCuda)",
                        workers);
                case CEILING_8, CEILING_16 -> String.format(Locale.ROOT,
                        "ceiling: %d threads, %d per stream, back to back, one `synchronize()` each", workers,
                        Math.max(1, workers / STREAMS));
            };
        }
    }

    /**
     * The rows to run: all, or those named by {@code -Dsweep.rows=AWAIT,CEILING_8,...} (a shorter
     * run for a device call that has little time; the ratios of a row whose partner was left out
     * are left out too).
     */
    static List<Method> selectedRows(@org.jspecify.annotations.Nullable String rows) {
        if (rows == null || rows.isBlank()) {
            return List.of(Method.values());
        }
        List<Method> picked = new ArrayList<>();
        for (String name : rows.split(",", -1)) {
            try {
                picked.add(Method.valueOf(name.trim().toUpperCase(Locale.ROOT)));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("sweep.rows: no row " + name.trim() + "; rows are "
                        + Arrays.toString(Method.values()), e);
            }
        }
        return List.of(Method.values()).stream().filter(picked::contains).toList();
    }

    /** The order of the rows in round {@code round} (1-based): as listed in odd rounds, reversed in even ones. */
    static List<Method> order(int round) {
        return order(round, List.of(Method.values()));
    }

    /** {@link #order(int)} of the rows {@code rows} only. */
    static List<Method> order(int round, List<Method> rows) {
        List<Method> m = new ArrayList<>(rows);
        if (round % 2 == 0) {
            Collections.reverse(m);
        }
        return m;
    }

    /** Most launches for {@code kernelNanos} kernels within {@link #GPU_BUDGET_NANOS} over the streams; no cap for 0. */
    static long launchCap(long kernelNanos) {
        if (kernelNanos <= 0) {
            return Long.MAX_VALUE;
        }
        return Math.max(STREAMS, GPU_BUDGET_NANOS / kernelNanos * STREAMS);
    }

    /** Launches per row: {@code threads x awaitsPerThread}, capped by {@link #launchCap}. */
    static long totalLaunches(int threads, int awaitsPerThread, long kernelNanos) {
        return Math.min((long) threads * awaitsPerThread, launchCap(kernelNanos));
    }

    /** Launches of worker {@code index} of {@code workers} when they share {@code total}: an even split, the first ones take the remainder. */
    static long share(long total, int workers, int index) {
        return total / workers + (index < total % workers ? 1 : 0);
    }

    /** The reactor's counters over one row. */
    record AwaitCounts(long registrations, long inline, long immediate, long fallbacks, long flagWrites,
            long admissionWaits, long admissionWaitNanos, long coalesced, long scannerCpuNanos, long trackers) {
        static AwaitCounts between(ReactorStats before, ReactorStats after) {
            return new AwaitCounts(after.registrations() - before.registrations(),
                    after.inlineCompletions() - before.inlineCompletions(),
                    after.immediate() - before.immediate(), after.fallbacks() - before.fallbacks(),
                    after.flagWrites() - before.flagWrites(), after.admissionWaits() - before.admissionWaits(),
                    after.admissionWaitNanos() - before.admissionWaitNanos(),
                    after.coalesced() - before.coalesced(),
                    after.scannerCpuNanos() < 0 || before.scannerCpuNanos() < 0 ? -1
                            : after.scannerCpuNanos() - before.scannerCpuNanos(),
                    after.trackers() - before.trackers());
        }
    }

    /**
     * One measured row; {@code counts} is null except for {@link Method#AWAIT}, {@code batches}
     * (the batches the batcher launched over the row) is -1 except for {@link Method#BATCHED}. For
     * that row {@code launches} counts the calls completed, not the kernels.
     */
    record Row(Method method, int workers, int round, long launches, long wallNanos, long cpuNanos, AwaitCounts counts,
            long batches, long jitMillis) {
        Row(Method method, int workers, int round, long launches, long wallNanos, long cpuNanos, AwaitCounts counts) {
            this(method, workers, round, launches, wallNanos, cpuNanos, counts, -1, -1);
        }

        /** The same row with the JIT compilers' time over it (ms, -1 where not measured). */
        Row withJit(long millis) {
            return new Row(method, workers, round, launches, wallNanos, cpuNanos, counts, batches, millis);
        }

        /** Calls per batch over the row; 0 without batches. */
        double meanBatchSize() {
            return batches <= 0 ? 0 : (double) launches / batches;
        }

        double completionsPerSecond() {
            return wallNanos <= 0 ? 0 : launches * 1e9 / wallNanos;
        }

        double coresBusy() {
            return wallNanos <= 0 ? 0 : (double) cpuNanos / wallNanos;
        }

        double cpuMicrosPerCompletion() {
            return launches <= 0 ? 0 : cpuNanos / 1e3 / launches;
        }
    }

    static String tableHeader() {
        return "| method | round | wall s | completions/s | cores busy | CPU per completion | "
                + "await: registered / inline / already done / fallbacks / joined | flag writes/completion"
                + " | admission wait (ms total, waits) | scanner CPU per completion | ratios |\n"
                + "|---|---|---|---|---|---|---|---|---|---|---|";
    }

    static String markdown(Row r, String ratios) {
        AwaitCounts c = r.counts();
        String counts = r.batches() >= 0 ? String.format(Locale.ROOT, "batches %,d, mean batch %.1f", r.batches(),
                r.meanBatchSize())
                : c == null ? "-" : String.format(Locale.ROOT, "%,d / %,d / %,d / %,d / %,d",
                c.registrations(), c.inline(), c.immediate(), c.fallbacks(), c.coalesced());
        String flagWrites = c == null || r.launches() <= 0 ? "-"
                : String.format(Locale.ROOT, "%.3f (trackers %.3f)", (double) c.flagWrites() / r.launches(),
                        (double) c.trackers() / r.launches());
        String admission = c == null ? "-"
                : String.format(Locale.ROOT, "%,.1f ms, %,d", c.admissionWaitNanos() / 1e6, c.admissionWaits());
        String scanner = c == null || c.scannerCpuNanos() < 0 || r.launches() <= 0 ? "-"
                : String.format(Locale.ROOT, "%.2f us", c.scannerCpuNanos() / 1e3 / r.launches());
        String jit = r.jitMillis() < 0 ? "" : String.format(Locale.ROOT, " (JIT %,d ms)", r.jitMillis());
        return String.format(Locale.ROOT, "| %s | %d | %.2f | %,.0f | %.2f | %.1f us%s | %s | %s | %s | %s | %s |",
                r.method().label(r.workers()), r.round(), r.wallNanos() / 1e9, r.completionsPerSecond(),
                r.coresBusy(), r.cpuMicrosPerCompletion(), jit, counts, flagWrites, admission, scanner, ratios);
    }

    /**
     * The await row's ratios within one round: completions/s over the 8-thread ceiling's, over the
     * faster spinning pool's ({@link Method#SPIN_POOLS}), and CPU per completion over that pool's;
     * then completions/s and CPU per completion over the blocking-sync pool's. "-" for a missing or
     * empty comparison.
     */
    static String ratios(Map<Method, Row> round) {
        Row await = round.get(Method.AWAIT);
        if (await == null) {
            return "-";
        }
        Row ceiling = round.get(Method.CEILING_8);
        Row best = null;
        for (Method m : Method.SPIN_POOLS) {
            Row r = round.get(m);
            if (r != null && (best == null || r.completionsPerSecond() > best.completionsPerSecond())) {
                best = r;
            }
        }
        List<String> parts = new ArrayList<>();
        if (ceiling != null && ceiling.completionsPerSecond() > 0) {
            parts.add(String.format(Locale.ROOT, "%.2f x ceiling(8)", await.completionsPerSecond() / ceiling.completionsPerSecond()));
        }
        if (best != null && best.completionsPerSecond() > 0) {
            parts.add(String.format(Locale.ROOT, "%.2f x best pool (%d)", await.completionsPerSecond() / best.completionsPerSecond(),
                    best.workers()));
            if (best.cpuMicrosPerCompletion() > 0) {
                parts.add(String.format(Locale.ROOT, "CPU/completion %.2f x", await.cpuMicrosPerCompletion() / best.cpuMicrosPerCompletion()));
            }
        }
        Row blocking = round.get(Method.POOL_BLOCKING);
        if (blocking != null && blocking.completionsPerSecond() > 0) {
            parts.add(String.format(Locale.ROOT, "%.2f x blocking pool (%d)",
                    await.completionsPerSecond() / blocking.completionsPerSecond(), blocking.workers()));
            if (blocking.cpuMicrosPerCompletion() > 0) {
                parts.add(String.format(Locale.ROOT, "CPU/completion %.2f x blocking",
                        await.cpuMicrosPerCompletion() / blocking.cpuMicrosPerCompletion()));
            }
        }
        return parts.isEmpty() ? "-" : String.join("; ", parts);
    }

    /**
     * The batched row's ratios within one round: completions/s over the 8-thread ceiling's and over
     * the {@code await()} row's, and CPU per completion over the {@code await()} row's; "-" for a
     * missing or empty comparison.
     */
    static String batchedRatios(Map<Method, Row> round) {
        Row batched = round.get(Method.BATCHED);
        if (batched == null) {
            return "-";
        }
        List<String> parts = new ArrayList<>();
        Row ceiling = round.get(Method.CEILING_8);
        if (ceiling != null && ceiling.completionsPerSecond() > 0) {
            parts.add(String.format(Locale.ROOT, "%.2f x ceiling(8)",
                    batched.completionsPerSecond() / ceiling.completionsPerSecond()));
        }
        Row await = round.get(Method.AWAIT);
        if (await != null && await.completionsPerSecond() > 0) {
            parts.add(String.format(Locale.ROOT, "%.2f x await()",
                    batched.completionsPerSecond() / await.completionsPerSecond()));
            if (await.cpuMicrosPerCompletion() > 0) {
                parts.add(String.format(Locale.ROOT, "CPU/completion %.2f x await()",
                        batched.cpuMicrosPerCompletion() / await.cpuMicrosPerCompletion()));
            }
        }
        return parts.isEmpty() ? "-" : String.join("; ", parts);
    }

    /** The ratios column of row {@code m} in a round: the await and batched rows have some, the others none. */
    static String ratiosOf(Method m, Map<Method, Row> round) {
        return switch (m) {
            case AWAIT -> ratios(round);
            case BATCHED -> batchedRatios(round);
            default -> "";
        };
    }

    /** The heading above a kernel length's table. */
    static String heading(Settings s, int kernelUs) {
        long kernelNanos = 1000L * kernelUs;
        long asked = (long) s.threads() * s.awaitsPerThread();
        long total = totalLaunches(s.threads(), s.awaitsPerThread(), kernelNanos);
        String kernel = kernelUs == 0 ? "0 us (empty spin)" : kernelUs + " us";
        if (total == asked) {
            return String.format(Locale.ROOT, "### %s kernels: %,d launches per row (%,d x %,d)", kernel, total,
                    s.threads(), s.awaitsPerThread());
        }
        int workers = (int) Math.min(s.threads(), total);
        long lo = total / workers, hi = lo + (total % workers == 0 ? 0 : 1);
        return String.format(Locale.ROOT, "### %s kernels: %,d launches per row (capped from %,d x %,d so that"
                + " launches x kernel / %d streams <= %d s; `await()`: %,d threads x %s)", kernel, total, s.threads(),
                s.awaitsPerThread(), STREAMS, GPU_BUDGET_NANOS / 1_000_000_000L, workers,
                lo == hi ? Long.toString(lo) : lo + "-" + hi);
    }

    // ---- on the GPU ---------------------------------------------------------------------------

    /** Runs the sweep: markdown on {@code out}, progress on {@code err}. */
    static void run(Settings s, PrintStream out, PrintStream err) throws Exception {
        int cores = Runtime.getRuntime().availableProcessors();
        List<Method> selected = selectedRows(System.getProperty("sweep.rows"));
        String device;
        try (CudaDevice d = CudaDevice.open(0)) {
            device = d.name() + ", compute " + d.computeCapability();
        }
        out.printf(Locale.ROOT, "## GpuBench sweep: %s; %d cores; Java %s%n%n", device, cores, Runtime.version());
        out.printf(Locale.ROOT, "driver calls: %s%n%n", CudaDevice.driverCalls());
        out.printf(Locale.ROOT, "`await()` rows: %s%n%n", awaitConfig(s.threads()));
        if (selected.size() < Method.values().length) {
            out.printf(Locale.ROOT, "Rows run (-Dsweep.rows): %s%n%n", selected);
        }
        out.printf(Locale.ROOT, "%d streams; every row on a freshly opened device after a warm-up (an empty kernel"
                + " per stream; for kernels longer than 10 us, 100,000 launches of 10 us kernels, the JIT's; then 1/%d of"
                + " the row's launches, at least 1 s of the streams' work and at most a quarter of the row, the same way;"
                + " JIT: the JIT compilers' time over the measured row); rows run in table order in odd rounds,"
                + " reversed in even ones. Cores busy: process CPU time / wall. CPU per completion: process CPU time"
                + " / launches. Flag writes/completion: the reactor's device flag writes over the row / launches;"
                + " admission wait: the reactor's total time launches waited for room on a full stream, and how many"
                + " waited (both `await()` only). Ratios: `await()` completions/s over the 8-thread ceiling's and the"
                + " faster spinning pool's (64 or cores threads in `synchronize()`), and its CPU per completion over"
                + " that pool's; then completions/s and CPU per completion over the blocking pool's (raw JCuda, its own"
                + " context created with CU_CTX_SCHED_BLOCKING_SYNC, so its threads sleep in cuStreamSynchronize)."
                + " Batched: as many calls as the `await()` row's launches, by as many virtual threads, through one"
                + " GpuBatcher (%d streams, up to %d calls per batch, no added delay) whose step is one spin kernel of"
                + " the row's length per batch (4-byte in-place slots); its counts column: batches and calls per batch;"
                + " its ratios: completions/s over the 8-thread ceiling's and the `await()` row's, CPU per completion"
                + " over the `await()` row's.%n",
                STREAMS, WARM_UP_DIVISOR, STREAMS, BATCH_MAX);
        for (int kernelUs : s.kernelsUs()) {
            long kernelNanos = 1000L * kernelUs;
            long total = totalLaunches(s.threads(), s.awaitsPerThread(), kernelNanos);
            out.printf("%n%s%n%n%s%n", heading(s, kernelUs), tableHeader());
            out.flush();
            for (int round = 1; round <= s.rounds(); round++) {
                Map<Method, Row> rows = new EnumMap<>(Method.class);
                for (Method m : order(round, selected)) {
                    int workers = (int) Math.min(m.threads(s.threads(), cores), total);
                    Row r = measure(m, workers, total, kernelNanos, round, err);
                    rows.put(m, r);
                    err.printf(Locale.ROOT, "sweep: %d us, round %d, %s: %.2f s, %,.0f/s%n", kernelUs, round,
                            m.label(workers), r.wallNanos() / 1e9, r.completionsPerSecond());
                }
                for (Method m : selected) {
                    out.println(markdown(rows.get(m), ratiosOf(m, rows)));
                }
                out.flush();
            }
        }
    }

    /**
     * The await row's reactor: the defaults with room for every worker, and, for A/B runs in one
     * JVM session, {@code -Dsweep.admissionLimit=N}, {@code -Dsweep.flagWritesInFlight=N} and
     * {@code -Dsweep.relayWakeups=false} (the header prints the result).
     */
    static ReactorConfig awaitConfig(int workers) {
        ReactorConfig.Builder b = ReactorConfig.builder().capacity(Math.max(4096, workers + 1024));
        Integer admission = Integer.getInteger("sweep.admissionLimit");
        if (admission != null) {
            b.admissionLimit(admission);
        }
        Integer writes = Integer.getInteger("sweep.flagWritesInFlight");
        if (writes != null) {
            b.flagWritesInFlight(writes);
        }
        String relay = System.getProperty("sweep.relayWakeups");
        if (relay != null) {
            b.relayWakeups(Boolean.parseBoolean(relay));
        }
        return b.build();
    }

    /** One row on a fresh device: warm-up, then {@code total} launches by {@code workers} threads. */
    static Row measure(Method m, int workers, long total, long kernelNanos, int round, PrintStream err) throws Exception {
        if (m == Method.POOL_BLOCKING) {
            return measureBlocking(workers, total, kernelNanos, round, err);
        }
        ReactorConfig config = m == Method.AWAIT || m == Method.BATCHED ? awaitConfig(workers) : ReactorConfig.defaults();
        try (CudaDevice d = CudaDevice.open(0, config); DemoKernels k = DemoKernels.load(d)) {
            List<CudaStream> s = GpuBench.streams(d);
            Thread watchdog = watchdog(m, workers, total, kernelNanos, round, err, () -> "reactor " + d.reactor().stats());
            try {
                GpuBench.warm(d, k, s);
                if (m == Method.BATCHED) {
                    return measureBatched(d, workers, total, kernelNanos, round);
                }
                if (kernelNanos > JIT_KERNEL_NANOS) {
                    launchAndWait(m, workers, JIT_WARM_UP_LAUNCHES, JIT_KERNEL_NANOS, k, s);
                }
                launchAndWait(m, workers, warmUpLaunches(total, kernelNanos), kernelNanos, k, s);
                ReactorStats before = d.reactor().stats();
                long jit0 = jitMillis();
                long cpu0 = OS.getProcessCpuTime(), t0 = System.nanoTime();
                launchAndWait(m, workers, total, kernelNanos, k, s);
                long wall = System.nanoTime() - t0, cpu = OS.getProcessCpuTime() - cpu0;
                long jit = jit0 < 0 ? -1 : jitMillis() - jit0;
                AwaitCounts counts = m == Method.AWAIT ? AwaitCounts.between(before, d.reactor().stats()) : null;
                return new Row(m, workers, round, total, wall, cpu, counts).withJit(jit);
            } finally {
                watchdog.interrupt();
            }
        }
    }

    /**
     * The batcher's step for the {@link Method#BATCHED} row: each call's int in its 4-byte in-place
     * slot, one spin kernel of {@code kernelNanos} per batch whatever its size (the kernel leaves the
     * slots alone: each call gets its own int back).
     */
    record SpinStep(long kernelNanos) implements GpuBatcher.Step<Integer, Integer> {
        @Override
        public void pack(Integer input, ByteBuffer slot) {
            slot.putInt(input);
        }

        @Override
        public void launch(GpuStream stream, DeviceMemory in, DeviceMemory out, int count) {
            stream.launchKernel(Duration.ofNanos(kernelNanos));
        }

        @Override
        public Integer unpack(ByteBuffer slot) {
            return slot.getInt();
        }
    }

    /** The batcher of the {@link Method#BATCHED} row on {@code d}. */
    static GpuBatcher<Integer, Integer> batcher(io.cudaloom.GpuDevice d, long kernelNanos) {
        return GpuBatcher.builder(d, new SpinStep(kernelNanos)).inPlace(4).streams(STREAMS).maxBatch(BATCH_MAX)
                .maxDelay(Duration.ZERO).build();
    }

    /**
     * The {@link Method#BATCHED} row on the warmed device {@code d}: a warm-up of
     * {@link #warmUpLaunches} calls (no JIT warm-up of short kernels: its batcher's step is the
     * row's kernel), then {@code total} calls by {@code workers} virtual threads.
     */
    private static Row measureBatched(CudaDevice d, int workers, long total, long kernelNanos, int round)
            throws Exception {
        try (GpuBatcher<Integer, Integer> b = batcher(d, kernelNanos)) {
            callAll(b, workers, warmUpLaunches(total, kernelNanos));
            long batches0 = b.stats().batches();
            long cpu0 = OS.getProcessCpuTime(), t0 = System.nanoTime();
            callAll(b, workers, total);
            long wall = System.nanoTime() - t0, cpu = OS.getProcessCpuTime() - cpu0;
            return new Row(Method.BATCHED, workers, round, total, wall, cpu, null, b.stats().batches() - batches0, -1);
        }
    }

    /** {@code total} calls of {@code b} by {@code workers} virtual threads, each checking its output. */
    static void callAll(GpuBatcher<Integer, Integer> b, int workers, long total) throws Exception {
        GpuBench.runAll(workers, true, i -> {
            long n = share(total, workers, i);
            for (long r = 0; r < n; r++) {
                int v = (int) (i * 31L + r);
                int got = b.call(v);
                if (got != v) {
                    throw new IllegalStateException("batched call " + i + "/" + r + ": sent " + v + ", got " + got);
                }
            }
        });
    }

    /**
     * Halts the process with a STALL line (on stdout and {@code err}) if the row is still running
     * after {@link #ROW_LIMIT_NANOS}; interrupt it when the row is done. {@code state}: what to add.
     */
    private static Thread watchdog(Method m, int workers, long total, long kernelNanos, int round, PrintStream err,
            Supplier<String> state) {
        return Thread.ofPlatform().daemon().name("sweep-watchdog").start(() -> {
            try {
                Thread.sleep(ROW_LIMIT_NANOS / 1_000_000);
            } catch (InterruptedException e) {
                return;
            }
            String msg = String.format(Locale.ROOT, "STALL: %s, round %d, %,d launches of %d us: not done after %d s;"
                    + " %s", m.label(workers), round, total, kernelNanos / 1000, ROW_LIMIT_NANOS / 1_000_000_000L,
                    state.get());
            System.out.println(msg);
            System.out.flush();
            err.println(msg);
            err.flush();
            Runtime.getRuntime().halt(3);
        });
    }

    /**
     * The {@link Method#POOL_BLOCKING} row, in raw JCuda: a context of its own created with
     * {@code CU_CTX_SCHED_BLOCKING_SYNC} (made current on this thread by the create), the built-in
     * kernels' module and {@value #STREAMS} non-blocking streams in it; the same warm-up as the
     * other rows (an empty kernel per stream, then 1/{@value #WARM_UP_DIVISOR} of the launches); all
     * of it destroyed after the row. JCuda's exceptions stay off (a process-wide switch the library
     * relies on being off): every result is checked here.
     */
    private static Row measureBlocking(int workers, long total, long kernelNanos, int round, PrintStream err)
            throws Exception {
        check(cuInit(0), "cuInit");
        CUdevice dev = new CUdevice();
        check(cuDeviceGet(dev, 0), "cuDeviceGet(0)");
        CUcontext ctx = new CUcontext();
        check(cuCtxCreate(ctx, CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC, dev), "cuCtxCreate(CU_CTX_SCHED_BLOCKING_SYNC)");
        CUmodule module = null;
        List<CUstream> streams = new ArrayList<>();
        try {
            module = new CUmodule();
            check(cuModuleLoadData(module, DemoKernels.ptxText()), "cuModuleLoadData");
            CUfunction empty = new CUfunction();
            check(cuModuleGetFunction(empty, module, "empty_kernel"), "cuModuleGetFunction(empty_kernel)");
            CUfunction spin = new CUfunction();
            check(cuModuleGetFunction(spin, module, "spin_kernel"), "cuModuleGetFunction(spin_kernel)");
            for (int i = 0; i < STREAMS; i++) {
                CUstream st = new CUstream();
                check(cuStreamCreate(st, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
                streams.add(st);
            }
            Thread watchdog = watchdog(Method.POOL_BLOCKING, workers, total, kernelNanos, round, err,
                    () -> "blocking-sync context, no reactor");
            try {
                for (CUstream st : streams) {
                    check(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, st, null, null), "cuLaunchKernel(empty_kernel)");
                    check(cuStreamSynchronize(st), "cuStreamSynchronize");
                }
                if (kernelNanos > JIT_KERNEL_NANOS) {
                    blockingPool(workers, JIT_WARM_UP_LAUNCHES, JIT_KERNEL_NANOS, ctx, spin, streams);
                }
                blockingPool(workers, warmUpLaunches(total, kernelNanos), kernelNanos, ctx, spin, streams);
                long cpu0 = OS.getProcessCpuTime(), t0 = System.nanoTime();
                blockingPool(workers, total, kernelNanos, ctx, spin, streams);
                long wall = System.nanoTime() - t0, cpu = OS.getProcessCpuTime() - cpu0;
                return new Row(Method.POOL_BLOCKING, workers, round, total, wall, cpu, null);
            } finally {
                watchdog.interrupt();
            }
        } finally {
            cuCtxSetCurrent(ctx);
            for (CUstream st : streams) {
                cuStreamDestroy(st);
            }
            if (module != null) {
                cuModuleUnload(module);
            }
            cuCtxDestroy(ctx); // current here: also popped off this thread's stack, leaving it as before the create
        }
    }

    /**
     * {@code total} launches of {@code spin_kernel(kernelNanos)} by {@code workers} platform threads,
     * each making {@code ctx} current once, then launch + {@code cuStreamSynchronize} on stream
     * {@code index % STREAMS}, the argument packed per launch (as the library packs it).
     */
    private static void blockingPool(int workers, long total, long kernelNanos, CUcontext ctx, CUfunction spin,
            List<CUstream> streams) throws Exception {
        GpuBench.runAll(workers, false, i -> {
            check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
            CUstream st = streams.get(i % STREAMS);
            long n = share(total, workers, i);
            for (long r = 0; r < n; r++) {
                Pointer args = Pointer.to(Pointer.to(new long[] {kernelNanos}));
                check(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, st, args, null), "cuLaunchKernel(spin_kernel)");
                check(cuStreamSynchronize(st), "cuStreamSynchronize");
            }
        });
    }

    private static void check(int result, String what) {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new IllegalStateException(what + " failed: " + CUresult.stringFor(result));
        }
    }

    /** {@code total} launches by {@code workers} threads the way {@code m} waits; returns once all have completed. */
    private static void launchAndWait(Method m, int workers, long total, long kernelNanos, DemoKernels k, List<CudaStream> s)
            throws Exception {
        GpuBench.runAll(workers, m == Method.AWAIT, i -> {
            CudaStream st = s.get(i % STREAMS);
            long n = share(total, workers, i);
            for (long r = 0; r < n; r++) {
                k.launchSpin(st, kernelNanos);
                if (m == Method.AWAIT) {
                    st.await();
                } else if (m.isPool()) { // POOL_BLOCKING runs in blockingPool instead
                    st.synchronize();
                }
            }
            if (!m.isPool() && m != Method.AWAIT) {
                st.synchronize(); // the ceiling: one wait per thread, after all of its launches
            }
        });
    }
}
