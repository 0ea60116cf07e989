package io.cudaloom.bench;

import io.cudaloom.ReactorConfig;
import io.cudaloom.ReactorStats;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaStream;
import io.cudaloom.demo.DemoKernels;
import io.cudaloom.demo.ServletBench;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * The CPU, throughput and scale benchmarks of docs/BENCHMARKS.md (targets 2-4), on a CUDA device
 * (device 0). Each prints Markdown. On the GPU machine, after {@code ../shared/tools/gpu-bundle}:
 * <pre>
 *   bash .gpu/java io.cudaloom.bench.GpuBench cpu
 *       1,000 waiters on 5 ms kernels; idle scanner; one 100 ms waiter
 *   bash .gpu/java io.cudaloom.bench.GpuBench throughput [threads=10000] [awaits=100]
 *       10 us kernels, 8 streams: one launching thread, await(), 64 platform threads (the earlier table)
 *   bash .gpu/java io.cudaloom.bench.GpuBench sweep [threads=10000] [awaitsPerThread=100] [kernelsUs=10,50,200,1000] [rounds=2]
 *       per kernel length and round, side by side, each on a fresh device with 8 streams:
 *       await() on virtual threads, the same calls through a GpuBatcher (one kernel per batch),
 *       64 and availableProcessors() platform threads in
 *       synchronize(), and the driver's ceiling (8 and 16 threads launching back to back);
 *       one table per kernel length (see ThroughputSweep). Launches per row are capped so that
 *       launches x kernel / 8 streams &lt;= 8 s. About 5 min with the defaults on the H200 (an
 *       estimate: ~20 s for 10 us kernels, ~40-45 s each for 50, 200 and 1000 us, per round);
 *       e.g. {@code sweep kernelsUs=10,50} and {@code sweep kernelsUs=200,1000} split it in two.
 *   bash .gpu/java io.cudaloom.bench.GpuBench servlet [concurrency=100,10000] [seconds=10] [requests=1000000] [device=cuda|sim]
 *       the demo's ScaleServlet on Jetty's VirtualThreadPool with await(), then batched
 *       (a GpuBatcher per factor), then on Jetty's
 *       QueuedThreadPool (200 platform threads) with CudaStream.synchronize() (the primary
 *       context: spins), then on the same pool in cuStreamSynchronize on a context of its own
 *       created with CU_CTX_SCHED_BLOCKING_SYNC (raw JCuda: its threads sleep), loaded from
 *       127.0.0.1 at each concurrency for at most the given seconds and requests, each level by a
 *       load generator in a JVM of its own (a child process, same java and class path) that warms
 *       up first; requests/s, latency, and the server process's own CPU: cores busy and requests
 *       per CPU-second, then await() and batched against both pools (see
 *       io.cudaloom.demo.ServletBench). About 2 min with the defaults (an estimate: per level a
 *       JVM start, a warm-up of at most 5 s, the level; a child still running after 2 x seconds +
 *       50 s is killed); device=sim runs it without a GPU (the blocking-sync pool then reported as
 *       not available); exit code 1 if any request failed or a load generator failed.
 *   bash .gpu/java -Xmx512m io.cudaloom.bench.GpuBench scale [inFlight=100000]
 *       100,000 awaits, each behind its own kernel
 *   bash .gpu/java -Xmx512m io.cudaloom.bench.GpuBench scale-shared [inFlight=100000]
 *       the same number awaiting the work already queued, coalesced
 *   bash .gpu/java io.cudaloom.bench.GpuBench diag [threads=1000] [awaits=100] [await|coalesce|launch-only] [kernel us=10]
 *       one run; prints where workers are on a stall
 * </pre>
 * Parameters of sweep and servlet are given by position or as {@code name=value}, e.g.
 * {@code sweep kernelsUs=200,1000 rounds=1}; lists are comma-separated.
 */
