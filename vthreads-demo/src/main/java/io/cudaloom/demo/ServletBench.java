package io.cudaloom.demo;

import io.cudaloom.GpuDevice;
import io.cudaloom.ReactorConfig;
import io.cudaloom.ReactorStats;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

/**
 * {@code GpuBench servlet}: the demo's {@link ScaleServlet} served three ways, each loaded by the
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
 *   <li>Jetty's default {@code QueuedThreadPool} of 200 platform threads, the workload waiting with
 *       {@code CudaStream.synchronize()} ({@link DemoWorkload.WaitBy#SYNCHRONIZE}).
 * </ol>
 * Each server runs on a freshly opened device, in this process. Each level's load comes from a
 * JVM of its own ({@link LoadGeneratorProcess}: a child process with this JVM's {@code java} and
 * class path), which first warms up (not reported), then runs the level. Every level is bounded in
 * requests and time, every response body is checked, and a child that fails or outlives its bound
 * is killed and reported as an error. The server figures (CPU time, cores busy, requests per
 * CPU-second, platform threads) are this process's alone, which hosts only the server, the device
 * and its reactor, taken over the level's window (from the child's start signal to its last
 * answer); the client's CPU is shown apart.
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

    /** One server configuration; {@code batched}: a {@link BatchedWorkload} ({@code waitBy} unused). */
    record Variant(DemoServer.RequestThreads threads, DemoWorkload.WaitBy waitBy, boolean batched) {
        Variant(DemoServer.RequestThreads threads, DemoWorkload.WaitBy waitBy) {
            this(threads, waitBy, false);
        }

        /** The streams of each of the batched server's batchers: the settings' streams over 4, at least 1 (as the demo's --batch). */
        static int streamsPerFactor(int streams) {
            return Math.max(1, streams / 4);
        }

        /** This server's workload on {@code device}. */
        DemoWorkload workload(GpuDevice device, Settings s) {
            if (batched) {
                return new BatchedWorkload(device, streamsPerFactor(s.streams()), BATCH_MAX, 1, LoadGenerator.MAX_FACTOR);
            }
            return DemoWorkload.forDevice(device, s.streams(), SIM_KERNEL_TIME, waitBy);
        }

        String label(boolean simulated) {
            if (batched) {
                return "Jetty VirtualThreadPool, batched (`GpuBatcher.call`, up to " + BATCH_MAX + " vectors per launch)";
            }
            String pool = threads == DemoServer.RequestThreads.VIRTUAL
                    ? "Jetty VirtualThreadPool"
                    : "Jetty QueuedThreadPool (" + DemoServer.RequestThreads.PLATFORM_POOL_SIZE + " platform threads)";
            String wait = waitBy == DemoWorkload.WaitBy.AWAIT ? "`await()`"
                    : waitBy == DemoWorkload.WaitBy.HOST_ONLY ? "no device work (the HTTP floor)"
                    : simulated ? "blocking wait (simulated synchronize)" : "`synchronize()` (cuStreamSynchronize)";
            return pool + ", " + wait;
        }
    }

    /**
     * The servers, in order: first the floor (virtual threads, no device work: what Jetty, HTTP and
     * the client cost alone, which no way of waiting can go below), then the three compared.
     */
    static final List<Variant> VARIANTS = List.of(
            new Variant(DemoServer.RequestThreads.VIRTUAL, DemoWorkload.WaitBy.HOST_ONLY),
            new Variant(DemoServer.RequestThreads.VIRTUAL, DemoWorkload.WaitBy.AWAIT),
            new Variant(DemoServer.RequestThreads.VIRTUAL, DemoWorkload.WaitBy.AWAIT, true),
            new Variant(DemoServer.RequestThreads.PLATFORM_200, DemoWorkload.WaitBy.SYNCHRONIZE));

    static String tableHeader() {
        return "| server | concurrency | protocol | ok | failed | requests/s | p50 ms | p99 ms | server CPU s"
                + " | cores busy (server) | requests per CPU-second (server) | peak platform threads (server)"
                + " | load generator CPU s (own JVM) |\n"
                + "|---|---|---|---|---|---|---|---|---|---|---|---|---|";
    }

    static String markdown(String server, int concurrency, LoadGeneratorProcess.Outcome o) {
        LoadGenerator.Level l = o.level();
        if (l == null) {
            return String.format(Locale.ROOT, "| %s | %,d | error | - | - | - | - | - | - | - | - | - | - |", server,
                    concurrency);
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

    /**
     * Runs every server at every level: a markdown table on {@code out}, progress and the load
     * generators' stderr on {@code err}.
     *
     * @param open opens the device for one server (e.g. CUDA device 0), given the reactor configuration
     * @return true if every request of every level was answered correctly
     */
    public static boolean run(Function<ReactorConfig, GpuDevice> open, Settings s, PrintStream out, PrintStream err)
            throws Exception {
        // One slot per concurrent request at most, as the demo's --load does.
        ReactorConfig config = ReactorConfig.builder()
                .capacity(Math.max(ReactorConfig.defaults().capacity(), DemoServer.MAX_CONCURRENT)).build();
        out.printf(Locale.ROOT, "## GpuBench servlet: GET /scale on 127.0.0.1, up to %,d requests or %d s per level;"
                + " load from a separate JVM per level; open-file limit %,d; %d cores; Java %s%n%n",
                s.requestsPerLevel(), s.timeLimit().toSeconds(), ProcessMetrics.maxFileDescriptors(),
                Runtime.getRuntime().availableProcessors(), Runtime.version());
        out.println(tableHeader());
        out.flush();
        List<String> notes = new ArrayList<>();
        boolean allOk = true;
        for (Variant v : VARIANTS) {
            try (GpuDevice device = open.apply(config);
                 DemoWorkload workload = v.workload(device, s);
                 DemoServer server = DemoServer.start(workload, 0, v.threads())) {
                String label = v.label(device.isSimulated());
                ReactorStats before = device.reactor().stats();
                for (int c : s.concurrency()) {
                    LoadGeneratorProcess.Request request = new LoadGeneratorProcess.Request(server.port(), c,
                            s.requestsPerLevel(), s.timeLimit(), s.warmUpRequests(), s.warmUpTime(),
                            LoadGenerator.Protocol.AUTO);
                    err.printf(Locale.ROOT, "servlet: %s: %,d concurrent (a new load generator JVM: warm-up of %,d"
                            + " requests or %d s, then the level; killed after %d s)%n", label, c, s.warmUpRequests(),
                            s.warmUpTime().toSeconds(), request.childLimit().toSeconds());
                    LoadGeneratorProcess.Outcome o = LoadGeneratorProcess.run(request, err);
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
                    allOk &= o.completed() && o.level().failed() == 0 && o.level().ok() > 0;
                }
                ReactorStats after = DemoRun.awaitQuiescence(workload);
                String batches = workload instanceof BatchedWorkload b
                        ? String.format(Locale.ROOT, "; %,d batches over the levels (warm-ups included)", b.batches()) : "";
                notes.add(String.format(Locale.ROOT, "%s: %s; reactor over the levels (warm-ups included): %,d"
                        + " registrations, %,d inline, %,d already done, %,d fallbacks%s", label, workload.description(),
                        after.registrations() - before.registrations(), after.inlineCompletions() - before.inlineCompletions(),
                        after.immediate() - before.immediate(), after.fallbacks() - before.fallbacks(), batches));
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
}
