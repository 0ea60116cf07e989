package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.demo.LoadGenerator.Level;
import io.cudaloom.demo.LoadGenerator.Protocol;
import io.cudaloom.sim.SimulatedDevice;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class LoadGeneratorTest {
    private static SimulatedDevice device;
    private static DemoWorkload workload;
    private static DemoServer server;

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

    @Test
    void platformWorkersSendTheSameRequestsOnAPlatformThreadEach() throws Exception {
        int concurrency = 40;
        Level virtual = LoadGenerator.run(server.baseUri(), concurrency, 300, Duration.ofSeconds(30), Protocol.HTTP_1_1);
        System.setProperty(LoadGenerator.WORKER_THREADS_PROPERTY, "platform");
        try {
            Level l = LoadGenerator.run(server.baseUri(), concurrency, 300, Duration.ofSeconds(30), Protocol.HTTP_1_1);
            assertEquals(300, l.ok(), String.valueOf(l.firstError()));
            assertEquals(0, l.failed());
            // This JVM's peak platform threads (the server's among them): the platform workers add one each.
            assertTrue(l.peakPlatformThreads() >= virtual.peakPlatformThreads() + concurrency / 2,
                    "one platform thread per connection: peak " + l.peakPlatformThreads() + ", with virtual workers "
                            + virtual.peakPlatformThreads());
            System.setProperty(LoadGenerator.WORKER_THREADS_PROPERTY, "carrier");
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, LoadGenerator::platformWorkers);
            assertEquals("loadgen.threads must be virtual or platform, was 'carrier'", bad.getMessage());
        } finally {
            System.clearProperty(LoadGenerator.WORKER_THREADS_PROPERTY);
        }
        assertFalse(LoadGenerator.platformWorkers(), "virtual by default");
    }

    @Test
    void sendsTheFixedCountAndChecksEveryBody() throws Exception {
        for (int concurrency : new int[] {1, 50}) {
            long served0 = workload.awaitLatency().count();
            Level l = LoadGenerator.run(server.baseUri(), concurrency, 300, Duration.ofSeconds(30), Protocol.HTTP_1_1);
            assertEquals(concurrency, l.concurrency());
            assertEquals("HTTP/1.1 (raw sockets, keep-alive)", l.protocol(), "the raw client ran");
            assertEquals(300 + 1, workload.awaitLatency().count() - served0,
                    "every request counted reached the server (and the one before the clock)");
            assertEquals(300, l.sent());
            assertEquals(300, l.ok(), String.valueOf(l.firstError()));
            assertEquals(0, l.failed());
            assertNull(l.firstError());
            assertFalse(l.timedOut());
            assertTrue(l.requestsPerSecond() > 0);
            assertTrue(0 < l.p50() && l.p50() <= l.p90() && l.p90() <= l.p99());
            assertTrue(l.peakPlatformThreads() > 0 && l.peakPlatformThreads() < 200,
                    "platform threads " + l.peakPlatformThreads() + " for " + concurrency + " concurrent requests");
        }
    }

    @Test
    void manyConcurrentRequestsShareOneH2cConnection() throws Exception {
        Level l = LoadGenerator.run(server.baseUri(), 1_000, 2_000, Duration.ofSeconds(60), Protocol.H2C);
        assertEquals("h2c", l.protocol(), "the server upgraded the connection to HTTP/2");
        assertEquals(2_000, l.ok(), String.valueOf(l.firstError()));
        assertEquals(0, l.failed());
        assertTrue(l.peakPlatformThreads() < 200, "platform threads " + l.peakPlatformThreads());
    }

    @Test
    void stopsAtTheTimeLimit() throws Exception {
        try (SimulatedDevice slowDevice = SimulatedDevice.create();
             DemoWorkload slow = DemoWorkload.forDevice(slowDevice, 1, Duration.ofMillis(100));
             DemoServer slowServer = DemoServer.start(slow, 0)) {
            long t0 = System.nanoTime();
            Level l = LoadGenerator.run(slowServer.baseUri(), 2, 1_000, Duration.ofSeconds(1));
            long tookMs = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(l.timedOut());
            assertTrue(l.ok() > 0 && l.ok() < 100, "ok " + l.ok());
            assertEquals(0, l.failed(), String.valueOf(l.firstError()));
            assertTrue(tookMs < 5_000, "took " + tookMs + " ms for a 1 s limit");
        }
    }

    @Test
    void aServerThatStopsAnsweringEndsTheLevelWithinItsBoundWithFailuresCounted() throws Exception {
        // A plain listener that answers the one request before the clock (or the level would not
        // start), then accepts every connection and never answers.
        String body = ScaleServlet.expectedBody(1, 4, 3);
        byte[] answer = ("HTTP/1.1 200 OK\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
                .getBytes(StandardCharsets.US_ASCII);
        try (ServerSocket listener = new ServerSocket(0, 100, InetAddress.getByName(DemoServer.HOST))) {
            List<Socket> accepted = new CopyOnWriteArrayList<>();
            Thread acceptor = Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        Socket s = listener.accept();
                        accepted.add(s);
                        if (accepted.size() == 1) {
                            InputStream in = s.getInputStream();
                            for (int c, crlf = 0; crlf < 4 && (c = in.read()) >= 0; ) {
                                crlf = c == (crlf % 2 == 0 ? '\r' : '\n') ? crlf + 1 : 0;
                            }
                            s.getOutputStream().write(answer);
                        }
                    }
                } catch (IOException closed) {
                    // the listener closed: the test is over
                }
            });
            try {
                Duration limit = Duration.ofSeconds(1);
                long t0 = System.nanoTime();
                Level l = LoadGenerator.run(URI.create("http://" + DemoServer.HOST + ":" + listener.getLocalPort() + "/"),
                        4, 1_000, limit, Protocol.HTTP_1_1);
                long tookMs = (System.nanoTime() - t0) / 1_000_000;
                assertEquals(LoadGenerator.RAW_HTTP_1_1, l.protocol());
                // Each worker's first request waits one read timeout (the limit), which ends past
                // the deadline: one failed request each, none answered.
                assertEquals(0, l.ok());
                assertEquals(4, l.failed());
                assertEquals(4, l.sent());
                assertTrue(l.timedOut(), "the time limit ended the level before its 1,000 requests");
                assertTrue(String.valueOf(l.firstError()).contains("SocketTimeoutException"), l.firstError());
                // The bound: every read ends within the limit of its start, none starts past the deadline.
                assertTrue(l.elapsedNanos() >= limit.toNanos() && l.elapsedNanos() < 2 * limit.toNanos() + 3_000_000_000L,
                        "level took " + l.elapsedNanos() / 1_000_000 + " ms for a 1 s limit");
                assertTrue(tookMs < 15_000, "run took " + tookMs + " ms");
                assertTrue(accepted.size() >= 1 + 4, "the warm-up's connection and one per worker: " + accepted.size());
            } finally {
                listener.close();
                acceptor.join(Duration.ofSeconds(10));
                for (Socket s : accepted) {
                    s.close();
                }
            }
        }
    }

    @Test
    void theTextTableKeepsItsColumnsWithTheLongestProtocol() {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        java.io.PrintStream out = new java.io.PrintStream(bytes, true, StandardCharsets.UTF_8);
        LoadGenerator.printHeader(out);
        for (String protocol : List.of(LoadGenerator.RAW_HTTP_1_1, "h2c")) {
            LoadGenerator.printRow(out, new Level(100, protocol, 10_000, 10_000, 0, 1_000_000_000L, 1_000_000,
                    2_000_000, 3_000_000, 22, 5_150_000_000L, false, null));
        }
        List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        int requestsEnd = lines.get(0).indexOf("requests") + "requests".length();
        assertEquals(requestsEnd, lines.get(2).indexOf("10,000") + "10,000".length(), lines.get(2));
        assertEquals(requestsEnd, lines.get(3).indexOf("10,000") + "10,000".length(), lines.get(3));
        assertEquals(lines.get(0).length(), lines.get(2).length(), "header and rows end in the same column");
    }

    @Test
    void sendsToLoopbackOnly() {
        assertThrows(IllegalArgumentException.class,
                () -> LoadGenerator.run(URI.create("http://example.com/"), 1, 1, Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class,
                () -> LoadGenerator.run(URI.create("http://localhost:" + server.port() + "/"), 1, 1, Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class,
                () -> LoadGenerator.run(server.baseUri(), 0, 1, Duration.ofSeconds(1)));
    }
}
