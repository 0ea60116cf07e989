package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.demo.LoadGenerator.Level;
import io.cudaloom.demo.LoadGenerator.Protocol;
import io.cudaloom.sim.SimulatedDevice;
import java.net.URI;
import java.time.Duration;
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
    void sendsTheFixedCountAndChecksEveryBody() throws Exception {
        for (int concurrency : new int[] {1, 50}) {
            Level l = LoadGenerator.run(server.baseUri(), concurrency, 300, Duration.ofSeconds(30), Protocol.HTTP_1_1);
            assertEquals(concurrency, l.concurrency());
            assertEquals("HTTP/1.1", l.protocol());
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
    void sendsToLoopbackOnly() {
        assertThrows(IllegalArgumentException.class,
                () -> LoadGenerator.run(URI.create("http://example.com/"), 1, 1, Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class,
                () -> LoadGenerator.run(URI.create("http://localhost:" + server.port() + "/"), 1, 1, Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class,
                () -> LoadGenerator.run(server.baseUri(), 0, 1, Duration.ofSeconds(1)));
    }
}
