package io.cudaloom.demo;

import io.cudaloom.GpuDevice;
import io.cudaloom.ReactorConfig;
import io.cudaloom.sim.SimulatedDevice;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

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
            device = openDevice(options.device(), config);
        } catch (RuntimeException | LinkageError e) { // LinkageError: no CUDA driver library at all
            String why = String.valueOf(e.getMessage()).lines().findFirst().orElse("");
            err.println("error: cannot open the " + options.device() + " device: " + e.getClass().getSimpleName()
                    + ": " + why + " (--device sim runs without a GPU)");
            return 1;
        }
        try (device; DemoWorkload workload = DemoWorkload.forDevice(device, options.streams(), options.kernelTime())) {
            err.println("device: " + device.name() + (device.isSimulated() ? " (no GPU: embedded simulation)" : ""));
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

    /** {@code sim} opens the simulated device directly; {@code auto} and {@code cuda} go through {@link GpuDevice#open}. */
    static GpuDevice openDevice(String choice, ReactorConfig config) {
        if (choice.equals("sim")) {
            return SimulatedDevice.create(config);
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

    private static int runAwaitDemo(DemoOptions o, DemoWorkload workload, PrintStream out, PrintStream err)
            throws InterruptedException {
        int warmUp = o.warmUpIterations();
        err.printf(Locale.ROOT, "starting %,d virtual threads x %,d iterations (launch, await, verify);"
                + " warm-up: %s%n", o.threads(), o.iterations(), warmUp == 0 ? "none"
                        : warmUp == 1 ? "the first iteration of each thread" : "the first " + warmUp + " iterations of each thread");
        DemoRun.Result result = DemoRun.run(workload, o.threads(), o.iterations(), warmUp, DemoRun.Progress.to(err));
        result.print(out);
        return result.passed() ? 0 : 1;
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
        try (DemoServer server = DemoServer.start(workload, o.effectivePort())) {
            // Warm-up (not reported): lets the JIT compile Jetty, the HTTP client and the reactor
            // before the first level is timed.
            err.printf(Locale.ROOT, "warming up (%,d requests or %d s), then %s concurrent requests, %d s at most each%n",
                    WARM_UP_REQUESTS, WARM_UP_TIME.toSeconds(), LOAD_LEVELS, o.timeLimit().toSeconds());
            LoadGenerator.run(server.baseUri(), 16, WARM_UP_REQUESTS, WARM_UP_TIME);
            out.printf(Locale.ROOT, "%ncuda-loom servlet load: GET %sscale on %s%n", server.baseUri(), workload.description());
            out.printf(Locale.ROOT, "  up to %,d requests or %d s per level, whichever comes first; open-file limit %,d%n",
                    o.requests(), o.timeLimit().toSeconds(), ProcessMetrics.maxFileDescriptors());
            LoadGenerator.printHeader(out);
            boolean allOk = true;
            for (int level : LOAD_LEVELS) {
                LoadGenerator.Level l = LoadGenerator.run(server.baseUri(), level, o.requests(), o.timeLimit());
                LoadGenerator.printRow(out, l);
                if (l.firstError() != null) {
                    out.println("      first error: " + l.firstError());
                }
                allOk &= l.failed() == 0 && l.ok() > 0;
            }
            var stats = DemoRun.awaitQuiescence(workload);
            out.printf(Locale.ROOT, "  slots in use at end %d, fallbacks %,d, slot registrations %,d%n",
                    stats.capacity() - stats.freeSlots(), stats.fallbacks(), stats.registrations());
            out.println(allOk ? "result: OK" : "result: FAILED");
            return allOk ? 0 : 1;
        }
    }
}
