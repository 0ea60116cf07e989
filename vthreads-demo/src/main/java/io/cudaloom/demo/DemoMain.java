package io.cudaloom.demo;

import io.cudaloom.GpuDevice;
import io.cudaloom.ReactorConfig;
import io.cudaloom.cuda.Cuda;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.sim.SimulatedDevice;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The demo a new user runs first. See {@link DemoOptions#USAGE}. From the repository root:
 * {@code ./demo --threads 10000} (builds once, then runs on the JVM directly); with Maven, building
 * every time: {@code mvn -q -pl vthreads-demo -am package -Dmaven.test.skip=true -Pdemo -Ddemo.args="--threads 10000"}.
 */
public final class DemoMain {
    /** Concurrency levels of --load. */
    static final List<Integer> LOAD_LEVELS = List.of(1, 100, 10_000);
    static final int WARM_UP_REQUESTS = 5_000;
    static final Duration WARM_UP_TIME = Duration.ofSeconds(5);

    private DemoMain() {}

    /**
     * System property naming a file that receives the exit code as text ({@code -Pdemo} sets it, so
     * that Maven exits with the demo's code). It holds {@value #STOPPED} while the demo runs, which
     * stays if the JVM is stopped by a signal (Ctrl-C ends {@code --serve} that way).
     */
    static final String EXIT_CODE_FILE_PROPERTY = "cudaloom.demo.exitCodeFile";
    static final String STOPPED = "stopped";

    public static void main(String[] args) {
        String exitCodeFile = System.getProperty(EXIT_CODE_FILE_PROPERTY, "");
        writeExitCode(exitCodeFile, STOPPED);
        int code = run(args, System.out, System.err);
        System.out.flush();
        writeExitCode(exitCodeFile, Integer.toString(code));
        System.exit(code);
    }

    private static void writeExitCode(String file, String text) {
        if (file.isEmpty()) {
            return;
        }
        try {
            Files.writeString(Path.of(file), text + "\n");
        } catch (IOException e) {
            System.err.println("warning: cannot write the exit code to " + file + ": " + e);
        }
    }

    /**
     * Runs the demo; returns the exit code (0 ok, 1 failed, 2 usage). Table on out, the rest on err;
     * an error is one line on err.
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        DemoOptions options;
        try {
            options = DemoOptions.parse(args);
        } catch (DemoOptions.UsageException e) {
            err.println("error: " + e.getMessage() + " (--help lists the options)");
            return 2;
        }
        if (options.mode() == DemoOptions.Mode.HELP) {
            out.print(DemoOptions.USAGE);
            return 0;
        }
        // One slot per thread, so the demo shows the reactor path rather than the fallback.
        int slots = Math.max(ReactorConfig.defaults().capacity(),
                options.mode() == DemoOptions.Mode.RUN ? options.threads() : DemoServer.MAX_CONCURRENT);
        ReactorConfig config = ReactorConfig.builder().capacity(slots).build();
        GpuDevice device;
        try {
            device = openDevice(options.device(), config, err);
        } catch (RuntimeException | LinkageError e) { // LinkageError: no CUDA driver library at all
            String why = String.valueOf(e.getMessage()).lines().findFirst().orElse("");
            err.println("error: cannot open the " + options.device() + " device: " + e.getClass().getSimpleName()
                    + ": " + why + " (--device sim runs without a GPU)");
            return 1;
        }
        try (device; DemoWorkload workload = DemoWorkload.forDevice(device, options.streams(), options.kernelTime())) {
            err.println("device: " + device.name() + (device.isSimulated() ? " (no GPU: embedded simulation)" : ""));
            if (!device.isSimulated()) {
                err.println("driver calls: " + CudaDevice.driverCalls());
            }
            return switch (options.mode()) {
                case RUN -> runAwaitDemo(options, workload, out, err);
                case SERVE -> serve(options, workload, err);
                case LOAD -> load(options, workload, out, err);
                case HELP -> 0;
            };
        } catch (UnsupportedOperationException e) {
            err.println("error: " + e.getMessage());
            return 1;
        } catch (DemoServer.PortInUseException e) {
            err.println("error: port " + e.port() + " on " + DemoServer.HOST + " is already in use;"
                    + " choose another with --port P (--port 0 takes any free port)");
            return 1;
        } catch (InterruptedException e) {
            err.println("interrupted");
            return 1;
        } catch (Exception e) {
            err.println("error: " + e);
            return 1;
        }
    }

    /** {@link #openDevice(String, ReactorConfig, PrintStream)}, saying nothing. */
    static GpuDevice openDevice(String choice, ReactorConfig config) {
        return openDevice(choice, config, new PrintStream(PrintStream.nullOutputStream()));
    }

    /**
     * {@code sim} opens the simulated device directly; {@code cuda} goes through
     * {@link GpuDevice#open}; {@code auto} too when the CUDA backend can be used, else it says so
     * in one plain line on {@code err} ({@code no GPU found (why): running on the simulated device})
     * and opens the simulated device, so that the documented no-GPU path of the demo starts with no
     * WARNING (the library logs one for an application whose CUDA backend is unusable).
     */
    static GpuDevice openDevice(String choice, ReactorConfig config, PrintStream err) {
        if (choice.equals("sim")) {
            return SimulatedDevice.create(config);
        }
        if (choice.equals("auto")) {
            String why = cudaUnavailableReason();
            if (why != null) {
                err.println("no GPU found (" + why + "): running on the simulated device");
                return SimulatedDevice.create(config);
            }
        }
        String previous = System.getProperty(GpuDevice.BACKEND_PROPERTY);
        System.setProperty(GpuDevice.BACKEND_PROPERTY, choice);
        try {
            return GpuDevice.open(config);
        } finally {
            if (previous == null) {
                System.clearProperty(GpuDevice.BACKEND_PROPERTY);
            } else {
                System.setProperty(GpuDevice.BACKEND_PROPERTY, previous);
            }
        }
    }

    /** Why the CUDA backend cannot be used here, in a few words, or null if it can. */
    static @Nullable String cudaUnavailableReason() {
        try {
            if (!Cuda.isInstalled()) {
                return "JCuda is not on the class path";
            }
            if (Cuda.isAvailable()) {
                return null;
            }
            String reason = String.valueOf(Cuda.unavailableReason());
            return reason.contains("libcuda") || reason.contains("no CUDA driver") ? "no CUDA driver"
                    : reason.lines().findFirst().orElse("the CUDA driver found no device");
        } catch (RuntimeException | LinkageError e) {
            return "the CUDA backend cannot be loaded: " + e.getClass().getSimpleName();
        }
    }

    private static int runAwaitDemo(DemoOptions o, DemoWorkload workload, PrintStream out, PrintStream err)
            throws InterruptedException {
        int warmUp = o.warmUpIterations();
        err.println("reactor: " + workload.device().reactor().config()); // the settings the run measured
        err.printf(Locale.ROOT, "starting %,d virtual threads x %,d iterations (launch, await, verify);"
                + " warm-up: %s%n", o.threads(), o.iterations(), warmUp == 0 ? "none"
                        : warmUp == 1 ? "the first iteration of each thread" : "the first " + warmUp + " iterations of each thread");
        DemoRun.Result result = DemoRun.run(workload, o.threads(), o.iterations(), warmUp, DemoRun.Progress.to(err));
        if (!o.baseline() && o.batch() == 0) {
            result.print(out);
            return result.passed() ? 0 : 1;
        }
        result.printTable(out);
        out.flush();
        long steps = (long) o.threads() * o.iterations();
        boolean passed = result.passed();
        List<SideBySide.Comparison> comparisons = new ArrayList<>();
        SideBySide.Run perStep = SideBySide.Run.of(String.format(Locale.ROOT, "await(), %,d virtual threads", o.threads()),
                result);
        if (o.baseline()) {
            DemoRun.Crew pool = DemoRun.Crew.platformPool(o.baselineThreads(), steps, o.iterations());
            err.printf(Locale.ROOT, "baseline: the same %,d steps on a pool of %d platform threads, each blocked in"
                    + " synchronize() on its stream (--baseline off skips this)%n", steps, pool.threads());
            DemoRun.Result base;
            try (DemoWorkload blocking = DemoWorkload.forDevice(workload.device(), o.streams(), o.kernelTime(),
                    DemoWorkload.WaitBy.SYNCHRONIZE)) {
                base = DemoRun.run(blocking, pool, warmUp, DemoRun.Progress.to(err));
            }
            SideBySide.Comparison c = new SideBySide.Comparison(String.format(Locale.ROOT,
                    "the same %,d steps (launch, copy, wait, verify), waited for two ways", steps), "completion",
                    "time a thread waited for its step's work, in await() or in synchronize(), the wait behind the"
                            + " steps in flight on its stream included" + (workload.device().isSimulated()
                            ? "; on the simulated device synchronize() parks its thread, as cuStreamSynchronize does in"
                                    + " a context made with CU_CTX_SCHED_BLOCKING_SYNC (the driver's default spins)" : ""),
                    perStep,
                    SideBySide.Run.of(String.format(Locale.ROOT, "synchronize(), %d platform threads", pool.threads()), base));
            SideBySide.print(out, c);
            comparisons.add(c);
            passed &= checked(out, "baseline", base, steps);
        }
        if (o.batch() > 0) {
            int streamsPerFactor = Math.max(1, o.streams() / 4);
            err.printf(Locale.ROOT, "batched: the same %,d steps on %,d virtual threads, each a call of a GpuBatcher"
                    + " (up to %,d vectors per launch)%n", steps, o.threads(), o.batch());
            DemoRun.Result batched;
            long batches;
            try (BatchedWorkload b = new BatchedWorkload(workload.device(), streamsPerFactor, o.batch())) {
                batched = DemoRun.run(b, DemoRun.Crew.virtualThreads(o.threads(), o.iterations()), warmUp,
                        DemoRun.Progress.to(err));
                batches = b.batches();
            }
            SideBySide.Comparison c = new SideBySide.Comparison(String.format(Locale.ROOT,
                    "the same %,d steps, one launch each or batched (%,d batches of up to %,d)", steps, batches, o.batch()),
                    "completion", "time a thread waited for its step's work: in await(), or in the batched call (its"
                            + " batch's copies and launch, and the wait for a batch to form, included)",
                    SideBySide.Run.of(String.format(Locale.ROOT, "GpuBatcher.call(), %,d virtual threads", o.threads()),
                            batched),
                    perStep, "batched");
            SideBySide.print(out, c);
            comparisons.add(c);
            passed &= checked(out, "batched run", batched, steps);
        }
        if (o.report() != null) {
            writeReport(o.report(), String.format(Locale.ROOT, "%s; steady state after %s; %s",
                    workload.description(), warmUp == 0 ? "no warm-up" : warmUp == 1 ? "a warm-up of 1 iteration per thread"
                            : "a warm-up of " + warmUp + " iterations per thread", Instant.now()), comparisons, err);
        }
        out.println(passed ? "result: OK" : "result: FAILED");
        return passed ? 0 : 1;
    }

    /** Whether {@code r} verified every one of its {@code steps}; says what failed if not. */
    private static boolean checked(PrintStream out, String what, DemoRun.Result r, long steps) {
        if (r.errors() + r.mismatches() == 0 && r.verified() == steps) {
            return true;
        }
        out.printf(Locale.ROOT, "  %s failed: %,d verified of %,d, %,d mismatches, %,d errors%s%n", what, r.verified(),
                steps, r.mismatches(), r.errors(), r.firstError() == null ? "" : " (first: " + r.firstError() + ")");
        return false;
    }

    private static void writeReport(Path file, String context, List<SideBySide.Comparison> comparisons,
            PrintStream err) {
        try {
            SideBySide.write(file, "cuda-loom: the same GPU work, waited for two ways", context, comparisons);
            err.println("report: " + file.toAbsolutePath());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the report " + file + ": " + e.getMessage(), e);
        }
    }

    private static int serve(DemoOptions o, DemoWorkload workload, PrintStream err) throws Exception {
        try (DemoServer server = DemoServer.start(workload, o.effectivePort())) {
            err.println("serving " + server.baseUri() + "scale?seed=5&n=256&factor=3"
                    + "  (expect " + ScaleServlet.expectedBody(5, 256, 3).strip() + "; Ctrl-C stops)");
            server.join();
        }
        return 0;
    }

    private static int load(DemoOptions o, DemoWorkload workload, PrintStream out, PrintStream err) throws Exception {
        List<LoadRun> awaited;
        boolean allOk;
        try (DemoServer server = DemoServer.start(workload, o.effectivePort())) {
            // Warm-up (not reported): lets the JIT compile Jetty, the HTTP client and the reactor
            // before the first level is timed.
            err.printf(Locale.ROOT, "warming up (%,d requests or %d s), then %s concurrent requests, %d s at most each%n",
                    WARM_UP_REQUESTS, WARM_UP_TIME.toSeconds(), LOAD_LEVELS, o.timeLimit().toSeconds());
            LoadGenerator.run(server.baseUri(), 16, WARM_UP_REQUESTS, WARM_UP_TIME);
            out.printf(Locale.ROOT, "%ncuda-loom servlet load: GET %sscale on %s%n", server.baseUri(), workload.description());
            out.printf(Locale.ROOT, "  up to %,d requests or %d s per level, whichever comes first; open-file limit %,d%n",
                    o.requests(), o.timeLimit().toSeconds(), ProcessMetrics.maxFileDescriptors());
            awaited = levels(server, o, out);
            allOk = awaited.stream().allMatch(LoadRun::ok);
            var stats = DemoRun.awaitQuiescence(workload);
            out.printf(Locale.ROOT, "  slots in use at end %d, fallbacks %,d, slot registrations %,d%n",
                    stats.capacity() - stats.freeSlots(), stats.fallbacks(), stats.registrations());
        }
        if (o.baseline()) {
            try (DemoWorkload blocking = DemoWorkload.forDevice(workload.device(), o.streams(), o.kernelTime(),
                    DemoWorkload.WaitBy.SYNCHRONIZE);
                 DemoServer server = DemoServer.start(blocking, 0, DemoServer.RequestThreads.PLATFORM_200)) {
                err.printf(Locale.ROOT, "baseline: the same levels on Jetty's default pool of %d platform threads,"
                        + " each request blocked in synchronize() (--baseline off skips this)%n",
                        DemoServer.RequestThreads.PLATFORM_POOL_SIZE);
                LoadGenerator.run(server.baseUri(), 16, WARM_UP_REQUESTS, WARM_UP_TIME);
                out.printf(Locale.ROOT, "%nbaseline: the same GET %sscale on %d platform threads that synchronize%n",
                        server.baseUri(), DemoServer.RequestThreads.PLATFORM_POOL_SIZE);
                List<LoadRun> blocked = levels(server, o, out);
                allOk &= blocked.stream().allMatch(LoadRun::ok);
                List<SideBySide.Comparison> comparisons = new ArrayList<>();
                for (int i = 0; i < awaited.size(); i++) {
                    LoadRun a = awaited.get(i), b = blocked.get(i);
                    SideBySide.Comparison c = new SideBySide.Comparison(String.format(Locale.ROOT,
                            "%,d concurrent requests, served two ways", a.level().concurrency()), "request",
                            "a request's round trip, seen by the load generator",
                            SideBySide.Run.of("await() on virtual threads", a.level(), a.latency().percentileSeries()),
                            SideBySide.Run.of(String.format(Locale.ROOT, "synchronize() on %d platform threads",
                                    DemoServer.RequestThreads.PLATFORM_POOL_SIZE), b.level(), b.latency().percentileSeries()));
                    SideBySide.print(out, c);
                    comparisons.add(c);
                }
                if (o.report() != null) {
                    writeReport(o.report(), String.format(Locale.ROOT, "GET /scale served by Jetty on %s; up to %,d"
                            + " requests or %d s per level; %s", workload.description(), o.requests(),
                            o.timeLimit().toSeconds(), Instant.now()), comparisons, err);
                }
            }
        }
        out.println(allOk ? "result: OK" : "result: FAILED");
        return allOk ? 0 : 1;
    }

    /** One level of the load, with every request's latency. */
    private record LoadRun(LoadGenerator.Level level, LatencyHistogram latency) {
        boolean ok() {
            return level.failed() == 0 && level.ok() > 0;
        }
    }

    /** Runs {@link #LOAD_LEVELS} against {@code server}, printing the table. */
    private static List<LoadRun> levels(DemoServer server, DemoOptions o, PrintStream out) throws InterruptedException {
        LoadGenerator.printHeader(out);
        List<LoadRun> runs = new ArrayList<>();
        for (int level : LOAD_LEVELS) {
            LatencyHistogram latency = new LatencyHistogram();
            LoadGenerator.Level l = LoadGenerator.run(server.baseUri(), level, o.requests(), o.timeLimit(), latency);
            LoadGenerator.printRow(out, l);
            if (l.firstError() != null) {
                out.println("      first error: " + l.firstError());
            }
            runs.add(new LoadRun(l, latency));
        }
        return runs;
    }
}
