package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.sim.SimulatedDevice;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The load generator in its own JVM ({@code GpuBench servlet}'s): a real child process against a
 * server on the simulated device in this JVM.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class LoadGeneratorProcessTest {
    private static SimulatedDevice device;
    private static DemoWorkload workload;
    private static DemoServer server;

    private final ByteArrayOutputStream errBytes = new ByteArrayOutputStream();
    private final PrintStream err = new PrintStream(errBytes, true, StandardCharsets.UTF_8);

    @BeforeAll
    static void start() throws Exception {
        device = SimulatedDevice.create();
        workload = DemoWorkload.forDevice(device, 4, Duration.ofNanos(20_000));
        server = DemoServer.start(workload, 0);
    }

    @AfterAll
    static void stop() throws Exception {
        server.close();
        workload.close();
        device.close();
    }

    private static LoadGeneratorProcess.Request request(int port, int concurrency, int requests, Duration timeLimit,
            int warmUp) {
        return new LoadGeneratorProcess.Request(port, concurrency, requests, timeLimit, warmUp, Duration.ofSeconds(30),
                LoadGenerator.Protocol.HTTP_1_1);
    }

    private static boolean alive(long pid) {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    @Test
    void theParentReportsWhatTheChildSentAndTheServerServed() throws Exception {
        long served0 = workload.awaitLatency().count();
        LoadGeneratorProcess.Outcome o = LoadGeneratorProcess.run(request(server.port(), 20, 300, Duration.ofSeconds(60), 40),
                err);
        long served = workload.awaitLatency().count() - served0;

        assertTrue(o.completed(), o.error() + "\n" + errBytes);
        LoadGenerator.Level l = o.level();
        assertEquals(20, l.concurrency());
        assertEquals("HTTP/1.1 (raw sockets, keep-alive)", l.protocol(), "the child ran the raw client");
        assertEquals(300, l.sent());
        assertEquals(300, l.ok(), l.firstError());
        assertEquals(0, l.failed());
        assertFalse(l.timedOut());
        assertEquals(40, o.warmUpOk());
        assertEquals(0, o.warmUpFailed());
        // Every request the child counted reached this server: the level's 300, the warm-up's 40,
        // and one request per LoadGenerator run that opens its connection before the clock.
        assertEquals(300 + 40 + 2, served, "requests the server handled");
        assertTrue(0 < l.p50() && l.p50() <= l.p90() && l.p90() <= l.p99(), l.p50() + " " + l.p90() + " " + l.p99());
        assertTrue(l.elapsedNanos() > 0 && l.requestsPerSecond() > 0);
        assertTrue(o.serverWindowNanos() > 0 && o.serverCpuNanos() > 0, o.toString());
        assertTrue(o.serverPeakPlatformThreads() > 0, o.toString());
        assertNotEquals(ProcessHandle.current().pid(), o.childPid());
        assertFalse(alive(o.childPid()), "the child has exited");
    }

    @Test
    void serverCpuIsTheParentsOwnClockOverTheWindowNotTheChilds() throws Exception {
        // A fake parent clock: the figure must be its difference between go and done, exactly,
        // however much CPU the child itself used (which it reports apart).
        AtomicInteger reads = new AtomicInteger();
        long[] values = {1_000_000, 5_000_000};
        LongSupplier clock = () -> values[Math.min(reads.getAndIncrement(), 1)];
        LoadGeneratorProcess.Request r = request(server.port(), 4, 100, Duration.ofSeconds(60), 0);
        LoadGeneratorProcess.Outcome fake = LoadGeneratorProcess.run(r, err, r.childLimit(), clock);
        assertTrue(fake.completed(), fake.error() + "\n" + errBytes);
        assertEquals(2, reads.get(), "read once at go and once at done");
        assertEquals(4_000_000, fake.serverCpuNanos());
        assertTrue(fake.level().cpuNanos() > 0, "the child reports its own CPU: " + fake.level());
        assertEquals(fake.level().ok() / 0.004, fake.requestsPerServerCpuSecond(), 1e-6);

        // The real clock: the server's figure lies within this process's CPU time over the call.
        long cpu0 = ProcessMetrics.processCpuNanos();
        LoadGeneratorProcess.Outcome real = LoadGeneratorProcess.run(r, err);
        long parentCpu = ProcessMetrics.processCpuNanos() - cpu0;
        assertTrue(real.completed(), real.error() + "\n" + errBytes);
        assertTrue(real.serverCpuNanos() >= 0 && real.serverCpuNanos() <= parentCpu,
                "server CPU " + real.serverCpuNanos() + " within this process's " + parentCpu);
        assertEquals(real.serverCpuNanos() / (double) real.serverWindowNanos(), real.serverCoresBusy(), 1e-12);
    }

    @Test
    void aChildThatCannotConnectIsReportedAsAnErrorAndDoesNotHang() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName(DemoServer.HOST))) {
            closedPort = s.getLocalPort();
        }
        long t0 = System.nanoTime();
        LoadGeneratorProcess.Outcome o = LoadGeneratorProcess.run(request(closedPort, 4, 10, Duration.ofSeconds(20), 0),
                err);
        long tookMs = (System.nanoTime() - t0) / 1_000_000;
        assertFalse(o.completed());
        assertNull(o.level());
        assertNotNull(o.error());
        assertTrue(o.error().contains("exited with code 1") && o.error().contains("ConnectException"), o.error());
        assertEquals(-1, o.serverCpuNanos(), "no level ran, so no server CPU");
        assertTrue(Double.isNaN(o.serverCoresBusy()) && Double.isNaN(o.requestsPerServerCpuSecond()));
        assertFalse(alive(o.childPid()));
        assertTrue(tookMs < 20_000, "a refused connection fails at once, took " + tookMs + " ms");
    }

    @Test
    void aChildThatHangsIsKilledAtTheLimitAndReportedAsAnError() throws Exception {
        // A listener that accepts connections and never answers: the child's first request waits
        // (its own timeout is 60 s), and the parent's 8 s limit ends it.
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getByName(DemoServer.HOST))) {
            CountDownLatch connected = new CountDownLatch(1);
            List<Socket> accepted = new ArrayList<>();
            Thread acceptor = Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        accepted.add(silent.accept());
                        connected.countDown();
                    }
                } catch (IOException closed) {
                    // the test is over
                }
            });
            LoadGeneratorProcess.Request r = request(silent.getLocalPort(), 2, 10, Duration.ofSeconds(60), 0);
            long t0 = System.nanoTime();
            LoadGeneratorProcess.Outcome o = LoadGeneratorProcess.run(r, err, Duration.ofSeconds(8),
                    ProcessMetrics::processCpuNanos);
            long tookMs = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(connected.await(0, TimeUnit.SECONDS), "the child reached the silent server before the kill");
            assertFalse(o.completed());
            assertNull(o.level());
            assertTrue(o.error().contains("did not finish within 8 s: killed"), o.error());
            assertFalse(alive(o.childPid()), "killed");
            assertTrue(tookMs >= 8_000 && tookMs < 30_000, "took " + tookMs + " ms for an 8 s limit");
            silent.close();
            acceptor.join(Duration.ofSeconds(10));
            for (Socket s : accepted) {
                s.close();
            }
        }
    }

    @Test
    void loadedByAUrlClassLoaderTheChildGetsThatLoadersEntriesToo() throws Exception {
        // As under the JUnit console launcher (.gpu/junit): java.class.path holds only the
        // launcher's jar, the classes come from a URL class loader.
        java.net.URL classes = LoadGeneratorProcess.class.getProtectionDomain().getCodeSource().getLocation();
        try (java.net.URLClassLoader loader = new java.net.URLClassLoader(new java.net.URL[] {classes},
                ClassLoader.getPlatformClassLoader())) {
            Class<?> c = loader.loadClass(LoadGeneratorProcess.class.getName());
            assertEquals(loader, c.getClassLoader());
            java.lang.reflect.Method classPath = c.getDeclaredMethod("classPath");
            classPath.setAccessible(true);
            String cp = (String) classPath.invoke(null);
            String dir = java.nio.file.Path.of(classes.toURI()).toString();
            assertTrue(List.of(cp.split(java.io.File.pathSeparator)).contains(dir), dir + " in " + cp);
            assertTrue(startsWithThisJvmsClassPath(cp), cp);
        }
    }

    /** The entries of {@code cp} begin with those of java.class.path, in order (repeats once). */
    private static boolean startsWithThisJvmsClassPath(String cp) {
        List<String> own = java.util.Arrays.stream(System.getProperty("java.class.path").split(java.io.File.pathSeparator))
                .filter(e -> !e.isEmpty()).distinct().toList();
        List<String> entries = List.of(cp.split(java.io.File.pathSeparator));
        return entries.size() >= own.size() && entries.subList(0, own.size()).equals(own);
    }

    @Test
    void theResultLineRoundTrips() {
        LoadGenerator.Level l = new LoadGenerator.Level(10_000, "h2c", 123_456, 123_450, 6, 9_876_543_210L, 1_500_000,
                2_500_000, 9_000_000, 37, 4_321_000_000L, true, "HTTP 500: GPU fault: x");
        String line = LoadGeneratorProcess.resultLine(l);
        assertTrue(line.startsWith("result "), line);
        Map<String, String> m = new HashMap<>();
        for (String kv : line.substring("result ".length()).split(" ")) {
            m.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        }
        assertTrue(m.keySet().containsAll(LoadGeneratorProcess.RESULT_KEYS), line);
        assertEquals(l, LoadGeneratorProcess.level(m, "HTTP 500: GPU fault: x"));

        // a protocol with spaces (the raw client's) stays one value
        LoadGenerator.Level raw = new LoadGenerator.Level(100, LoadGenerator.RAW_HTTP_1_1, 10, 10, 0, 1, 1, 1, 1, 1, 1,
                false, null);
        String rawLine = LoadGeneratorProcess.resultLine(raw);
        assertEquals(1 + LoadGeneratorProcess.RESULT_KEYS.size(), rawLine.split(" ").length, rawLine);
        Map<String, String> rm = new HashMap<>();
        for (String kv : rawLine.substring("result ".length()).split(" ")) {
            rm.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        }
        assertEquals(raw, LoadGeneratorProcess.level(rm, null));
    }

    @Test
    void theChildsArgumentsRoundTripAndAreChecked() {
        LoadGeneratorProcess.Request r = new LoadGeneratorProcess.Request(8123, 100, 5_000, Duration.ofMillis(2_500), 64,
                Duration.ofSeconds(3), LoadGenerator.Protocol.H2C);
        assertEquals(r, LoadGeneratorProcess.parse(r.arguments().toArray(String[]::new)));
        assertThrows(IllegalArgumentException.class, () -> LoadGeneratorProcess.parse(new String[] {"--port", "80"}));
        assertThrows(IllegalArgumentException.class, () -> LoadGeneratorProcess.parse(new String[] {"--port"}));
        assertThrows(IllegalArgumentException.class,
                () -> new LoadGeneratorProcess.Request(0, 1, 1, Duration.ofSeconds(1), 0, Duration.ZERO, LoadGenerator.Protocol.AUTO));
        // the command: this JVM's java, its class path, the child's main class
        List<String> cmd = LoadGeneratorProcess.command(r);
        assertEquals(LoadGeneratorProcess.javaBinary(), cmd.get(0));
        assertEquals(List.of("-cp", LoadGeneratorProcess.classPath(), LoadGeneratorProcess.class.getName()),
                cmd.subList(1, 4));
        assertTrue(startsWithThisJvmsClassPath(LoadGeneratorProcess.classPath()), "this JVM's class path first");
        assertEquals(r.arguments(), cmd.subList(4, cmd.size()));
        assertEquals(Duration.ofSeconds(30 + 11 + 10), r.childLimit(), "start allowance + warm-up and level bounds");
    }

    @Test
    void theWorkersThreadKindIsPassedOnToTheChild() {
        LoadGeneratorProcess.Request r = new LoadGeneratorProcess.Request(8123, 100, 5_000, Duration.ofMillis(2_500), 64,
                Duration.ofSeconds(3), LoadGenerator.Protocol.HTTP_1_1);
        System.setProperty(LoadGenerator.WORKER_THREADS_PROPERTY, "platform");
        try {
            List<String> cmd = LoadGeneratorProcess.command(r);
            assertEquals("-D" + LoadGenerator.WORKER_THREADS_PROPERTY + "=platform", cmd.get(1));
            assertEquals("-cp", cmd.get(2));
            System.setProperty(LoadGenerator.WORKER_THREADS_PROPERTY, "Platform");
            assertThrows(IllegalArgumentException.class, () -> LoadGeneratorProcess.command(r), "refused before the child starts");
        } finally {
            System.clearProperty(LoadGenerator.WORKER_THREADS_PROPERTY);
        }
        assertEquals("-cp", LoadGeneratorProcess.command(r).get(1), "nothing passed on when unset");
    }
}