public final class GpuBench {
    private static final int STREAMS = 8;
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    static final String USAGE = """
            usage: GpuBench cpu
                   GpuBench throughput [threads=10000] [awaits=100]
                   GpuBench sweep [threads=10000] [awaitsPerThread=100] [kernelsUs=10,50,200,1000] [rounds=2]
                   GpuBench servlet [concurrency=100,10000] [seconds=10] [requests=1000000] [device=cuda|sim]
                   GpuBench scale [inFlight=100000]
                   GpuBench scale-shared [inFlight=100000]
                   GpuBench diag [threads=1000] [awaits=100] [await|coalesce|launch-only] [kernel us=10]
            sweep and servlet take their parameters by position or as name=value (lists comma-separated).""";

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "";
        switch (mode) {
            case "cpu" -> cpu();
            case "throughput" -> throughput(arg(args, 1, 10_000), arg(args, 2, 100));
            case "sweep" -> ThroughputSweep.run(parsed(() -> ThroughputSweep.Settings.parse(args, 1)), System.out, System.err);
            case "servlet" -> {
                ServletArgs servlet = parsed(() -> servletArgs(args, 1));
                boolean ok = ServletBench.run(servlet.simulated()
                        ? io.cudaloom.sim.SimulatedDevice::create
                        : config -> CudaDevice.open(0, config), servlet.settings(), System.out, System.err);
                System.out.flush();
                System.exit(ok ? 0 : 1);
            }
            case "scale" -> scale(arg(args, 1, 100_000));
            case "scale-shared" -> scaleShared(arg(args, 1, 100_000));
            case "diag" -> diag(arg(args, 1, 1000), arg(args, 2, 100), args.length > 3 ? args[3] : "await",
                    args.length > 4 ? Long.parseLong(args[4]) * 1000L : 10_000L);
            default -> {
                System.err.println(USAGE);
                System.exit(2);
            }
        }
    }

    /** The parameters of {@code servlet}, and whether it runs on the simulated device ({@code device=sim}). */
    record ServletArgs(ServletBench.Settings settings, boolean simulated) {}

    /** The parameters of {@code servlet}: concurrency levels, seconds and requests per level, device. */
    static ServletArgs servletArgs(String[] args, int from) {
        Map<String, String> v = BenchArgs.bind(args, from, List.of(
                new BenchArgs.Param("concurrency", "100,10000"),
                new BenchArgs.Param("seconds", "10"),
                new BenchArgs.Param("requests", "1000000"),
                new BenchArgs.Param("device", "cuda")));
        String device = v.get("device").toLowerCase(Locale.ROOT);
        if (!device.equals("cuda") && !device.equals("sim")) {
            throw new IllegalArgumentException("device must be cuda or sim, was '" + v.get("device") + "'");
        }
        return new ServletArgs(ServletBench.Settings.of(BenchArgs.intList("concurrency", v.get("concurrency"), 1, 20_000),
                Duration.ofSeconds(BenchArgs.intValue("seconds", v.get("seconds"), 1, 600)),
                BenchArgs.intValue("requests", v.get("requests"), 1, 10_000_000)), device.equals("sim"));
    }

    /** The settings of {@code servlet} (see {@link #servletArgs}). */
    static ServletBench.Settings servletSettings(String[] args, int from) {
        return servletArgs(args, from).settings();
    }

    /** The parsed parameters, or the error and the usage on stderr and exit code 2. */
    private static <T> T parsed(Supplier<T> parse) {
        try {
            return parse.get();
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
            throw e; // not reached
        }
    }

    private static int arg(String[] args, int i, int dflt) {
        return args.length > i ? Integer.parseInt(args[i]) : dflt;
    }

    interface Body {
        void run(int index) throws Exception;
    }

    /** Runs body(0..n-1) on n threads (virtual or platform), rethrowing the first failure. */
    static void runAll(int n, boolean virtual, Body body) throws Exception {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int index = i;
            Runnable r = () -> {
                try {
                    body.run(index);
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            };
            threads.add(virtual ? Thread.ofVirtual().start(r) : Thread.ofPlatform().start(r));
        }
        for (Thread t : threads) {
            t.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("a worker failed", failure.get());
        }
    }

    static List<CudaStream> streams(CudaDevice d) {
        List<CudaStream> s = new ArrayList<>();
        for (int i = 0; i < STREAMS; i++) {
            s.add(d.newStream());
        }
        return s;
    }

    // ---- target 2: CPU ------------------------------------------------------------------------

    static void cpu() throws Exception {
        System.out.println("| scenario | wall | process CPU | cores busy (CPU / wall) | scanner CPU |");
        System.out.println("|---|---|---|---|---|");
        for (int round = 0; round < 2; round++) {
            try (CudaDevice d = CudaDevice.open(0); DemoKernels k = DemoKernels.load(d)) {
                List<CudaStream> s = streams(d);
                warm(d, k, s);
                long scanner0 = scannerCpu(d);
                long cpu0 = OS.getProcessCpuTime(), t0 = System.nanoTime();
                runAll(1000, true, i -> {
                    CudaStream st = s.get(i % STREAMS);
                    for (int r = 0; r < 3; r++) {
                        k.launchSpin(st, 5_000_000L);
                        st.await();
                    }
                });
                row("1,000 virtual threads x 3 awaits of 5 ms kernels, 8 streams, `await()`", cpu0, t0,
                        scannerCpu(d) - scanner0);
            }
            try (CudaDevice d = CudaDevice.open(0); DemoKernels k = DemoKernels.load(d)) {
                List<CudaStream> s = streams(d);
                warm(d, k, s);
                long cpu0 = OS.getProcessCpuTime(), t0 = System.nanoTime();
                runAll(1000, false, i -> {
                    CudaStream st = s.get(i % STREAMS);
                    for (int r = 0; r < 3; r++) {
                        k.launchSpin(st, 5_000_000L);
                        st.synchronize(); // cuStreamSynchronize on this platform thread
                    }
                });
                row("1,000 platform threads x 3 of the same, `cuStreamSynchronize`", cpu0, t0, 0);
            }
        }
        try (CudaDevice d = CudaDevice.open(0); DemoKernels k = DemoKernels.load(d)) {
            CudaStream st = d.newStream();
            k.launchEmpty(st);
            st.await();
            Thread.sleep(100); // let the scanner reach its idle park before measuring
            long scanner0 = scannerCpu(d), cpu0 = OS.getProcessCpuTime(), t0 = System.nanoTime();
            Thread.sleep(2000);
            row("nothing armed for 2 s (scanner parked)", cpu0, t0, scannerCpu(d) - scanner0);
            scanner0 = scannerCpu(d);
            cpu0 = OS.getProcessCpuTime();
            t0 = System.nanoTime();
            runAll(1, true, i -> {
                for (int r = 0; r < 10; r++) {
                    k.launchSpin(st, 100_000_000L);
                    st.await();
                }
            });
            long scanner = scannerCpu(d) - scanner0;
            row("one virtual thread, 10 x 100 ms kernel, `await()`", cpu0, t0, scanner);
            System.out.printf("%nscanner CPU while one waiter waits on 100 ms kernels: %.2f%% of a core%n",
                    100.0 * scanner / (System.nanoTime() - t0));
        }
    }

    static void warm(CudaDevice d, DemoKernels k, List<CudaStream> s) throws Exception {
        for (CudaStream st : s) {
            k.launchEmpty(st);
            st.await();
        }
    }

    private static long scannerCpu(CudaDevice d) {
        return d.reactor().stats().scannerCpuNanos();
    }

    private static void row(String what, long cpu0, long t0, long scannerNanos) {
        long wall = System.nanoTime() - t0, cpu = OS.getProcessCpuTime() - cpu0;
        System.out.printf("| %s | %.0f ms | %.0f ms | %.2f | %s |%n", what, wall / 1e6, cpu / 1e6,
                (double) cpu / wall, scannerNanos > 0 ? String.format("%.1f ms (%.2f%%)", scannerNanos / 1e6,
                        100.0 * scannerNanos / wall) : "-");
    }

    // ---- target 3: throughput -----------------------------------------------------------------

    static void throughput(int threads, int awaits) throws Exception {
        long kernel = 10_000L;
        long total = (long) threads * awaits;
        System.out.printf("10 us kernels over %d streams; %,d launches per measurement%n%n", STREAMS, total);
        System.out.println("| method | round | launches | seconds | completions/s | cores busy |");
        System.out.println("|---|---|---|---|---|---|");
        for (int round = 1; round <= 2; round++) {
            try (CudaDevice d = CudaDevice.open(0); DemoKernels k = DemoKernels.load(d)) {
                List<CudaStream> s = streams(d);
                warm(d, k, s);
                long cpu0 = OS.getProcessCpuTime(), t0 = System.nanoTime();
                for (long i = 0; i < total; i++) {
                    k.launchSpin(s.get((int) (i % STREAMS)), kernel);
                }
                d.synchronize();
                tput("GPU's own rate: one thread launches back to back, one synchronize", round, total, t0, cpu0);
            }
            try (CudaDevice d = CudaDevice.open(0, ReactorConfig.builder().capacity(Math.max(4096, threads)).build());
                    DemoKernels k = DemoKernels.load(d)) {
                List<CudaStream> s = streams(d);
                warm(d, k, s);
                long cpu0 = OS.getProcessCpuTime(), t0 = System.nanoTime();
                runAll(threads, true, i -> {
                    CudaStream st = s.get(i % STREAMS);
                    for (int r = 0; r < awaits; r++) {
                        k.launchSpin(st, kernel);
                        st.await();
                    }
                });
                tput(String.format("%,d virtual threads x %d, `await()`", threads, awaits), round, total, t0, cpu0);
                ReactorStats stats = d.reactor().stats();
                System.out.println("|  | stats | " + stats.registrations() + " registrations, "
                        + stats.inlineCompletions() + " inline, " + stats.immediate() + " already done, "
                        + stats.fallbacks() + " fallbacks |  |  |  |");
            }
            try (CudaDevice d = CudaDevice.open(0); DemoKernels k = DemoKernels.load(d)) {
                List<CudaStream> s = streams(d);
                warm(d, k, s);
                int pool = 64;
                int each = (int) Math.min(Integer.MAX_VALUE, Math.max(1, total / pool));
                long cpu0 = OS.getProcessCpuTime(), t0 = System.nanoTime();
                runAll(pool, false, i -> {
                    CudaStream st = s.get(i % STREAMS);
                    for (int r = 0; r < each; r++) {
                        k.launchSpin(st, kernel);
                        st.synchronize();
                    }
                });
                tput("64 platform threads, `cuStreamSynchronize`", round, (long) pool * each, t0, cpu0);
            }
        }
    }

    private static void tput(String what, int round, long n, long t0, long cpu0) {
        long wall = System.nanoTime() - t0, cpu = OS.getProcessCpuTime() - cpu0;
        double s = wall / 1e9;
        System.out.printf("| %s | %d | %,d | %.2f | %,.0f | %.2f |%n", what, round, n, s, n / s, (double) cpu / wall);
    }

    // ---- target 4: scale ----------------------------------------------------------------------

    static void scale(int inFlight) throws Exception {
        var mem = ManagementFactory.getMemoryMXBean();
        try (CudaDevice d = CudaDevice.open(0, ReactorConfig.builder().capacity(Math.max(4096, inFlight + 1024)).build());
                DemoKernels k = DemoKernels.load(d)) {
            List<CudaStream> s = streams(d);
            warm(d, k, s);
            for (CudaStream st : s) {
                k.launchSpin(st, 4_000_000_000L); // hold every stream for 4 s while the waiters arrive
            }
            long t0 = System.nanoTime();
            long[] peakArmed = {0};
            long[] heapAtPeak = {0};
            Thread watcher = Thread.ofPlatform().start(() -> {
                while (peakArmed[0] < inFlight && System.nanoTime() - t0 < 3_500_000_000L) {
                    peakArmed[0] = Math.max(peakArmed[0], d.reactor().stats().armedNow());
                    Thread.onSpinWait();
                }
                System.gc();
                heapAtPeak[0] = mem.getHeapMemoryUsage().getUsed();
            });
            runAll(inFlight, true, i -> {
                CudaStream st = s.get(i % STREAMS);
                k.launchEmpty(st);
                st.await();
            });
            watcher.join();
            double secs = (System.nanoTime() - t0) / 1e9;
            ReactorStats stats = d.reactor().stats();
            System.out.println("| in flight | peak armed | heap after GC at peak | max heap | all done in | fallbacks | slots in use after |");
            System.out.println("|---|---|---|---|---|---|---|");
            System.out.printf("| %,d | %,d | %.0f MiB | %.0f MiB | %.1f s | %d | %d |%n", inFlight, peakArmed[0],
                    heapAtPeak[0] / 1048576.0, Runtime.getRuntime().maxMemory() / 1048576.0, secs, stats.fallbacks(),
                    stats.armedNow());
            if (peakArmed[0] < inFlight) {
                System.out.println("note: not all awaits were armed at once before the streams drained");
            }
        }
    }

    /**
     * Diagnostic for target 3: one configuration per process (run it under {@code timeout}).
     * {@code threads} workers x {@code awaits} steps of a 10 us kernel on 8 streams; {@code kind}:
     * {@code await} (virtual threads, launch then await), {@code coalesce} (the same, coalescing on)
     * or {@code launch-only} (platform threads launching back to back, one synchronize at the end).
     * ({@code kernelNanos}: the spin kernel's length, 10 us by default.) After 12 s it prints progress, the reactor's state and where a sample of the workers are
     * (thread state and top frames), then halts.
     */
    static void diag(int threads, int awaits, String kind, long kernelNanos) throws Exception {
        ReactorConfig.Builder cfg = ReactorConfig.builder().capacity(Math.max(4096, threads + 1024));
        if (kind.equals("coalesce")) {
            cfg.coalesce(true);
        }
        try (CudaDevice d = CudaDevice.open(0, cfg.build()); DemoKernels k = DemoKernels.load(d)) {
            List<CudaStream> s = streams(d);
            warm(d, k, s);
            AtomicLong done = new AtomicLong();
            List<Thread> workers = Collections.synchronizedList(new ArrayList<>());
            long t0 = System.nanoTime();
            Thread watchdog = Thread.ofPlatform().daemon().start(() -> {
                try {
                    Thread.sleep(12_000);
                } catch (InterruptedException e) {
                    return;
                }
                System.out.printf("STALL %s threads=%d: done %,d of %,d after 12 s; %s%n", kind, threads, done.get(),
                        (long) threads * awaits, d.reactor().stats());
                Map<String, Integer> where = new TreeMap<>();
                List<Thread> sample;
                synchronized (workers) {
                    sample = new ArrayList<>(workers.subList(0, Math.min(2000, workers.size())));
                }
                for (Thread t : sample) {
                    StackTraceElement[] st = t.getStackTrace();
                    StringBuilder b = new StringBuilder(t.getState().toString());
                    for (int i = 0; i < Math.min(4, st.length); i++) {
                        b.append(" < ").append(st[i].getClassName().replaceAll(".*\\.", "")).append('.')
                                .append(st[i].getMethodName());
                    }
                    where.merge(b.toString(), 1, Integer::sum);
                }
                where.forEach((w, n) -> System.out.printf("  %5d  %s%n", n, w));
                // A lost wake-up (docs/LOST-WAKEUP.md) would show as workers that finish once unparked by hand.
                for (Thread t : sample) {
                    if (t.isAlive()) {
                        LockSupport.unpark(t);
                    }
                }
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
                System.out.println(" after a manual unpark of the stuck ones: done " + done.get());
                System.out.println("  reactor " + d.reactor().stats());
                System.out.flush();
                Runtime.getRuntime().halt(3);
            });
            boolean virtual = !kind.equals("launch-only");
            runAll(threads, virtual, i -> {
                workers.add(Thread.currentThread());
                CudaStream st = s.get(i % STREAMS);
                for (int r = 0; r < awaits; r++) {
                    k.launchSpin(st, kernelNanos);
                    if (virtual) {
                        st.await();
                    }
                    done.incrementAndGet();
                }
            });
            d.synchronize();
            watchdog.interrupt();
            double secs = (System.nanoTime() - t0) / 1e9;
            System.out.printf("| %s | %,d | %d | %.2f s | %,.0f/s | %s |%n", kind, threads, awaits, secs,
                    threads * (double) awaits / secs, d.reactor().stats());
        }
    }

    /**
     * Target 4 with coalescing: {@code inFlight} virtual threads all await the work already on 8
     * streams (a 3 s kernel each), so every one of them is parked at once; waiters behind the same
     * work share a slot and a device write.
     */
    static void scaleShared(int inFlight) throws Exception {
        var mem = ManagementFactory.getMemoryMXBean();
        try (CudaDevice d = CudaDevice.open(0, ReactorConfig.builder().coalesce(true).build());
                DemoKernels k = DemoKernels.load(d)) {
            List<CudaStream> s = streams(d);
            warm(d, k, s);
            for (CudaStream st : s) {
                k.launchSpin(st, 3_000_000_000L);
            }
            long t0 = System.nanoTime();
            AtomicInteger parked = new AtomicInteger();
            long[] heap = {0};
            long[] parkedAtPeak = {0};
            Thread watcher = Thread.ofPlatform().start(() -> {
                while (System.nanoTime() - t0 < 2_500_000_000L) {
                    ReactorStats st = d.reactor().stats();
                    if (st.coalesced() + st.registrations() >= inFlight) {
                        break;
                    }
                    Thread.onSpinWait();
                }
                ReactorStats st = d.reactor().stats();
                parkedAtPeak[0] = st.coalesced() + st.registrations() + st.fallbacks();
                System.gc();
                heap[0] = mem.getHeapMemoryUsage().getUsed();
            });
            runAll(inFlight, true, i -> s.get(i % STREAMS).event().await());
            watcher.join();
            ReactorStats stats = d.reactor().stats();
            System.out.println("| in flight | registered before the kernels ended | slots armed | coalesced | heap after GC | max heap | all done in | fallbacks |");
            System.out.println("|---|---|---|---|---|---|---|---|");
            System.out.printf("| %,d | %,d | %,d | %,d | %.0f MiB | %.0f MiB | %.1f s | %d |%n", inFlight, parkedAtPeak[0],
                    stats.registrations(), stats.coalesced(), heap[0] / 1048576.0,
                    Runtime.getRuntime().maxMemory() / 1048576.0, (System.nanoTime() - t0) / 1e9, stats.fallbacks());
        }
    }
}
