package io.cudaloom.demo;

import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.IntFunction;

/**
 * A bounded load generator for {@link DemoServer}: {@code concurrency} virtual threads share a
 * fixed number of {@code GET /scale} requests, each checking its response body, and stop at the
 * count or the time limit, whichever comes first. It sends to 127.0.0.1 only.
 *
 * <p>HTTP/1.1 runs on {@link RawHttpClient}: each worker owns one keep-alive socket, writes a
 * prebuilt request and parses the answer from bytes, so the client costs as little CPU as it can.
 * (With the JDK {@link HttpClient} in its place the load generator, not the servers, was the
 * bottleneck of {@code GpuBench servlet}: its JVM used more CPU than the server it loaded; see
 * docs/BENCHMARKS.md, "How the benchmarks measure".) The protocol column says
 * {@value #RAW_HTTP_1_1}.
 *
 * <p>HTTP/1.1 needs one socket per concurrent request on each side: two file descriptors per
 * request when the server runs in the same process ({@code DemoMain --load}), one when it runs in
 * another ({@code GpuBench servlet}, whose load generator is a child JVM:
 * {@link LoadGeneratorProcess}). When that would not fit under the process's open-file limit, the
 * level runs over cleartext HTTP/2 (h2c) instead, on the JDK {@link HttpClient}, where the
 * requests are concurrent streams of one connection; the table says which protocol ran.
 */
final class LoadGenerator {
    /**
     * The workers' threads: {@code virtual} (the default: one virtual thread per connection) or
     * {@code platform} (one platform thread per connection, woken by the kernel when its answer
     * arrives, with no scheduler of the JVM between: a measured latency then carries no virtual-
     * thread hand-off of the client's own). A benchmark knob; {@link LoadGeneratorProcess} passes it
     * on to its child.
     */
    static final String WORKER_THREADS_PROPERTY = "loadgen.threads";
    /** A platform worker's stack: its loop is shallow (a socket read and the parse of an answer). */
    private static final long PLATFORM_WORKER_STACK = 256 * 1024;

    /** Whether the workers are platform threads ({@link #WORKER_THREADS_PROPERTY}); a bad value is refused. */
    static boolean platformWorkers() {
        String kind = System.getProperty(WORKER_THREADS_PROPERTY, "virtual");
        return switch (kind) {
            case "virtual" -> false;
            case "platform" -> true;
            default -> throw new IllegalArgumentException(WORKER_THREADS_PROPERTY + " must be virtual or platform, was '"
                    + kind + "'");
        };
    }

    /** File descriptors kept free for everything else (jars, the JVM, the selector). */
    private static final long FD_RESERVE = 512;
    /** The protocol column of an HTTP/1.1 level run on {@link RawHttpClient}. */
    static final String RAW_HTTP_1_1 = "HTTP/1.1 (raw sockets, keep-alive)";
    /** The factors the load asks for: request {@code i} scales by {@code 1 + i % MAX_FACTOR}. */
    static final int MAX_FACTOR = 7;
    /** Width of the text table's protocol column: the longest protocol it shows. */
    private static final int PROTOCOL_WIDTH = RAW_HTTP_1_1.length();

    private LoadGenerator() {}

    /** The figures of one concurrency level. */
    record Level(
            int concurrency,
            String protocol,
            int sent,
            int ok,
            int failed,
            long elapsedNanos,
            long p50,
            long p90,
            long p99,
            int peakPlatformThreads,
            long cpuNanos,
            boolean timedOut,
            String firstError) {

        double requestsPerSecond() {
            return elapsedNanos == 0 ? 0 : ok * 1e9 / elapsedNanos;
        }
    }

    /** Which HTTP version a level uses. */
    enum Protocol {
        /** HTTP/1.1 when the sockets of the concurrent requests fit under the open-file limit, else h2c. */
        AUTO,
        HTTP_1_1,
        H2C
    }

    /**
     * Called around a level's measured window, on the thread that runs the level: a process that
     * runs the load generator for another one (the child JVM of {@link LoadGeneratorProcess}) tells
     * it when the clock starts and stops.
     */
    interface Window {
        /**
         * After the one request before the clock (for h2c it opened and upgraded the level's
         * connection; for HTTP/1.1 each worker opens its own on its first request), before the
         * first timed request.
         */
        default void beforeStart(String protocol) throws InterruptedException {}

        /** Right after the last worker ended and the level's wall time was taken, before anything is closed. */
        default void afterEnd() {}
    }

    private static final Window NO_WINDOW = new Window() {};

    /** Where the server runs, for {@link Protocol#AUTO}: it counts the sockets of both ends in this process or one. */
    enum ServerProcess {
        /** The server runs in this process: two file descriptors per HTTP/1.1 request here. */
        SAME,
        /** The server runs in another process: one file descriptor per HTTP/1.1 request here. */
        OTHER;

        int socketsPerRequest() {
            return this == SAME ? 2 : 1;
        }
    }

    static Level run(URI base, int concurrency, int requests, Duration timeLimit) throws InterruptedException {
        return run(base, concurrency, requests, timeLimit, Protocol.AUTO);
    }

