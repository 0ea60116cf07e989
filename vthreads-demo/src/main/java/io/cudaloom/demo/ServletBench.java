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
 * {@code GpuBench servlet}: the demo's {@link ScaleServlet} served two ways, each loaded by the
 * demo's {@link LoadGenerator} at the same concurrency levels from 127.0.0.1:
 * <ol>
 *   <li>Jetty's {@code VirtualThreadPool}, the workload waiting with {@code await()} (the demo's
 *       server as it is);
 *   <li>Jetty's default {@code QueuedThreadPool} of 200 platform threads, the workload waiting with
 *       {@code CudaStream.synchronize()} ({@link DemoWorkload.WaitBy#SYNCHRONIZE}).
 * </ol>
 * Each runs on a freshly opened device and a fresh server, after a warm-up that is not reported.
 * Every level is bounded in requests and time; every response body is checked. The CPU figures
 * are the whole process's: server, reactor and the load generator's client, which is the same for
 * both servers.
 */
public final class ServletBench {
    /** Simulated kernel time per request on the simulated device (the demo's default); a GPU takes what it takes. */
    static final Duration SIM_KERNEL_TIME = Duration.ofNanos(20_000);

    private ServletBench() {}

    /**
     * What to run.
     *
     * @param concurrency the concurrency levels, each 1..{@value DemoServer#MAX_CONCURRENT}
     * @param timeLimit per level (requests in flight at the limit may take as long again)
     * @param requestsPerLevel at most this many requests per level
     * @param warmUpRequests requests of the warm-up before each server's levels (16 at a time)
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
         * demo's warm-up ({@value DemoMain#WARM_UP_REQUESTS} requests or 5 s), 8 streams.
         */
        public static Settings of(List<Integer> concurrency, Duration timeLimit) {
            return new Settings(concurrency, timeLimit, 1_000_000, DemoMain.WARM_UP_REQUESTS, DemoMain.WARM_UP_TIME, 8);
        }
    }

    /** One server configuration. */
    record Variant(DemoServer.RequestThreads threads, DemoWorkload.WaitBy waitBy) {
        String label(boolean simulated) {
            String pool = threads == DemoServer.RequestThreads.VIRTUAL
                    ? "Jetty VirtualThreadPool"
                    : "Jetty QueuedThreadPool (" + DemoServer.RequestThreads.PLATFORM_POOL_SIZE + " platform threads)";
            String wait = waitBy == DemoWorkload.WaitBy.AWAIT ? "`await()`"
                    : simulated ? "blocking wait (simulated synchronize)" : "`synchronize()` (cuStreamSynchronize)";
            return pool + ", " + wait;
        }
    }

    static final List<Variant> VARIANTS = List.of(
            new Variant(DemoServer.RequestThreads.VIRTUAL, DemoWorkload.WaitBy.AWAIT),
            new Variant(DemoServer.RequestThreads.PLATFORM_200, DemoWorkload.WaitBy.SYNCHRONIZE));

    static String tableHeader() {
        return "| server | concurrency | protocol | ok | failed | requests/s | p50 ms | p99 ms | cores busy"
                + " | requests per CPU-second | peak platform threads |\n"
                + "|---|---|---|---|---|---|---|---|---|---|---|";
    }

    static String markdown(String server, LoadGenerator.Level l) {
        double seconds = l.elapsedNanos() / 1e9;
        String cores = l.cpuNanos() < 0 || seconds <= 0 ? "n/a" : String.format(Locale.ROOT, "%.2f", l.cpuNanos() / 1e9 / seconds);
        String perCpu = l.cpuNanos() <= 0 ? "n/a" : String.format(Locale.ROOT, "%,.0f", l.ok() / (l.cpuNanos() / 1e9));
        return String.format(Locale.ROOT, "| %s | %,d | %s | %,d | %,d | %,.0f | %.2f | %.2f | %s | %s | %d |", server,
                l.concurrency(), l.protocol(), l.ok(), l.failed(), l.requestsPerSecond(), l.p50() / 1e6, l.p99() / 1e6,
                cores, perCpu, l.peakPlatformThreads());
    }

    /**
     * Runs both servers at every level: a markdown table on {@code out}, progress on {@code err}.
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
                + " open-file limit %,d; %d cores; Java %s%n%n", s.requestsPerLevel(), s.timeLimit().toSeconds(),
                ProcessMetrics.maxFileDescriptors(), Runtime.getRuntime().availableProcessors(), Runtime.version());
        out.println(tableHeader());
        out.flush();
        List<String> notes = new ArrayList<>();
        boolean allOk = true;
        for (Variant v : VARIANTS) {
            try (GpuDevice device = open.apply(config);
                 DemoWorkload workload = DemoWorkload.forDevice(device, s.streams(), SIM_KERNEL_TIME, v.waitBy());
                 DemoServer server = DemoServer.start(workload, 0, v.threads())) {
                String label = v.label(device.isSimulated());
                err.printf(Locale.ROOT, "servlet: %s: warming up (%,d requests or %d s)%n", label, s.warmUpRequests(),
                        s.warmUpTime().toSeconds());
                LoadGenerator.Level warm = LoadGenerator.run(server.baseUri(), 16, s.warmUpRequests(), s.warmUpTime());
                if (warm.ok() == 0) {
                    notes.add(label + ": the warm-up got no correct answer: " + warm.firstError());
                }
                ReactorStats before = device.reactor().stats();
                for (int c : s.concurrency()) {
                    err.printf(Locale.ROOT, "servlet: %s: %,d concurrent%n", label, c);
                    LoadGenerator.Level l = LoadGenerator.run(server.baseUri(), c, s.requestsPerLevel(), s.timeLimit());
                    out.println(markdown(label, l));
                    out.flush();
                    if (l.firstError() != null) {
                        notes.add(String.format(Locale.ROOT, "%s, %,d concurrent: first error: %s", label, c, l.firstError()));
                    }
                    allOk &= l.failed() == 0 && l.ok() > 0;
                }
                ReactorStats after = DemoRun.awaitQuiescence(workload);
                notes.add(String.format(Locale.ROOT, "%s: %s; reactor over the levels: %,d registrations, %,d inline,"
                        + " %,d already done, %,d fallbacks", label, workload.description(),
                        after.registrations() - before.registrations(), after.inlineCompletions() - before.inlineCompletions(),
                        after.immediate() - before.immediate(), after.fallbacks() - before.fallbacks()));
            }
        }
        out.println();
        for (String n : notes) {
            out.println("- " + n);
        }
        out.println("- CPU: the whole process (server, reactor and the load generator's client, the same for both).");
        out.println(allOk ? "result: every request answered correctly" : "result: some requests failed (see above)");
        return allOk;
    }
}
