package io.cudaloom.demo;

import io.cudaloom.AwaitLatency;
import io.cudaloom.GpuDevice;
import io.cudaloom.ReactorConfig;
import io.cudaloom.ReactorStats;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaDriverException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * {@code GpuBench servlet}: the demo's {@link ScaleServlet} served four ways, each loaded by the
 * demo's {@link LoadGenerator} at the same concurrency levels from 127.0.0.1, after a floor that
 * does no device work at all (Jetty's {@code VirtualThreadPool}, the vector scaled on the request's
 * thread: what the HTTP server costs per request alone, and the most requests/s this load
 * generator can get from it):
 * <ol>
 *   <li>Jetty's {@code VirtualThreadPool}, the workload waiting with {@code await()} (the demo's
 *       server as it is);
 *   <li>Jetty's {@code VirtualThreadPool}, the workload a {@link BatchedWorkload}: each request's
 *       vector one call of a {@link io.cudaloom.GpuBatcher} (one per factor the load asks for, 1 to
 *       {@value LoadGenerator#MAX_FACTOR}), up to {@value #BATCH_MAX} vectors per launch;
 *   <li>the spinning pool: Jetty's default {@code QueuedThreadPool} of 200 platform threads, the
 *       workload waiting with {@code CudaStream.synchronize()} ({@link DemoWorkload.WaitBy#SYNCHRONIZE}).
 *       The library's {@link CudaDevice} retains the primary context, whose default scheduling
 *       ({@code CU_CTX_SCHED_AUTO}) spins in {@code cuStreamSynchronize} while the process has fewer
 *       active contexts than cores: its waiting threads burn CPU;
 *   <li>the blocking-sync pool, the honest CPU competitor of {@code await()} (issues #37, #39): the
 *       same 200-thread {@code QueuedThreadPool}, the same step in raw JCuda on a context of its own
 *       created with {@code CU_CTX_SCHED_BLOCKING_SYNC} ({@link BlockingSyncWorkload}: its own module
 *       from {@link DemoKernels}' PTX, non-blocking streams, the same pooled pinned and device
 *       blocks, copies, {@code scale_f32} launch and vector length), so its threads sleep in
 *       {@code cuStreamSynchronize}. No library device is open while it runs (one is opened and
 *       closed first, to learn which device {@code open} gives), so no reactor's scanner runs
 *       either. It needs a CUDA device: on the simulated device, which has no such context, its
 *       rows say "not available" (there the {@code synchronize()} server already parks its threads
 *       on a latch) and do not fail the run.
 * </ol>
 * Each server runs on a freshly opened device, in this process. Each level's load comes from a
 * JVM of its own ({@link LoadGeneratorProcess}: a child process with this JVM's {@code java} and
 * class path), which first warms up (not reported), then runs the level. Every level is bounded in
 * requests and time, every response body is checked, and a child that fails or outlives its bound
 * is killed and reported as an error. The server figures (CPU time, cores busy, requests per
 * CPU-second, platform threads) are this process's alone, which hosts only the server, the device
 * and its reactor, taken over the level's window (from the child's start signal to its last
 * answer); the client's CPU is shown apart.
 *
 * <p>After the table, a second one ({@link #ratioTable}) sets the {@code await()} and batched
 * servers against both pools at each level: requests/s (x each pool), p99, server CPU per request,
 * and requests per CPU-second (x each pool).
 *
 * <p>Two more servers run only when {@code -Dservlet.servers} names them, after the others: the held
 * floor ({@link #HELD_FLOOR}: the HTTP floor with each request held, at about the {@code await()}
 * server's rate) and the minimal server ({@link #MINIMAL}: the same step waited for by
 * {@code MinimalReactor}, no project code). The GPU-path table ({@link #gpuPathTable}) sets the
 * {@code await()} server's CPU per request over the floor, the held floor and the minimal server's.
 */
public final class ServletBench {
    /** Simulated kernel time per request on the simulated device (the demo's default); a GPU takes what it takes. */
    static final Duration SIM_KERNEL_TIME = Duration.ofNanos(20_000);
    /** The batched server's batchers: the most vectors in one launch. */
    static final int BATCH_MAX = 256;

    private ServletBench() {}

    /**
     * What to run.
     *
     * @param concurrency the concurrency levels, each 1..{@value DemoServer#MAX_CONCURRENT}
     * @param timeLimit per level (requests in flight at the limit may take as long again)
     * @param requestsPerLevel at most this many requests per level
     * @param warmUpRequests requests of the warm-up that each level's load generator JVM runs (16 at
     *     a time) before the level, not reported
     * @param warmUpTime time limit of that warm-up
     * @param streams streams the workload shares round-robin
     */
    public record Settings(List<Integer> concurrency, Duration timeLimit, int requestsPerLevel, int warmUpRequests,
            Duration warmUpTime, int streams) {
        public Settings {
            concurrency = List.copyOf(concurrency);
            Objects.requireNonNull(timeLimit, "timeLimit");
            Objects.requireNonNull(warmUpTime, "warmUpTime");
            if (concurrency.isEmpty()) {
                throw new IllegalArgumentException("no concurrency level");
            }
            for (int c : concurrency) {
                if (c < 1 || c > DemoServer.MAX_CONCURRENT) {
                    throw new IllegalArgumentException("concurrency must be between 1 and " + DemoServer.MAX_CONCURRENT
                            + ", was " + c);
                }
            }
            if (requestsPerLevel < 1 || warmUpRequests < 1 || streams < 1) {
                throw new IllegalArgumentException("requestsPerLevel, warmUpRequests and streams must be >= 1");
            }
        }

        /**
         * The benchmark's settings: at most 1,000,000 requests or {@code timeLimit} per level, the
         * demo's warm-up ({@value DemoMain#WARM_UP_REQUESTS} requests or 5 s) in each level's load
         * generator JVM, 8 streams.
         */
        public static Settings of(List<Integer> concurrency, Duration timeLimit) {
            return of(concurrency, timeLimit, 1_000_000);
        }

        /** {@link #of(List, Duration)} with at most {@code requestsPerLevel} requests per level. */
        public static Settings of(List<Integer> concurrency, Duration timeLimit, int requestsPerLevel) {
            return new Settings(concurrency, timeLimit, requestsPerLevel, DemoMain.WARM_UP_REQUESTS,
                    DemoMain.WARM_UP_TIME, 8);
        }
    }

    /**
     * One server configuration; {@code batched}: a {@link BatchedWorkload} ({@code waitBy} unused);
     * {@code blockingSync}: a {@link BlockingSyncWorkload} on a {@code CU_CTX_SCHED_BLOCKING_SYNC}
     * context of its own (a CUDA device only; see {@link ServletBench}); {@code held}: the floor's
     * workload with each request held ({@link HeldFloorWorkload}); {@code minimal}: the step waited for
     * by {@code MinimalReactor} instead of the library ({@link MinimalWorkload}).
     */
    record Variant(DemoServer.RequestThreads threads, DemoWorkload.WaitBy waitBy, boolean batched, boolean blockingSync,
            boolean held, boolean minimal) {
        Variant(DemoServer.RequestThreads threads, DemoWorkload.WaitBy waitBy) {
            this(threads, waitBy, false, false, false, false);
        }

        Variant(DemoServer.RequestThreads threads, DemoWorkload.WaitBy waitBy, boolean batched) {
            this(threads, waitBy, batched, false, false, false);
        }

        Variant(DemoServer.RequestThreads threads, DemoWorkload.WaitBy waitBy, boolean batched, boolean blockingSync) {
            this(threads, waitBy, batched, blockingSync, false, false);
        }

        /** The streams of each of the batched server's batchers: the settings' streams over 4, at least 1 (as the demo's --batch). */
        static int streamsPerFactor(int streams) {
            return Math.max(1, streams / 4);
        }

        /** This server's workload on {@code device} (not for the blocking-sync pool, which has no device: see run). */
        DemoWorkload workload(GpuDevice device, Settings s) {
            if (blockingSync) {
                throw new IllegalStateException("the blocking-sync pool's workload is a raw context of its own");
            }
            if (batched) {
                return new BatchedWorkload(device, streamsPerFactor(s.streams()), BATCH_MAX, 1, LoadGenerator.MAX_FACTOR);
            }
            return DemoWorkload.forDevice(device, s.streams(), SIM_KERNEL_TIME, waitBy);
        }

        String label(boolean simulated) {
            if (minimal) {
                return "Jetty VirtualThreadPool, the step waited for by MinimalReactor (no project code)"
                        + (simulated ? ", on its in-process stand-in" : "");
            }
            if (held) {
                return "Jetty VirtualThreadPool, no device work, each request held (the HTTP floor at the `await()` server's rate)";
            }
            if (batched) {
                return "Jetty VirtualThreadPool, batched (`GpuBatcher.call`, up to " + BATCH_MAX + " vectors per launch)";
            }
            String pool = threads == DemoServer.RequestThreads.VIRTUAL
                    ? "Jetty VirtualThreadPool"
                    : "Jetty QueuedThreadPool (" + DemoServer.RequestThreads.PLATFORM_POOL_SIZE + " platform threads)";
            if (blockingSync) {
                return pool + ", `cuStreamSynchronize` on a `CU_CTX_SCHED_BLOCKING_SYNC` context (raw JCuda)";
            }
            String wait = waitBy == DemoWorkload.WaitBy.AWAIT ? "`await()`"
                    : waitBy == DemoWorkload.WaitBy.HOST_ONLY ? "no device work (the HTTP floor)"
                    : simulated ? "blocking wait (simulated synchronize)" : "`synchronize()` (cuStreamSynchronize)";
            return pool + ", " + wait;
        }
    }

    /** The floor: virtual threads, no device work. */
    static final Variant FLOOR = new Variant(DemoServer.RequestThreads.VIRTUAL, DemoWorkload.WaitBy.HOST_ONLY);
    /** Virtual threads, {@code await()}. */
    static final Variant AWAIT = new Variant(DemoServer.RequestThreads.VIRTUAL, DemoWorkload.WaitBy.AWAIT);
    /** Virtual threads, a {@link BatchedWorkload}. */
    static final Variant BATCHED = new Variant(DemoServer.RequestThreads.VIRTUAL, DemoWorkload.WaitBy.AWAIT, true);
    /** 200 platform threads in {@code CudaStream.synchronize()} on the library's (spinning) primary context. */
    static final Variant SPINNING_POOL = new Variant(DemoServer.RequestThreads.PLATFORM_200, DemoWorkload.WaitBy.SYNCHRONIZE);
    /** 200 platform threads in {@code cuStreamSynchronize} on a blocking-sync context (raw JCuda). */
    static final Variant BLOCKING_POOL = new Variant(DemoServer.RequestThreads.PLATFORM_200, DemoWorkload.WaitBy.SYNCHRONIZE,
            false, true);

    /**
     * The servers, in order: first the floor (virtual threads, no device work: what Jetty, HTTP and
     * the client cost alone, which no way of waiting can go below), then the four compared.
     */
    /** The benchmark's knob for {@link ReactorConfig#relayWakeups()} (default true, the library's default). */
    static final String RELAY_PROPERTY = "servlet.relayWakeups";

    /**
     * The benchmark's knob for {@link ReactorConfig#flagWritesInFlight()} (default: the library's):
     * how many shared flag writes each stream may have pending before new waiters gather behind
     * the next. With one, under a deep queue a waiter that joins the open group just after the
     * pending write was armed waits for that write and then for its own group's, behind everything
     * queued meanwhile: up to two queue lengths, against one for a waiter that joins just before.
     */
    static final String WRITES_PROPERTY = "servlet.flagWritesInFlight";

    /** {@link #WRITES_PROPERTY}: 1 to 64, else the library's default; anything else is refused. */
    static int flagWritesInFlight() {
        String value = System.getProperty(WRITES_PROPERTY);
        if (value == null) {
            return ReactorConfig.defaults().flagWritesInFlight();
        }
        try {
            int writes = Integer.parseInt(value.strip());
            ReactorConfig.builder().flagWritesInFlight(writes); // its own bounds, its own message
            return writes;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(WRITES_PROPERTY + " must be a whole number, was '" + value + "'");
        }
    }

    /** {@link #RELAY_PROPERTY}: true unless set to false; any other value is refused. */
    static boolean relayWakeups() {
        String value = System.getProperty(RELAY_PROPERTY, "true");
        return switch (value) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException(RELAY_PROPERTY + " must be true or false, was '" + value + "'");
        };
    }

    static final List<Variant> VARIANTS = List.of(FLOOR, AWAIT, BATCHED, SPINNING_POOL, BLOCKING_POOL);

    /**
     * The floor held: virtual threads, no device work, each request held ({@link HeldFloorWorkload})
     * for as long as makes HTTP answer at about the {@code await()} server's rate: a first pass at
     * the {@code await()} server's p50 over the floor's ({@link #holdFor}), then one adjusted by
     * Little's law ({@link #heldLevels}). Runs only when named ({@code -Dservlet.servers=floor,await,held}),
     * after the others.
     */
    static final Variant HELD_FLOOR = new Variant(DemoServer.RequestThreads.VIRTUAL, DemoWorkload.WaitBy.HOST_ONLY, false,
            false, true, false);

    /**
     * The step waited for by {@code MinimalReactor} ({@link MinimalWorkload}): virtual threads, the
     * same driver calls, the fewest parts that wait the way the library does, no project code. Its
     * server CPU per request is the {@code await()} server's without the library's own code (the
     * GPU-path table shows the difference). Runs only when named, after the others; on the simulated
     * device, on MinimalReactor's stand-in (the figures mean nothing there).
     */
    static final Variant MINIMAL = new Variant(DemoServer.RequestThreads.VIRTUAL, DemoWorkload.WaitBy.AWAIT, false,
            false, false, true);

    /** The knob for the held floor's hold when the run has no await() and floor p50 to take it from: milliseconds. */
    static final String HOLD_PROPERTY = "servlet.holdMillis";
    /** The hold without the knob or the two p50s: the await() server's p50 over the floor's on an H100 at 10,000 (s16-run27). */
    static final Duration DEFAULT_HOLD = Duration.ofMillis(33);

    /**
     * The benchmark's knob for which servers run ({@link #servers}), e.g. {@code -Dservlet.servers=floor,await}
     * for a profile of the {@code await()} server beside its HTTP floor alone. Default: all five.
     */
    static final String SERVERS_PROPERTY = "servlet.servers";

    /** Every server {@link #SERVERS_PROPERTY} can name: {@link #VARIANTS}, then {@link #HELD_FLOOR} and {@link #MINIMAL}. */
    static final List<Variant> ALL_VARIANTS = List.of(FLOOR, AWAIT, BATCHED, SPINNING_POOL, BLOCKING_POOL, HELD_FLOOR,
            MINIMAL);

    /** The names {@link #SERVERS_PROPERTY} takes, one per server of {@link #ALL_VARIANTS}, in its order. */
    static final List<String> SERVER_NAMES = List.of("floor", "await", "batched", "spinning", "blocking", "held",
            "minimal");

    /**
     * The servers {@code spec} names (comma-separated names of {@link #SERVER_NAMES}, in any order;
     * null or blank: the five of {@link #VARIANTS}), in the order of {@link #SERVER_NAMES}. An
     * unknown name is refused with the names it takes.
     */
    static List<Variant> servers(@Nullable String spec) {
        if (spec == null || spec.isBlank()) {
            return VARIANTS;
        }
        Set<String> wanted = new LinkedHashSet<>();
        for (String name : spec.split(",")) {
            String n = name.strip();
            if (!SERVER_NAMES.contains(n)) {
                throw new IllegalArgumentException(SERVERS_PROPERTY + " takes names of " + SERVER_NAMES + ", was '" + n + "'");
            }
            wanted.add(n);
        }
        List<Variant> chosen = new ArrayList<>();
        for (int i = 0; i < ALL_VARIANTS.size(); i++) {
            if (wanted.contains(SERVER_NAMES.get(i))) {
                chosen.add(ALL_VARIANTS.get(i));
            }
        }
        return chosen;
    }

    /**
     * The held floor's hold at level {@code level}: {@link #HOLD_PROPERTY} if set; else the
     * {@code await()} server's p50 over the floor's at that level, where both ran in this run
     * (never below 0); else {@link #DEFAULT_HOLD}.
     */
    static Duration holdFor(Map<Variant, List<LoadGeneratorProcess.Outcome>> results, int level) {
        String knob = System.getProperty(HOLD_PROPERTY);
        if (knob != null) {
            long millis;
            try {
                millis = Long.parseLong(knob.strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(HOLD_PROPERTY + " must be a whole number of milliseconds, was '" + knob
                        + "'");
            }
            if (millis < 0) {
                throw new IllegalArgumentException(HOLD_PROPERTY + " must be >= 0, was " + millis);
            }
            return Duration.ofMillis(millis);
        }
        LoadGenerator.Level await = level(outcome(results, AWAIT, level));
        LoadGenerator.Level floor = level(outcome(results, FLOOR, level));
        if (await == null || floor == null) {
            return DEFAULT_HOLD;
        }
        return Duration.ofNanos(Math.max(0L, await.p50() - floor.p50()));
    }

    /** Why the blocking-sync pool does not run on the simulated device (its rows' note). */
    static final String NOT_ON_SIMULATED = "the simulated device has no CUDA context to create with"
            + " CU_CTX_SCHED_BLOCKING_SYNC (device=cuda runs it); there the synchronize() server above already parks"
            + " its threads (on a latch counted down behind the work) instead of spinning";

    static String tableHeader() {
        return "| server | concurrency | protocol | ok | failed | requests/s | p50 ms | p99 ms | server CPU s"
                + " | cores busy (server) | requests per CPU-second (server) | peak platform threads (server)"
                + " | load generator CPU s (own JVM) |\n"
                + "|---|---|---|---|---|---|---|---|---|---|---|---|---|";
    }

    static String markdown(String server, int concurrency, LoadGeneratorProcess.Outcome o) {
        LoadGenerator.Level l = o.level();
        if (l == null) {
            return placeholderRow(server, concurrency, "error");
        }
        String cpu = o.serverCpuNanos() < 0 ? "n/a" : String.format(Locale.ROOT, "%.2f", o.serverCpuNanos() / 1e9);
        double coresBusy = o.serverCoresBusy();
        String cores = Double.isNaN(coresBusy) ? "n/a" : String.format(Locale.ROOT, "%.2f", coresBusy);
        double perCpuSecond = o.requestsPerServerCpuSecond();
        String perCpu = Double.isNaN(perCpuSecond) ? "n/a" : String.format(Locale.ROOT, "%,.0f", perCpuSecond);
        String client = l.cpuNanos() < 0 ? "n/a" : String.format(Locale.ROOT, "%.2f", l.cpuNanos() / 1e9);
        return String.format(Locale.ROOT, "| %s | %,d | %s | %,d | %,d | %,.0f | %.2f | %.2f | %s | %s | %s | %d | %s |",
                server, l.concurrency(), l.protocol(), l.ok(), l.failed(), l.requestsPerSecond(), l.p50() / 1e6,
                l.p99() / 1e6, cpu, cores, perCpu, o.serverPeakPlatformThreads(), client);
    }

    /** A row with no figures: {@code what} in the protocol column ("error", "not available"), "-" in the rest. */
    static String placeholderRow(String server, int concurrency, String what) {
        return String.format(Locale.ROOT, "| %s | %,d | %s | - | - | - | - | - | - | - | - | - | - |", server,
                concurrency, what);
    }

    /**
     * Runs every server at every level: a markdown table on {@code out}, then the await and batched
     * servers against both pools ({@link #ratioTable}), then notes; progress and the load
     * generators' stderr on {@code err}.
     *
     * @param open opens the device for one server (e.g. CUDA device 0), given the reactor configuration
     * @return true if every request of every level was answered correctly (the blocking-sync pool's
     *     levels, where it is not available, count as neither)
     */
    public static boolean run(Function<ReactorConfig, GpuDevice> open, Settings s, PrintStream out, PrintStream err)
            throws Exception {
        // One slot per concurrent request at most, as the demo's --load does. -Dservlet.relayWakeups=false
        // (a benchmark knob, not the library's) measures the servers with ReactorConfig.relayWakeups off.
        boolean relay = relayWakeups();
        int writes = flagWritesInFlight();
        ReactorConfig config = ReactorConfig.builder()
                .capacity(Math.max(ReactorConfig.defaults().capacity(), DemoServer.MAX_CONCURRENT))
                .relayWakeups(relay).flagWritesInFlight(writes).build();
        out.printf(Locale.ROOT, "## GpuBench servlet: GET /scale on 127.0.0.1, up to %,d requests or %d s per level;"
                + " load from a separate JVM per level; open-file limit %,d; %d cores; Java %s%s%n%n",
                s.requestsPerLevel(), s.timeLimit().toSeconds(), ProcessMetrics.maxFileDescriptors(),
                Runtime.getRuntime().availableProcessors(), Runtime.version(),
                (relay ? "" : "; relayed wake-ups off (" + RELAY_PROPERTY + "=false)")
                        + (writes == ReactorConfig.defaults().flagWritesInFlight() ? ""
                                : "; " + writes + " flag writes in flight per stream (" + WRITES_PROPERTY + ")")
                        + (LoadGenerator.platformWorkers() ? "; the load generator's workers are platform threads ("
                        + LoadGenerator.WORKER_THREADS_PROPERTY + "=platform)" : ""));
        out.println(tableHeader());
        out.flush();
        List<String> notes = new ArrayList<>();
        Map<Variant, List<LoadGeneratorProcess.Outcome>> results = new LinkedHashMap<>();
        boolean allOk = true;
        for (Variant v : servers(System.getProperty(SERVERS_PROPERTY))) {
            List<LoadGeneratorProcess.Outcome> outcomes = new ArrayList<>();
            results.put(v, outcomes);
            if (v.blockingSync()) {
                allOk &= blockingSyncServer(v, open, config, s, out, err, notes, outcomes);
                continue;
            }
            if (v.minimal()) {
                allOk &= minimalServer(v, open, config, s, out, err, notes, outcomes);
                continue;
            }
            try (GpuDevice device = open.apply(config);
                 DemoWorkload workload = v.held() ? new HeldFloorWorkload(v.workload(device, s), Duration.ZERO) // heldLevels sets each level's hold
                         : v.workload(device, s);
                 DemoServer server = DemoServer.start(workload, 0, v.threads())) {
                String label = v.label(device.isSimulated());
                ReactorStats before = device.reactor().stats();
                if (workload instanceof HeldFloorWorkload held) {
                    allOk &= heldLevels(label, held, results, server.port(), s, out, err, notes, outcomes);
                } else {
                    allOk &= levels(label, server.port(), s, out, err, notes, outcomes);
                }
                ReactorStats after = DemoRun.awaitQuiescence(workload);
                String batches = workload instanceof BatchedWorkload b
                        ? String.format(Locale.ROOT, "; %,d batches over the levels (warm-ups included)", b.batches()) : "";
                // The reactor's own await-latency histogram (recorded by every await anyway, so reading it
                // costs the requests nothing): how much of a request's latency, and of its tail, is the wait.
                AwaitLatency waits = device.reactor().awaitLatency();
                String awaits = waits.count() == 0 ? "" : String.format(Locale.ROOT, "; awaits over the levels"
                        + " (warm-ups included, the reactor's histogram): %,d, p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms,"
                        + " max %.2f ms", waits.count(), waits.p50Nanos() / 1e6, waits.p99Nanos() / 1e6,
                        waits.p999Nanos() / 1e6, waits.maxNanos() / 1e6);
                notes.add(String.format(Locale.ROOT, "%s: %s; reactor over the levels (warm-ups included): %,d"
                        + " registrations, %,d inline, %,d already done, %,d fallbacks%s%s", label, workload.description(),
                        after.registrations() - before.registrations(), after.inlineCompletions() - before.inlineCompletions(),
                        after.immediate() - before.immediate(), after.fallbacks() - before.fallbacks(), batches, awaits));
            }
        }
        out.println();
        for (String line : ratioTable(s.concurrency(), results)) {
            out.println(line);
        }
        if (results.containsKey(AWAIT) && results.containsKey(FLOOR)) {
            out.println();
            for (String line : gpuPathTable(s.concurrency(), results)) {
                out.println(line);
            }
        }
        out.println();
        for (String n : notes) {
            out.println("- " + n);
        }
        out.println("- Load: each level from its own JVM (a child process: this JVM's java binary and class path),"
                + " which warms up first (not measured); requests/s, p50 and p99 are the child's, over its timed requests.");
        out.println("- Server CPU: this process's CPU time alone (Jetty, the workload, the device and its reactor),"
                + " from the child's start signal to its last answer; cores busy = server CPU / that window;"
                + " requests per CPU-second = ok / server CPU. Peak platform threads: this process's. The load"
                + " generator's own CPU over its timed requests is the last column, not counted.");
        out.println(allOk ? "result: every request answered correctly" : "result: some requests failed (see above)");
        return allOk;
    }

    /**
     * Runs every level of {@code s} against the server on {@code port}: a row each on {@code out},
     * what went wrong in {@code notes}, each level's outcome added to {@code outcomes}. Returns true
     * if every request of every level was answered correctly.
     */
    private static boolean levels(String label, int port, Settings s, PrintStream out, PrintStream err,
            List<String> notes, List<LoadGeneratorProcess.Outcome> outcomes) throws InterruptedException {
        boolean allOk = true;
        for (int i = 0; i < s.concurrency().size(); i++) {
            allOk &= level(label, port, s, i, out, err, notes, outcomes);
        }
        return allOk;
    }

    /**
     * The held floor's levels. Each level runs first with the hold {@link #holdFor} gives (its row
     * labelled "first hold", not counted); then, unless {@link #HOLD_PROPERTY} fixed the hold, once
     * more with the hold adjusted so that the requests take as long as the {@code await()}
     * server's on average (Little's law: a request of a closed loop of {@code c} connections takes
     * {@code c / rate}): the first hold plus the {@code await()} server's {@code c / rate} minus the
     * first pass's, never below 0. That second pass is the level's row and outcome.
     */
    private static boolean heldLevels(String label, HeldFloorWorkload held, Map<Variant, List<LoadGeneratorProcess.Outcome>> results,
            int port, Settings s, PrintStream out, PrintStream err, List<String> notes,
            List<LoadGeneratorProcess.Outcome> outcomes) throws InterruptedException {
        boolean allOk = true;
        for (int i = 0; i < s.concurrency().size(); i++) {
            int c = s.concurrency().get(i);
            Duration first = holdFor(results, i);
            held.hold(first);
            String at = String.format(Locale.ROOT, "%s, %,d concurrent", label, c);
            if (System.getProperty(HOLD_PROPERTY) != null) {
                notes.add(String.format(Locale.ROOT, "%s: each request held %.2f ms (%s)", at, first.toNanos() / 1e6,
                        HOLD_PROPERTY));
                allOk &= level(label, port, s, i, out, err, notes, outcomes);
                continue;
            }
            List<LoadGeneratorProcess.Outcome> firstPass = new ArrayList<>();
            allOk &= level(label + " (first hold)", port, s, i, out, err, notes, firstPass);
            double awaitRate = requestsPerSecond(outcome(results, AWAIT, i));
            double firstRate = requestsPerSecond(firstPass.get(0));
            Duration adjusted = first;
            if (!Double.isNaN(awaitRate) && !Double.isNaN(firstRate) && awaitRate > 0 && firstRate > 0) {
                long nanos = first.toNanos() + Math.round((c / awaitRate - c / firstRate) * 1e9);
                adjusted = Duration.ofNanos(Math.max(0L, nanos));
            }
            held.hold(adjusted);
            notes.add(String.format(Locale.ROOT, "%s: each request held %.2f ms (the first hold %.2f ms, the `await()`"
                    + " server's p50 over the floor's; then adjusted by the `await()` server's time per request,"
                    + " concurrency / requests/s, %.2f ms, over the first pass's, %.2f ms)", at, adjusted.toNanos() / 1e6,
                    first.toNanos() / 1e6, c / awaitRate * 1e3, c / firstRate * 1e3));
            allOk &= level(label, port, s, i, out, err, notes, outcomes);
        }
        return allOk;
    }

    /** One level (index {@code i} of {@code s}) against the server on {@code port}; see {@link #levels}. */
    private static boolean level(String label, int port, Settings s, int i, PrintStream out, PrintStream err,
            List<String> notes, List<LoadGeneratorProcess.Outcome> outcomes) throws InterruptedException {
        int c = s.concurrency().get(i);
        LoadGeneratorProcess.Request request = new LoadGeneratorProcess.Request(port, c, s.requestsPerLevel(),
                s.timeLimit(), s.warmUpRequests(), s.warmUpTime(), LoadGenerator.Protocol.AUTO);
        err.printf(Locale.ROOT, "servlet: %s: %,d concurrent (a new load generator JVM: warm-up of %,d"
                + " requests or %d s, then the level; killed after %d s)%n", label, c, s.warmUpRequests(),
                s.warmUpTime().toSeconds(), request.childLimit().toSeconds());
        LoadGeneratorProcess.Outcome o = LoadGeneratorProcess.run(request, err);
        outcomes.add(o);
        out.println(markdown(label, c, o));
        out.flush();
        String at = String.format(Locale.ROOT, "%s, %,d concurrent", label, c);
        if (o.error() != null) {
            notes.add(at + ": load generator failed: " + o.error());
        }
        if (o.warmUpOk() == 0 && o.error() == null) {
            notes.add(at + ": the warm-up got no correct answer: " + o.warmUpError());
        }
        if (o.level() != null && o.level().firstError() != null) {
            notes.add(at + ": first error: " + o.level().firstError());
        }
        if (o.level() != null && o.level().timedOut()) {
            notes.add(at + ": the time limit ended the level before its request bound");
        }
        return o.completed() && o.level().failed() == 0 && o.level().ok() > 0;
    }

    /**
     * The blocking-sync pool ({@link BlockingSyncWorkload} on Jetty's 200-thread pool). The device
     * {@code open} gives is opened and closed first, only to learn whether it is a CUDA device and
     * which: the raw context is then created on its ordinal with no library device open. On the
     * simulated device its rows say "not available" (true: no failure); a driver error while
     * creating or closing the workload is a note naming the call, and its rows say "error" (false).
     * Adds one outcome per level to {@code outcomes} (null where none ran).
     */
    private static boolean blockingSyncServer(Variant v, Function<ReactorConfig, GpuDevice> open, ReactorConfig config,
            Settings s, PrintStream out, PrintStream err, List<String> notes, List<LoadGeneratorProcess.Outcome> outcomes)
            throws Exception {
        String label = v.label(false);
        String unavailable = null;
        int ordinal = -1;
        String deviceName = null;
        try (GpuDevice probe = open.apply(config)) {
            if (probe instanceof CudaDevice cuda) {
                ordinal = cuda.ordinal();
                deviceName = cuda.name() + " (compute " + cuda.computeCapability() + ")";
            } else {
                unavailable = probe.isSimulated() ? NOT_ON_SIMULATED : "not a CUDA device: " + probe.name();
            }
        }
        if (unavailable != null) {
            for (int c : s.concurrency()) {
                out.println(placeholderRow(label, c, "not available"));
                outcomes.add(null);
            }
            out.flush();
            notes.add(label + ": not available: " + unavailable);
            return true;
        }
        BlockingSyncWorkload workload;
        try {
            workload = new BlockingSyncWorkload(ordinal, deviceName, s.streams());
        } catch (CudaDriverException e) {
            return couldNotStart(label, e, s, out, notes, outcomes);
        }
        boolean ok = false;
        try (DemoServer server = DemoServer.start(workload, 0, v.threads())) {
            ok = levels(label, server.port(), s, out, err, notes, outcomes);
        } finally {
            try {
                workload.close(); // after the server's stop: context destroyed, memory freed
            } catch (CudaDriverException | IllegalStateException e) {
                notes.add(label + ": close failed: " + e.getMessage());
                ok = false;
            }
        }
        LatencyHistogram waits = workload.awaitLatency();
        notes.add(String.format(Locale.ROOT, "%s: %s; over the levels (warm-ups included): %,d synchronizes, p50 %.1f us,"
                + " p99 %.1f us", label, workload.description(), waits.count(), waits.percentile(50) / 1e3,
                waits.percentile(99) / 1e3));
        return ok;
    }

    /** A server whose workload could not start: an error row per level, a note; false (its requests count as failed). */
    private static boolean couldNotStart(String label, RuntimeException e, Settings s, PrintStream out, List<String> notes,
            List<LoadGeneratorProcess.Outcome> outcomes) {
        for (int c : s.concurrency()) {
            out.println(placeholderRow(label, c, "error"));
            outcomes.add(null);
        }
        out.flush();
        notes.add(label + ": could not start: " + e.getMessage());
        return false;
    }

    /**
     * The {@link #MINIMAL} server: {@link MinimalWorkload} on device 0 of CUDA, on its stand-in where
     * {@code open} gives a simulated device (the device is opened only to tell which, then closed:
     * MinimalReactor retains the primary context itself). Returns true if every request of every
     * level was answered correctly.
     */
    private static boolean minimalServer(Variant v, Function<ReactorConfig, GpuDevice> open, ReactorConfig config,
            Settings s, PrintStream out, PrintStream err, List<String> notes, List<LoadGeneratorProcess.Outcome> outcomes)
            throws Exception {
        boolean simulated;
        try (GpuDevice probe = open.apply(config)) {
            simulated = !(probe instanceof CudaDevice);
        }
        String label = v.label(simulated);
        MinimalWorkload workload;
        try {
            workload = new MinimalWorkload(s.streams(), simulated);
        } catch (IllegalStateException e) {
            return couldNotStart(label, e, s, out, notes, outcomes);
        }
        boolean ok;
        try (workload; DemoServer server = DemoServer.start(workload, 0, v.threads())) {
            ok = levels(label, server.port(), s, out, err, notes, outcomes);
        }
        LatencyHistogram waits = workload.awaitLatency();
        notes.add(String.format(Locale.ROOT, "%s: %s; over the levels (warm-ups included): %,d steps, p50 %.2f ms,"
                + " p99 %.2f ms", label, workload.description(), waits.count(), waits.percentile(50) / 1e6,
                waits.percentile(99) / 1e6));
        return ok;
    }

    /**
     * The {@code await()} and batched servers against both pools, per level, as markdown lines
     * (a heading, a line on what the columns are, the table): requests/s as a ratio to each pool's
     * (with both figures), p99 in ms and server CPU per request in microseconds of the server and
     * the two pools, requests per CPU-second as a ratio to each pool's (with both figures). A figure
     * that is missing (a pool not available or failed, an error row, CPU unknown) is "n/a".
     *
     * @param results each server's outcomes, one per level in the order of {@code concurrency}
     *     (null: none ran)
     */
    static List<String> ratioTable(List<Integer> concurrency, Map<Variant, List<LoadGeneratorProcess.Outcome>> results) {
        List<String> lines = new ArrayList<>();
        lines.add("### Against the pools: `await()` and batched over 200 platform threads spinning (`synchronize()`,"
                + " primary context) and blocking (`cuStreamSynchronize`, `CU_CTX_SCHED_BLOCKING_SYNC`)");
        lines.add("");
        lines.add(ratioHeader());
        for (int i = 0; i < concurrency.size(); i++) {
            LoadGeneratorProcess.Outcome spinning = outcome(results, SPINNING_POOL, i);
            LoadGeneratorProcess.Outcome blocking = outcome(results, BLOCKING_POOL, i);
            for (Variant v : List.of(AWAIT, BATCHED)) {
                LoadGeneratorProcess.Outcome o = outcome(results, v, i);
                lines.add(String.format(Locale.ROOT, "| %,d | %s | %s | %s | %s / %s / %s | %s / %s / %s | %s | %s |",
                        concurrency.get(i), v.batched() ? "batched" : "`await()`",
                        ratio(requestsPerSecond(o), requestsPerSecond(spinning), "%,.0f"),
                        ratio(requestsPerSecond(o), requestsPerSecond(blocking), "%,.0f"),
                        figure(p99Millis(o), "%.2f"), figure(p99Millis(spinning), "%.2f"), figure(p99Millis(blocking), "%.2f"),
                        figure(cpuMicrosPerRequest(o), "%.1f"), figure(cpuMicrosPerRequest(spinning), "%.1f"),
                        figure(cpuMicrosPerRequest(blocking), "%.1f"),
                        ratio(perCpuSecond(o), perCpuSecond(spinning), "%,.0f"),
                        ratio(perCpuSecond(o), perCpuSecond(blocking), "%,.0f")));
            }
        }
        return lines;
    }

    /**
     * The {@code await()} server's GPU path at each level (issue #37: its server CPU per request
     * minus the HTTP floor's), and, where the held floor ran, the same over the held floor (HTTP and
     * one park and unpark per request at about the {@code await()} server's rate): what the driver
     * calls and the library cost a request above what HTTP costs at that rate; and, where the
     * {@link #MINIMAL} server ran, the {@code await()} server's CPU per request over its (the same
     * driver calls and wake-ups by the fewest parts: the library's own share). Figures missing: "n/a".
     */
    static List<String> gpuPathTable(List<Integer> concurrency, Map<Variant, List<LoadGeneratorProcess.Outcome>> results) {
        List<String> lines = new ArrayList<>();
        lines.add("### The `await()` server's GPU path: its server CPU per request over the HTTP floor's, and over the held floor's");
        lines.add("");
        lines.add("| concurrency | server CPU us per request: `await()` / floor / held floor / minimal | requests/s: `await()`"
                + " / floor / held floor / minimal | GPU path over the floor (us) | over the held floor (us) | minimal's GPU path"
                + " over the floor (us) | `await()` over minimal (us) |");
        lines.add("|---|---|---|---|---|---|---|");
        for (int i = 0; i < concurrency.size(); i++) {
            LoadGeneratorProcess.Outcome await = outcome(results, AWAIT, i);
            LoadGeneratorProcess.Outcome floor = outcome(results, FLOOR, i);
            LoadGeneratorProcess.Outcome held = outcome(results, HELD_FLOOR, i);
            LoadGeneratorProcess.Outcome minimal = outcome(results, MINIMAL, i);
            double a = cpuMicrosPerRequest(await);
            double f = cpuMicrosPerRequest(floor);
            double h = cpuMicrosPerRequest(held);
            double m = cpuMicrosPerRequest(minimal);
            lines.add(String.format(Locale.ROOT, "| %,d | %s / %s / %s / %s | %s / %s / %s / %s | %s | %s | %s | %s |",
                    concurrency.get(i), figure(a, "%.1f"), figure(f, "%.1f"), figure(h, "%.1f"), figure(m, "%.1f"),
                    figure(requestsPerSecond(await), "%,.0f"), figure(requestsPerSecond(floor), "%,.0f"),
                    figure(requestsPerSecond(held), "%,.0f"), figure(requestsPerSecond(minimal), "%,.0f"),
                    figure(a - f, "%.1f"), figure(a - h, "%.1f"), figure(m - f, "%.1f"), figure(a - m, "%.1f")));
        }
        return lines;
    }

    static String ratioHeader() {
        return "| concurrency | server | requests/s x spinning pool | requests/s x blocking-sync pool"
                + " | p99 ms: server / spinning / blocking-sync | server CPU us per request: server / spinning / blocking-sync"
                + " | requests per CPU-second x spinning pool | requests per CPU-second x blocking-sync pool |\n"
                + "|---|---|---|---|---|---|---|---|";
    }

    private static LoadGeneratorProcess.Outcome outcome(Map<Variant, List<LoadGeneratorProcess.Outcome>> results,
            Variant v, int level) {
        List<LoadGeneratorProcess.Outcome> list = results.get(v);
        return list == null || level >= list.size() ? null : list.get(level);
    }

    /** The level's figures, or null: none ran, or it failed. */
    private static LoadGenerator.Level level(LoadGeneratorProcess.Outcome o) {
        return o == null || !o.completed() || o.level().ok() == 0 ? null : o.level();
    }

    private static double requestsPerSecond(LoadGeneratorProcess.Outcome o) {
        LoadGenerator.Level l = level(o);
        return l == null ? Double.NaN : l.requestsPerSecond();
    }

    private static double p99Millis(LoadGeneratorProcess.Outcome o) {
        LoadGenerator.Level l = level(o);
        return l == null ? Double.NaN : l.p99() / 1e6;
    }

    private static double cpuMicrosPerRequest(LoadGeneratorProcess.Outcome o) {
        LoadGenerator.Level l = level(o);
        return l == null || o.serverCpuNanos() <= 0 ? Double.NaN : o.serverCpuNanos() / 1e3 / l.ok();
    }

    private static double perCpuSecond(LoadGeneratorProcess.Outcome o) {
        return level(o) == null ? Double.NaN : o.requestsPerServerCpuSecond();
    }

    private static String figure(double value, String format) {
        return Double.isNaN(value) ? "n/a" : String.format(Locale.ROOT, format, value);
    }

    /** {@code "1.04 (88,783 / 85,046)"}: this over that, with both; "n/a" if either is missing. */
    private static String ratio(double value, double pool, String format) {
        if (Double.isNaN(value) || Double.isNaN(pool) || pool <= 0) {
            return "n/a";
        }
        return String.format(Locale.ROOT, "%.2f (" + format + " / " + format + ")", value / pool, value, pool);
    }
}