    /** {@link #run(URI, int, int, Duration)} recording every request's latency into {@code latency} too. */
    static Level run(URI base, int concurrency, int requests, Duration timeLimit, LatencyHistogram latency)
            throws InterruptedException {
        return run(base, concurrency, requests, timeLimit, Protocol.AUTO, ServerProcess.SAME, NO_WINDOW, latency);
    }

    static Level run(URI base, int concurrency, int requests, Duration timeLimit, Protocol version)
            throws InterruptedException {
        return run(base, concurrency, requests, timeLimit, version, ServerProcess.SAME, NO_WINDOW);
    }

    /** Whether a level of {@code concurrency} requests runs over h2c. */
    static boolean h2c(Protocol version, int concurrency, ServerProcess server) {
        return switch (version) {
            case AUTO -> (long) server.socketsPerRequest() * concurrency + FD_RESERVE > ProcessMetrics.maxFileDescriptors();
            case HTTP_1_1 -> false;
            case H2C -> true;
        };
    }

    static Level run(URI base, int concurrency, int requests, Duration timeLimit, Protocol version,
            ServerProcess server, Window window) throws InterruptedException {
        return run(base, concurrency, requests, timeLimit, version, server, window, new LatencyHistogram());
    }

    /** The level, its requests' latencies recorded into {@code latency} (empty before it). */
    private static Level run(URI base, int concurrency, int requests, Duration timeLimit, Protocol version,
            ServerProcess server, Window window, LatencyHistogram latency) throws InterruptedException {
        if (!DemoServer.HOST.equals(base.getHost())) {
            throw new IllegalArgumentException("the load generator sends to " + DemoServer.HOST + " only, not " + base);
        }
        if (concurrency < 1 || requests < 1) {
            throw new IllegalArgumentException("concurrency and requests must be >= 1");
        }
        if (!h2c(version, concurrency, server)) {
            // One request before the clock, on a connection of its own that is closed again; each
            // worker opens its connection on its first request, inside the window (HttpClient's
            // pool did the same for all but the connection it kept from this request).
            String protocol;
            try (RawHttpClient first = new RawHttpClient(base.getPort(), timeLimit)) {
                protocol = warmUp(first, base);
            }
            return measure(concurrency, requests, timeLimit, protocol, window,
                    w -> new RawHttpClient(base.getPort(), timeLimit), () -> {}, latency);
        }
        try (ExecutorService clientExecutor = Executors.newVirtualThreadPerTaskExecutor();
             HttpClient client = HttpClient.newBuilder()
                     .version(HttpClient.Version.HTTP_2)
                     .executor(clientExecutor)                 // no platform thread per request
                     .connectTimeout(timeLimit)
                     .build()) {
            // One request before the clock starts: opens the connection and upgrades it, so that
            // the level's requests become streams of that one connection.
            String protocol = warmUp(new JdkClient(client, base, timeLimit), base);
            return measure(concurrency, requests, timeLimit, protocol, window,
                    w -> new JdkClient(client, base, timeLimit), client::shutdownNow, latency);
        }
    }

    /**
     * The level itself: {@code concurrency} virtual threads, each with its own client (which it
     * closes when it ends), share the requests until the count or the deadline.
     *
     * @param afterEnd runs after {@link Window#afterEnd()}, before the figures are returned
     */
    private static Level measure(int concurrency, int requests, Duration timeLimit, String protocol, Window window,
            IntFunction<Client> clients, Runnable afterEnd, LatencyHistogram latency) throws InterruptedException {
        AtomicInteger next = new AtomicInteger();
        LongAdder ok = new LongAdder();
        LongAdder failed = new LongAdder();
        AtomicReference<String> firstError = new AtomicReference<>();
        window.beforeStart(protocol);

        ProcessMetrics.resetPeakPlatformThreads();
        long cpu0 = ProcessMetrics.processCpuNanos();
        CountDownLatch go = new CountDownLatch(1);
        long[] start = new long[1];
        List<Thread> workers = new ArrayList<>(concurrency);
        var factory = platformWorkers()
                ? Thread.ofPlatform().name("load-", 0).stackSize(PLATFORM_WORKER_STACK).factory()
                : Thread.ofVirtual().name("load-", 0).factory();
        for (int w = 0; w < concurrency; w++) {
            int worker = w;
            workers.add(factory.newThread(() -> {
                try (Client client = clients.apply(worker)) {
                    go.await();
                    long deadline = start[0] + timeLimit.toNanos();
                    int i;
                    while ((i = next.getAndIncrement()) < requests && System.nanoTime() - deadline < 0) {
                        int seed = i % 10_001, n = 256, factor = 1 + i % MAX_FACTOR;
                        long t = System.nanoTime();
                        try {
                            client.send(seed, n, factor);
                            latency.record(System.nanoTime() - t);
                            String wrong = client.mismatch(seed, n, factor);
                            if (wrong == null) {
                                ok.increment();
                            } else {
                                failed.increment();
                                firstError.compareAndSet(null, wrong);
                            }
                        } catch (Exception e) {
                            failed.increment();
                            firstError.compareAndSet(null, e.toString());
                            // An interrupt (the join bound's) ends a blocked socket read with a
                            // SocketException, the interrupt status set: stop either way.
                            if (e instanceof InterruptedException || Thread.currentThread().isInterrupted()) {
                                return;
                            }
                        }
                    }
                } catch (InterruptedException e) {
                    // interrupted before the start: nothing sent
                }
            }));
        }
        workers.forEach(Thread::start);
        start[0] = System.nanoTime();             // published to the workers by go.countDown()
        go.countDown();
        // Each connect and each read (raw HTTP/1.1), or each request (h2c), is bounded by
        // timeLimit and none starts after the deadline, so a server that stops answering ends
        // every worker within 2 x timeLimit; the join bound is a second guard (and the one for an
        // answer that dribbles in slower than that).
        long joinDeadline = start[0] + 2 * timeLimit.toNanos() + 5_000_000_000L;
        boolean timedOut = false;
        for (Thread w : workers) {
            long left = joinDeadline - System.nanoTime();
            if (left <= 0 || !w.join(Duration.ofNanos(Math.max(left, 1)))) {
                timedOut = true;
                w.interrupt();
            }
        }
        long elapsed = System.nanoTime() - start[0];
        long cpu = cpu0 < 0 ? -1 : ProcessMetrics.processCpuNanos() - cpu0;
        window.afterEnd();
        timedOut |= ok.sum() + failed.sum() < requests;
        afterEnd.run();
        return new Level(concurrency, protocol, (int) (ok.sum() + failed.sum()), (int) ok.sum(),
                (int) failed.sum(), elapsed, latency.percentile(50), latency.percentile(90),
                latency.percentile(99), ProcessMetrics.peakPlatformThreads(), cpu, timedOut,
                firstError.get());
    }

