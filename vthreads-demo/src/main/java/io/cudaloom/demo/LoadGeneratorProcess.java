package io.cudaloom.demo;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemNotFoundException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The {@link LoadGenerator} in a JVM of its own, so that a server's CPU time can be measured
 * without the client's: {@link #run} starts a child process with this JVM's {@code java} binary
 * and class path ({@code java -cp <java.class.path> io.cudaloom.demo.LoadGeneratorProcess ...};
 * see {@link #classPath()}),
 * which loads {@code http://127.0.0.1:<port>/} and reports on its stdout; the child's stderr is
 * passed through line by line. The parent hosts only the server (and its device and reactor): it
 * reads its own process CPU time when the child's clock starts and again when it stops.
 *
 * <p>The child's client is the load generator's: for HTTP/1.1 its {@link RawHttpClient}, one
 * keep-alive socket per concurrent request, cheap enough that the child is not the bottleneck of
 * the servers it compares (on the JDK {@code HttpClient} it was: it used more CPU than either
 * server; docs/BENCHMARKS.md); h2c, when the sockets would not fit under the open-file limit, on
 * the JDK {@code HttpClient}. Its CPU over the level is reported apart ({@code client-cpu-ns}).
 *
 * <p>The child's stdout, one report line each, every line starting with {@value #PREFIX}:
 * <pre>
 *   loadgen warmup &lt;ok&gt; &lt;failed&gt;            after the optional warm-up (not measured)
 *   loadgen warmup-error &lt;text&gt;              its first error, if any
 *   loadgen ready &lt;protocol&gt;                 the request before the clock answered; the child now waits for "go" on its stdin
 *   loadgen done                             the level's last request ended (before anything is closed)
 *   loadgen result key=value ...             the level's figures (see {@link #RESULT_KEYS})
 *   loadgen first-error &lt;text&gt;               the level's first error, if any
 *   loadgen end                              the report is complete
 *   loadgen error &lt;text&gt;                     the child failed (then it exits with code 1)
 * </pre>
 * The parent takes its CPU and clock readings just before it writes {@code go} and when it reads
 * {@code done}, so the server's figures cover the level's requests and nothing of the child's
 * start, warm-up or shutdown. A child that fails, exits early or does not finish within the
 * parent's limit is killed (if still alive) and reported as an {@link Outcome#error()}.
 */
public final class LoadGeneratorProcess {
    /** Every report line of the child starts with this. */
    static final String PREFIX = "loadgen ";
    /** The keys of the {@code result} line, in order. */
    static final List<String> RESULT_KEYS = List.of("concurrency", "protocol", "sent", "ok", "failed", "wall-ns",
            "p50-ns", "p90-ns", "p99-ns", "timed-out", "client-cpu-ns", "client-peak-platform-threads");
    /** Concurrency of the child's warm-up. */
    static final int WARM_UP_CONCURRENCY = 16;
    /** Allowed for the child JVM's start and its exit, on top of its warm-up's and level's own bounds. */
    static final Duration START_AND_EXIT_ALLOWANCE = Duration.ofSeconds(30);
    /** How long a child is given to end once killed (or once it reported its end). */
    private static final Duration EXIT_WAIT = Duration.ofSeconds(10);
    @SuppressWarnings("StringOperationCanBeSimplified")
    private static final String EOF = new String("EOF"); // by identity: the end of the child's stdout

    /** Children still running; a shutdown hook kills them if this JVM ends first (e.g. under {@code timeout}). */
    private static final Set<Process> RUNNING = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> RUNNING.forEach(Process::destroyForcibly),
                "loadgen-reaper"));
    }

    private LoadGeneratorProcess() {}

    /**
     * What the child runs: an optional warm-up ({@code warmUpRequests} requests, 16 at a time, or
     * {@code warmUpTime}; 0 requests: none), then one level.
     */
    public record Request(int port, int concurrency, int requests, Duration timeLimit, int warmUpRequests,
            Duration warmUpTime, LoadGenerator.Protocol protocol) {
        public Request {
            Objects.requireNonNull(timeLimit, "timeLimit");
            Objects.requireNonNull(warmUpTime, "warmUpTime");
            Objects.requireNonNull(protocol, "protocol");
            if (port < 1 || port > 65_535) {
                throw new IllegalArgumentException("port must be between 1 and 65535, was " + port);
            }
            if (concurrency < 1 || requests < 1 || warmUpRequests < 0) {
                throw new IllegalArgumentException("concurrency and requests must be >= 1, warmUpRequests >= 0");
            }
            if (timeLimit.toMillis() < 1 || (warmUpRequests > 0 && warmUpTime.toMillis() < 1)) {
                throw new IllegalArgumentException("time limits must be at least 1 ms");
            }
        }

        /**
         * The longest a child may take before the parent kills it: its start and exit
         * ({@link #START_AND_EXIT_ALLOWANCE}), plus the bound {@link LoadGenerator} keeps for the
         * warm-up and for the level (twice the time limit plus 5 s each).
         */
        public Duration childLimit() {
            Duration level = timeLimit.multipliedBy(2).plusSeconds(5);
            Duration warm = warmUpRequests == 0 ? Duration.ZERO : warmUpTime.multipliedBy(2).plusSeconds(5);
            return START_AND_EXIT_ALLOWANCE.plus(warm).plus(level);
        }

        /** The child's arguments after its main class. */
        List<String> arguments() {
            return List.of("--port", Integer.toString(port), "--concurrency", Integer.toString(concurrency),
                    "--requests", Integer.toString(requests), "--time-limit-ms", Long.toString(timeLimit.toMillis()),
                    "--warmup-requests", Integer.toString(warmUpRequests),
                    "--warmup-time-ms", Long.toString(warmUpTime.toMillis()),
                    "--protocol", protocol.name());
        }
    }

    /**
     * What one child measured, and what the parent measured meanwhile.
     *
     * @param level the child's figures (its own wall time, its client's CPU and platform threads);
     *     null if it failed before reporting them
     * @param serverCpuNanos the parent's process CPU time between {@code go} and {@code done}; -1 if
     *     unknown or the level did not run
     * @param serverWindowNanos the parent's wall time between the same two points; 0 if it did not run
     * @param serverPeakPlatformThreads the parent's most platform threads alive at once over that window
     * @param error why the child failed (an exit, a kill, a report it could not parse); null if it did not
     */
    public record Outcome(LoadGenerator.Level level, int warmUpOk, int warmUpFailed, String warmUpError,
            long serverCpuNanos, long serverWindowNanos, int serverPeakPlatformThreads, String error, long childPid) {

        /** The level ran and the child reported it completely. */
        public boolean completed() {
            return error == null && level != null;
        }

        /** Server cores busy over the level: server CPU time / the parent's window; NaN if unknown. */
        public double serverCoresBusy() {
            return serverCpuNanos < 0 || serverWindowNanos <= 0 ? Double.NaN : (double) serverCpuNanos / serverWindowNanos;
        }

        /** Correct answers per second of server CPU time; NaN if unknown. */
        public double requestsPerServerCpuSecond() {
            return level == null || serverCpuNanos <= 0 ? Double.NaN : level.ok() / (serverCpuNanos / 1e9);
        }
    }

    /** {@link #run(Request, PrintStream, Duration, LongSupplier)} with the request's own limit and this process's CPU clock. */
    public static Outcome run(Request request, PrintStream err) throws InterruptedException {
        return run(request, err, request.childLimit(), ProcessMetrics::processCpuNanos);
    }

    /** The command that starts the child: this JVM's java binary, its class path, this class. */
    static List<String> command(Request request) {
        List<String> cmd = new ArrayList<>();
        cmd.add(javaBinary());
        String workers = System.getProperty(LoadGenerator.WORKER_THREADS_PROPERTY);
        if (workers != null) { // the workers' threads, as this JVM was asked (checked here, before the child starts)
            LoadGenerator.platformWorkers();
            cmd.add("-D" + LoadGenerator.WORKER_THREADS_PROPERTY + "=" + workers);
        }
        cmd.add("-cp");
        cmd.add(classPath());
        cmd.add(LoadGeneratorProcess.class.getName());
        cmd.addAll(request.arguments());
        return cmd;
    }

    /**
     * The child's class path: this JVM's {@code java.class.path}, followed by the entries of the
     * URL class loaders that loaded this class, where it was loaded by one (the JUnit console
     * launcher of {@code .gpu/junit} runs the tests from such a loader, with only its own jar on
     * {@code java.class.path}).
     */
    static String classPath() {
        LinkedHashSet<String> entries = new LinkedHashSet<>();
        for (String e : System.getProperty("java.class.path", "").split(File.pathSeparator)) {
            if (!e.isEmpty()) {
                entries.add(e);
            }
        }
        List<ClassLoader> loaders = new ArrayList<>();
        for (ClassLoader cl = LoadGeneratorProcess.class.getClassLoader(); cl != null; cl = cl.getParent()) {
            loaders.add(0, cl); // parents first, as they are searched first
        }
        for (ClassLoader cl : loaders) {
            if (cl instanceof URLClassLoader urls) {
                for (URL url : urls.getURLs()) {
                    try {
                        entries.add(Path.of(url.toURI()).toString());
                    } catch (URISyntaxException | IllegalArgumentException
                            | FileSystemNotFoundException e) {
                        // not a local file: the child could not use it either
                    }
                }
            }
        }
        return String.join(File.pathSeparator, entries);
    }

    /** {@code java.home}'s {@code bin/java}, else the binary this process was started with. */
    static String javaBinary() {
        Path home = Path.of(System.getProperty("java.home"), "bin", "java");
        if (Files.isExecutable(home)) {
            return home.toString();
        }
        return ProcessHandle.current().info().command().orElseThrow(
                () -> new IllegalStateException("cannot tell which java binary runs this JVM"));
    }

    /**
     * Runs one child to its end, killing it if it outlives {@code limit}.
     *
     * @param err receives the child's stderr, line by line
     * @param serverCpu the parent's CPU clock (nanoseconds; negative if unknown), read at the window's two ends
     */
    static Outcome run(Request request, PrintStream err, Duration limit, LongSupplier serverCpu)
            throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        Process child;
        try {
            child = new ProcessBuilder(command(request)).start();
        } catch (IOException e) {
            return failed(-1, "cannot start the load generator's JVM: " + e);
        }
        RUNNING.add(child);
        Report report = new Report();
        LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread stdout = Thread.ofVirtual().name("loadgen-stdout").start(() -> {
            pump(child.getInputStream(), lines::add);
            lines.add(EOF);
        });
        Thread stderr = Thread.ofVirtual().name("loadgen-stderr").start(() -> pump(child.getErrorStream(), line -> {
            synchronized (err) {
                err.println(line);
            }
        }));
        String error = null;
        try {
            error = converse(child, request, report, lines, deadline, limit, serverCpu, err);
            if (error == null && !child.waitFor(EXIT_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                error = "the load generator's JVM (pid " + child.pid() + ") did not exit within "
                        + EXIT_WAIT.toSeconds() + " s of its report: killed";
            }
        } finally {
            if (child.isAlive()) {
                child.destroyForcibly();
            }
            if (!child.waitFor(EXIT_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                error = error != null ? error : "the load generator's JVM (pid " + child.pid() + ") did not exit after a kill";
            }
            stdout.join(EXIT_WAIT);
            stderr.join(EXIT_WAIT);
            if (!child.isAlive()) {
                RUNNING.remove(child);
            }
        }
        if (error == null && child.exitValue() != 0) {
            error = "the load generator's JVM exited with code " + child.exitValue();
        }
        return new Outcome(report.level, report.warmUpOk, report.warmUpFailed, report.warmUpError,
                report.serverCpuNanos, report.serverWindowNanos, report.serverPeakThreads, error, child.pid());
    }

    private static Outcome failed(long pid, String error) {
        return new Outcome(null, 0, 0, null, -1, 0, 0, error, pid);
    }

    /** What the parent has read and measured so far. */
    private static final class Report {
        LoadGenerator.Level level;
        int warmUpOk;
        int warmUpFailed;
        String warmUpError;
        String firstError;
        long serverCpuNanos = -1;
        long serverWindowNanos;
        int serverPeakThreads;
        Map<String, String> result;
    }

    /** Reads the child's report to its end; returns null, or why the child failed. */
    private static String converse(Process child, Request request, Report report, LinkedBlockingQueue<String> lines,
            long deadline, Duration limit, LongSupplier serverCpu, PrintStream err) throws InterruptedException {
        long cpu0 = -1, t0 = 0;
        boolean started = false;
        String childError = null;
        while (true) {
            long left = deadline - System.nanoTime();
            String line = left <= 0 ? null : lines.poll(left, TimeUnit.NANOSECONDS);
            if (line == null) {
                child.destroyForcibly();
                return String.format(Locale.ROOT, "the load generator's JVM (pid %d) did not finish within %s: killed",
                        child.pid(), limitText(limit));
            }
            if (line == EOF) {
                boolean exited = child.waitFor(Math.max(1, (deadline - System.nanoTime()) / 1_000_000), TimeUnit.MILLISECONDS);
                String code = exited ? "exited with code " + child.exitValue() : "closed its output";
                return "the load generator's JVM " + code + " before its report was complete"
                        + (childError != null ? ": " + childError : "");
            }
            if (!line.startsWith(PREFIX)) {
                synchronized (err) {
                    err.println(line);                 // not part of the report: show it
                }
                continue;
            }
            String body = line.substring(PREFIX.length());
            int space = body.indexOf(' ');
            String kind = space < 0 ? body : body.substring(0, space);
            String rest = space < 0 ? "" : body.substring(space + 1);
            switch (kind) {
                case "warmup" -> {
                    String[] n = rest.split(" ");
                    try {
                        report.warmUpOk = Integer.parseInt(n[0]);
                        report.warmUpFailed = Integer.parseInt(n[1]);
                    } catch (RuntimeException e) {
                        return "malformed report line: " + line;
                    }
                }
                case "warmup-error" -> report.warmUpError = rest;
                case "ready" -> {
                    if (started) {
                        return "malformed report: two ready lines";
                    }
                    started = true;
                    ProcessMetrics.resetPeakPlatformThreads();
                    cpu0 = serverCpu.getAsLong();
                    t0 = System.nanoTime();
                    try {
                        OutputStream in = child.getOutputStream();
                        in.write("go\n".getBytes(StandardCharsets.US_ASCII));
                        in.flush();
                    } catch (IOException e) {
                        return "cannot tell the load generator to start: " + e;
                    }
                }
                case "done" -> {
                    if (!started) {
                        return "malformed report: done before ready";
                    }
                    long cpu1 = serverCpu.getAsLong();
                    report.serverWindowNanos = System.nanoTime() - t0;
                    report.serverCpuNanos = cpu0 < 0 || cpu1 < 0 ? -1 : cpu1 - cpu0;
                    report.serverPeakThreads = ProcessMetrics.peakPlatformThreads();
                }
                case "result" -> {
                    Map<String, String> m = new HashMap<>();
                    for (String kv : rest.split(" ")) {
                        int eq = kv.indexOf('=');
                        if (eq > 0) {
                            m.put(kv.substring(0, eq), kv.substring(eq + 1));
                        }
                    }
                    if (!m.keySet().containsAll(RESULT_KEYS)) {
                        return "malformed report line: " + line;
                    }
                    report.result = m;
                }
                case "first-error" -> report.firstError = rest;
                case "error" -> childError = rest;
                case "end" -> {
                    if (report.result == null || report.serverWindowNanos == 0) {
                        return "malformed report: end without done and result";
                    }
                    try {
                        report.level = level(report.result, report.firstError);
                    } catch (RuntimeException e) {
                        return "malformed result line: " + e.getMessage();
                    }
                    if (report.level.concurrency() != request.concurrency()) {
                        return "the load generator ran " + report.level.concurrency() + " concurrent, not "
                                + request.concurrency();
                    }
                    return null;
                }
                default -> { } // a newer child's line: ignored
            }
        }
    }

    private static String limitText(Duration limit) {
        return limit.toMillis() % 1000 == 0 ? limit.toSeconds() + " s" : limit.toMillis() + " ms";
    }

    static LoadGenerator.Level level(Map<String, String> m, String firstError) {
        return new LoadGenerator.Level(Integer.parseInt(m.get("concurrency")),
                URLDecoder.decode(m.get("protocol"), StandardCharsets.UTF_8),
                Integer.parseInt(m.get("sent")), Integer.parseInt(m.get("ok")), Integer.parseInt(m.get("failed")),
                Long.parseLong(m.get("wall-ns")), Long.parseLong(m.get("p50-ns")), Long.parseLong(m.get("p90-ns")),
                Long.parseLong(m.get("p99-ns")), Integer.parseInt(m.get("client-peak-platform-threads")),
                Long.parseLong(m.get("client-cpu-ns")), Boolean.parseBoolean(m.get("timed-out")), firstError);
    }

    /**
     * The {@code result} line's body for {@code l}: {@code key=value} pairs split by spaces, the
     * protocol URL-encoded since it may hold spaces ({@value LoadGenerator#RAW_HTTP_1_1}).
     */
    static String resultLine(LoadGenerator.Level l) {
        return String.format(Locale.ROOT, "result concurrency=%d protocol=%s sent=%d ok=%d failed=%d wall-ns=%d"
                + " p50-ns=%d p90-ns=%d p99-ns=%d timed-out=%b client-cpu-ns=%d client-peak-platform-threads=%d",
                l.concurrency(), URLEncoder.encode(l.protocol(), StandardCharsets.UTF_8), l.sent(), l.ok(), l.failed(), l.elapsedNanos(), l.p50(), l.p90(),
                l.p99(), l.timedOut(), l.cpuNanos(), l.peakPlatformThreads());
    }

    private interface LineSink {
        void accept(String line);
    }

    private static void pump(InputStream in, LineSink sink) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                sink.accept(line);
            }
        } catch (IOException e) {
            // the child was killed, or its pipe closed: the end of its output either way
        }
    }

    // ---- the child ----------------------------------------------------------------------------

    /**
     * The child JVM: {@code --port P --concurrency N --requests N --time-limit-ms MS
     * [--warmup-requests N] [--warmup-time-ms MS] [--protocol AUTO|HTTP_1_1|H2C]}. Exit code 0
     * after a complete report, 1 if it failed, 2 for bad arguments.
     */
    public static void main(String[] args) {
        PrintStream out = System.out;
        Request request;
        try {
            request = parse(args);
        } catch (RuntimeException e) {
            out.println(PREFIX + "error bad arguments: " + oneLine(e.getMessage()));
            out.flush();
            System.exit(2);
            return;
        }
        int code = runChild(request, out, new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII)));
        out.flush();
        System.exit(code);
    }

    static Request parse(String[] args) {
        Map<String, String> v = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --name value, got '" + args[i] + "'");
            }
            v.put(args[i].substring(2), args[++i]);
        }
        for (String required : List.of("port", "concurrency", "requests", "time-limit-ms")) {
            if (!v.containsKey(required)) {
                throw new IllegalArgumentException("--" + required + " is missing");
            }
        }
        return new Request(Integer.parseInt(v.get("port")), Integer.parseInt(v.get("concurrency")),
                Integer.parseInt(v.get("requests")), Duration.ofMillis(Long.parseLong(v.get("time-limit-ms"))),
                Integer.parseInt(v.getOrDefault("warmup-requests", "0")),
                Duration.ofMillis(Long.parseLong(v.getOrDefault("warmup-time-ms", "1000"))),
                LoadGenerator.Protocol.valueOf(v.getOrDefault("protocol", "AUTO").toUpperCase(Locale.ROOT)));
    }

    /** The child's work: warm-up, ready, wait for go, the level, the report. Returns the exit code. */
    static int runChild(Request request, PrintStream out, BufferedReader parent) {
        URI base = URI.create("http://" + DemoServer.HOST + ":" + request.port() + "/");
        try {
            if (request.warmUpRequests() > 0) {
                LoadGenerator.Level w = LoadGenerator.run(base, WARM_UP_CONCURRENCY, request.warmUpRequests(),
                        request.warmUpTime(), request.protocol(), LoadGenerator.ServerProcess.OTHER,
                        new LoadGenerator.Window() {});
                out.println(PREFIX + "warmup " + w.ok() + " " + w.failed());
                if (w.firstError() != null) {
                    out.println(PREFIX + "warmup-error " + oneLine(w.firstError()));
                }
                out.flush();
            }
            LoadGenerator.Level l = LoadGenerator.run(base, request.concurrency(), request.requests(),
                    request.timeLimit(), request.protocol(), LoadGenerator.ServerProcess.OTHER,
                    new LoadGenerator.Window() {
                        @Override
                        public void beforeStart(String protocol) throws InterruptedException {
                            out.println(PREFIX + "ready " + protocol);
                            out.flush();
                            String go;
                            try {
                                go = parent.readLine();
                            } catch (IOException e) {
                                throw new IllegalStateException("cannot read the parent's go: " + e, e);
                            }
                            if (!"go".equals(go)) {
                                throw new IllegalStateException("the parent said " + (go == null ? "nothing (its pipe closed)"
                                        : "'" + go + "'") + " instead of go");
                            }
                        }

                        @Override
                        public void afterEnd() {
                            out.println(PREFIX + "done");
                            out.flush();
                        }
                    });
            out.println(PREFIX + resultLine(l));
            if (l.firstError() != null) {
                out.println(PREFIX + "first-error " + oneLine(l.firstError()));
            }
            out.println(PREFIX + "end");
            out.flush();
            return 0;
        } catch (Exception e) {
            out.println(PREFIX + "error " + oneLine(e.toString()));
            out.flush();
            return 1;
        }
    }

    static String oneLine(String s) {
        return String.valueOf(s).replaceAll("[\\r\\n]+", " ").strip();
    }
}
