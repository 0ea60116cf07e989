package io.cudaloom.demo;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The demo's command line. {@link #parse} rejects anything it does not understand with a
 * {@link UsageException}, which {@link DemoMain} turns into a one-line error and exit code 2.
 *
 * @param mode what to run
 * @param threads virtual threads of the await demo
 * @param iterations steps (launch, await, verify) per thread
 * @param device auto, sim or cuda
 * @param streams device streams shared round-robin
 * @param kernelTime simulated kernel time per step (simulated device only)
 * @param port HTTP port for --serve / --load (0 = any free port)
 * @param requests requests per concurrency level of --load
 * @param timeLimit time limit per concurrency level of --load
 * @param warmUp warm-up iterations per thread of the await demo as given, or -1 for the default
 *     ({@link #warmUpIterations()})
 * @param baseline whether the same work also runs the way users wait without the library (a pool
 *     of platform threads blocked in a synchronize), for the side-by-side table
 * @param baselineThreads platform threads of that pool (the await demo's; --load's server pool is
 *     Jetty's default of 200)
 * @param report where to write the HTML report, or null for none
 * @param batch with {@code --batch N}, the most vectors per batch of the batched run (GpuBatcher)
 *     that follows the await demo; 0 for none
 */
public record DemoOptions(
        Mode mode,
        int threads,
        int iterations,
        String device,
        int streams,
        Duration kernelTime,
        int port,
        int requests,
        Duration timeLimit,
        int warmUp,
        boolean baseline,
        int baselineThreads,
        @Nullable Path report,
        int batch) {

    public enum Mode { RUN, SERVE, LOAD, HELP }

    public static final String USAGE = """
            usage: DemoMain [options]          (with Maven: -Ddemo.args="options")

            Runs many virtual threads that each launch GPU work and await() it in plain blocking
            style, on a CUDA device when there is one, else on the embedded simulated device.

              --threads N       virtual threads (default 10000, 1..1000000)
              --iterations N    launch/await/verify steps per thread (default 5, 1..1000000)
              --warmup N        of those, the first N per thread are a warm-up, left out of the
                                steady-state figures (default 1, or 0 with --iterations 1)
              --baseline on|off then run the same steps the way users wait without cuda-loom (a
                                pool of platform threads, each blocked in synchronize() on its
                                stream) and print both side by side (default on)
              --pool N          platform threads of that pool (default 64, 1..10000)
              --batch N         then run the same steps through a GpuBatcher: up to N vectors per
                                launch, one copy in and one out per batch; print it beside the
                                per-step run (1..65536; default: no batched run)
              --report FILE     also write the side-by-side table and both latency distributions
                                as one self-contained HTML page (the await demo and --load)
              --device D        auto | sim | cuda (default auto: cuda if present, else sim)
              --streams N       device streams shared round-robin (default 8, 1..1024)
              --kernel-us N     simulated kernel time per step, microseconds (default 20, 0..1000000)
              --serve           serve GET /scale?seed=S&n=N&factor=F on 127.0.0.1 (Jetty, virtual
                                threads) until interrupted
              --port P          port for --serve (default 8080) or --load (default 0: any free)
              --load            start the server, load it from 127.0.0.1 at 1, 100 and 10000
                                concurrent requests, print the table, stop; with the baseline,
                                the same levels again on 200 platform threads that synchronize
              --requests N      requests per concurrency level of --load (default 10000)
              --seconds S       time limit per concurrency level of --load (default 10, 1..600)
              --help            this text

            A value follows its option after a space or an equals sign: --threads 100, --threads=100.
            Exit codes: 0 ok, 1 a check failed or the device could not be opened, 2 bad usage.
            """;

    /** The defaults: the await demo with 10,000 threads. */
    public static DemoOptions defaults() {
        return new DemoOptions(Mode.RUN, 10_000, 5, "auto", 8, Duration.ofNanos(20_000), -1, 10_000,
                Duration.ofSeconds(10), -1, true, 64, null, 0);
    }

    /**
     * Warm-up iterations per thread: as given with {@code --warmup}, else 1 (0 when there is only
     * one iteration). Always less than {@link #iterations()}, so the steady state has at least one.
     */
    public int warmUpIterations() {
        if (warmUp >= 0) {
            return warmUp;
        }
        return iterations > 1 ? 1 : 0;
    }

    /** The port to bind: the one given, else 8080 for --serve and any free port for --load. */
    public int effectivePort() {
        if (port >= 0) {
            return port;
        }
        return mode == Mode.SERVE ? 8080 : 0;
    }

    /**
     * Parses the command line. A value follows its option either as the next argument
     * ({@code --threads 100}) or after an equals sign ({@code --threads=100}).
     */
    public static DemoOptions parse(String... args) throws UsageException {
        DemoOptions d = defaults();
        Mode mode = null;
        int threads = d.threads, iterations = d.iterations, streams = d.streams, port = d.port;
        int requests = d.requests, warmUp = d.warmUp, pool = d.baselineThreads;
        boolean baseline = d.baseline, poolGiven = false;
        Path report = null;
        int batch = d.batch;
        String device = d.device;
        Duration kernel = d.kernelTime, timeLimit = d.timeLimit;
        boolean loadOnlyFlag = false;
        Cursor c = new Cursor(args);
        while (c.next()) {
            String a = c.option;
            switch (a) {
                case "--help", "-h" -> mode = setMode(mode, Mode.HELP, c.flag());
                case "--serve" -> mode = setMode(mode, Mode.SERVE, c.flag());
                case "--load" -> mode = setMode(mode, Mode.LOAD, c.flag());
                case "--threads" -> threads = c.intValue(1, 1_000_000);
                case "--iterations" -> iterations = c.intValue(1, 1_000_000);
                case "--warmup" -> warmUp = c.intValue(0, 999_999);
                case "--streams" -> streams = c.intValue(1, 1024);
                case "--kernel-us" -> kernel = Duration.ofNanos(1000L * c.intValue(0, 1_000_000));
                case "--port" -> port = c.intValue(0, 65_535);
                case "--baseline" -> {
                    String given = c.value();
                    baseline = switch (given.toLowerCase(Locale.ROOT)) {
                        case "on" -> true;
                        case "off" -> false;
                        default -> throw new UsageException("--baseline must be on or off, was '" + given + "'");
                    };
                }
                case "--batch" -> batch = c.intValue(1, 65_536);
                case "--pool" -> {
                    pool = c.intValue(1, 10_000);
                    poolGiven = true;
                }
                case "--report" -> {
                    String given = c.value();
                    try {
                        report = Path.of(given);
                    } catch (InvalidPathException e) {
                        throw new UsageException("--report needs a file name, was '" + given + "'");
                    }
                }
                case "--requests" -> {
                    requests = c.intValue(1, 10_000_000);
                    loadOnlyFlag = true;
                }
                case "--seconds" -> {
                    timeLimit = Duration.ofSeconds(c.intValue(1, 600));
                    loadOnlyFlag = true;
                }
                case "--device" -> {
                    String given = c.value();
                    device = given.toLowerCase(Locale.ROOT);
                    if (!device.equals("auto") && !device.equals("sim") && !device.equals("cuda")) {
                        throw new UsageException("--device must be auto, sim or cuda, was '" + given + "'");
                    }
                }
                default -> throw new UsageException(c.arg.isEmpty() ? "empty argument" : "unknown option '" + a + "'");
            }
        }
        mode = mode == null ? Mode.RUN : mode;
        if (port >= 0 && mode != Mode.SERVE && mode != Mode.LOAD && mode != Mode.HELP) {
            throw new UsageException("--port needs --serve or --load");
        }
        if (loadOnlyFlag && mode != Mode.LOAD && mode != Mode.HELP) {
            throw new UsageException("--requests and --seconds need --load");
        }
        if (warmUp >= 0 && mode != Mode.RUN && mode != Mode.HELP) {
            throw new UsageException("--warmup is for the await demo, not --" + mode.name().toLowerCase(Locale.ROOT));
        }
        if (warmUp >= iterations && mode == Mode.RUN) {
            throw new UsageException("--warmup must be less than --iterations (" + iterations + "), was " + warmUp
                    + ": the steady state needs at least one iteration");
        }
        if (report != null && mode != Mode.RUN && mode != Mode.LOAD && mode != Mode.HELP) {
            throw new UsageException("--report is for the await demo or --load, not --serve");
        }
        if (report != null && !baseline && batch == 0 && mode != Mode.HELP) {
            throw new UsageException("--report compares runs, so it needs the baseline (drop --baseline off) or --batch");
        }
        if (poolGiven && mode != Mode.RUN && mode != Mode.HELP) {
            throw new UsageException("--pool is for the await demo's baseline, not --" + mode.name().toLowerCase(Locale.ROOT));
        }
        if (batch > 0 && mode != Mode.RUN && mode != Mode.HELP) {
            throw new UsageException("--batch is for the await demo, not --" + mode.name().toLowerCase(Locale.ROOT));
        }
        return new DemoOptions(mode, threads, iterations, device, streams, kernel, port, requests, timeLimit, warmUp,
                baseline, pool, report, batch);
    }

    private static Mode setMode(Mode current, Mode wanted, String flag) throws UsageException {
        if (current != null && current != wanted && current != Mode.HELP && wanted != Mode.HELP) {
            throw new UsageException(flag + " cannot be combined with --" + current.name().toLowerCase(Locale.ROOT));
        }
        return current == Mode.HELP ? current : wanted;
    }

    /**
     * Walks the arguments: {@link #option} is the current option's name ({@code --threads} for both
     * {@code --threads 5} and {@code --threads=5}); {@link #value} takes its value.
     */
    private static final class Cursor {
        private final String[] args;
        private int i = -1;
        /** The current argument as given. */
        String arg = "";
        /** Its option name: the argument up to the first '=' of a {@code --name=value} form. */
        String option = "";
        /** The text after '=' in the {@code --name=value} form, else null. */
        private String inline;

        Cursor(String[] args) {
            this.args = args;
        }

        boolean next() {
            if (++i >= args.length) {
                return false;
            }
            arg = args[i];
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 2) {
                option = arg.substring(0, eq);
                inline = arg.substring(eq + 1);
            } else {
                option = arg;
                inline = null;
            }
            return true;
        }

        /** The current option, which takes no value. */
        String flag() throws UsageException {
            if (inline != null) {
                throw new UsageException(option + " takes no value, was '" + arg + "'");
            }
            return option;
        }

        /** The value of the current option: after its '=' or the next argument (then consumed). */
        String value() throws UsageException {
            if (inline != null) {
                if (inline.isEmpty()) {
                    throw new UsageException(option + " needs a value");
                }
                return inline;
            }
            if (i + 1 >= args.length || args[i + 1].startsWith("--")) {
                throw new UsageException(option + " needs a value");
            }
            return args[++i];
        }

        int intValue(int min, int max) throws UsageException {
            String given = value();
            String v = given.replace("_", "").replace(",", "");
            int n;
            try {
                n = Integer.parseInt(v);
            } catch (NumberFormatException e) {
                throw new UsageException(option + " needs a whole number, was '" + given + "'");
            }
            if (n < min || n > max) {
                throw new UsageException(option + " must be between " + min + " and " + max + ", was " + n);
            }
            return n;
        }
    }

    /** A bad command line: the message says what was wrong. */
    public static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        public UsageException(String message) {
            super(message);
        }
    }
}