    /** The one request before the clock: its answer must be right, or the level does not run. */
    private static String warmUp(Client client, URI base) throws InterruptedException {
        try {
            client.send(1, 4, 3);
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("warm-up request to " + base + " failed: " + e, e);
        }
        String wrong = client.mismatch(1, 4, 3);
        if (wrong != null) {
            throw new IllegalStateException("warm-up request failed: " + wrong);
        }
        return client.protocol();
    }

    /**
     * One worker's way to the server: {@link #send} waits for the answer (and throws if none
     * came), {@link #mismatch} then checks it, outside the latency measured.
     */
    interface Client extends AutoCloseable {
        void send(int seed, int n, int factor) throws Exception;

        /** Null if the last answer is the correct one for these parameters, else what it was. */
        String mismatch(int seed, int n, int factor);

        /** What the protocol column says, after a request. */
        String protocol();

        @Override
        void close();
    }

    /** The h2c path: JDK {@link HttpClient}, shared by the workers; each has its last response. */
    private static final class JdkClient implements Client {
        private final HttpClient client;
        private final URI base;
        private final Duration timeout;
        private HttpResponse<String> last;

        JdkClient(HttpClient client, URI base, Duration timeout) {
            this.client = client;
            this.base = base;
            this.timeout = timeout;
        }

        @Override
        public void send(int seed, int n, int factor) throws Exception {
            HttpRequest req = HttpRequest.newBuilder(base.resolve("scale?seed=" + seed + "&n=" + n + "&factor=" + factor))
                    .timeout(timeout).GET().build();
            last = client.send(req, HttpResponse.BodyHandlers.ofString());
        }

        @Override
        public String mismatch(int seed, int n, int factor) {
            return last.statusCode() == 200 && last.body().equals(ScaleServlet.expectedBody(seed, n, factor)) ? null
                    : "HTTP " + last.statusCode() + ": " + last.body().strip();
        }

        @Override
        public String protocol() {
            return last.version() == HttpClient.Version.HTTP_2 ? "h2c" : "HTTP/1.1";
        }

        @Override
        public void close() {} // the HttpClient is the level's
    }

    static void printHeader(PrintStream out) {
        out.printf(Locale.ROOT, "  %11s  %-" + PROTOCOL_WIDTH + "s  %9s  %9s  %7s  %9s  %9s  %9s  %9s  %8s  %6s%n",
                "concurrency", "protocol", "requests", "ok", "failed", "req/s", "p50 ms", "p90 ms", "p99 ms",
                "platform", "CPU s");
        out.printf(Locale.ROOT, "  %11s  %-" + PROTOCOL_WIDTH + "s  %9s  %9s  %7s  %9s  %9s  %9s  %9s  %8s  %6s%n",
                "", "", "", "", "", "", "", "", "", "threads", "");
    }

    static void printRow(PrintStream out, Level l) {
        out.printf(Locale.ROOT, "  %,11d  %-" + PROTOCOL_WIDTH + "s  %,9d  %,9d  %,7d  %,9.0f  %9.2f  %9.2f  %9.2f  %8d  %6.2f%s%n",
                l.concurrency(), l.protocol(), l.sent(), l.ok(), l.failed(), l.requestsPerSecond(),
                l.p50() / 1e6, l.p90() / 1e6, l.p99() / 1e6, l.peakPlatformThreads(),
                l.cpuNanos() / 1e9, l.timedOut() ? "  (time limit reached)" : "");
    }
}
