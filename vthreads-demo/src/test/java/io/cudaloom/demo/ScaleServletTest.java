package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.ReactorStats;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The servlet on embedded Jetty, ephemeral port, many concurrent requests, every body checked. */
class ScaleServletTest {
    private SimulatedDevice device;
    private ExecutorService clientThreads;
    private HttpClient client;

    @BeforeEach
    void setUp() {
        device = SimulatedDevice.create();
        clientThreads = Executors.newVirtualThreadPerTaskExecutor();
        client = HttpClient.newBuilder().executor(clientThreads).connectTimeout(Duration.ofSeconds(10)).build();
    }

    @AfterEach
    void tearDown() {
        client.close();
        clientThreads.close();
        device.close();
    }

    private HttpResponse<String> get(URI base, String query) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(base.resolve("scale" + query)).timeout(Duration.ofSeconds(30)).build();
        return client.send(req, HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void concurrentRequestsAllGetTheirOwnCorrectResult() throws Exception {
        Set<Boolean> handlerThreadsVirtual = ConcurrentHashMap.newKeySet();
        try (DemoWorkload workload = new DemoRunTest.ForwardingWorkload(
                     DemoWorkload.forDevice(device, 4, Duration.ofNanos(50_000))) {
                 @Override
                 public void scale(float[] data, float factor) throws InterruptedException {
                     handlerThreadsVirtual.add(Thread.currentThread().isVirtual());
                     super.scale(data, factor);
                 }
             };
             DemoServer server = DemoServer.start(workload, 0)) {
            assertTrue(server.port() > 0);
            URI base = server.baseUri();
            assertEquals("127.0.0.1", base.getHost());
            ReactorStats before = device.reactor().stats();

            int requests = 200;
            List<Future<String>> bodies = new ArrayList<>();
            try (ExecutorService senders = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < requests; i++) {
                    int seed = i * 37 % 10_001, n = 1 + i * 13 % 256, factor = i % 201 - 100;
                    bodies.add(senders.submit(() -> {
                        HttpResponse<String> resp = get(base, "?seed=" + seed + "&n=" + n + "&factor=" + factor);
                        assertEquals(200, resp.statusCode(), resp.body());
                        return resp.body();
                    }));
                }
            }
            for (int i = 0; i < requests; i++) {
                int seed = i * 37 % 10_001, n = 1 + i * 13 % 256, factor = i % 201 - 100;
                assertEquals(ScaleServlet.expectedBody(seed, n, factor), bodies.get(i).get(),
                        "request " + i + " (seed " + seed + ", n " + n + ", factor " + factor + ")");
            }
            assertEquals(Set.of(true), handlerThreadsVirtual, "every handler ran on a virtual thread");
            ReactorStats after = DemoRun.awaitQuiescence(workload);
            // Each await armed a (shared) write, joined one, found its work done, or fell back.
            long awaits = (after.registrations() - before.registrations()) + (after.coalesced() - before.coalesced())
                    + (after.immediate() - before.immediate()) + (after.fallbacks() - before.fallbacks());
            assertEquals(requests, awaits, "each request awaited once through the reactor");
            assertEquals(0, after.armedNow());
        }
    }

    /**
     * The servlet benchmark's baseline: the same servlet on Jetty's pool of 200 platform threads,
     * waiting without the reactor. On the simulated device the blocking wait is a latch behind the
     * stream's work (it has no cuStreamSynchronize): this checks the wiring (pool, wait option,
     * answers), not CudaStream.synchronize itself, which needs a GPU (BenchGpuTest.servletInMiniature).
     */
    @Test
    void thePlatformPoolWithABlockingWaitAnswersCorrectlyWithoutTheReactor() throws Exception {
        Set<String> handlerThreads = ConcurrentHashMap.newKeySet();
        Set<Boolean> handlerThreadsVirtual = ConcurrentHashMap.newKeySet();
        try (DemoWorkload workload = new DemoRunTest.ForwardingWorkload(DemoWorkload.forDevice(
                     device, 4, Duration.ofNanos(50_000), DemoWorkload.WaitBy.SYNCHRONIZE)) {
                 @Override
                 public void scale(float[] data, float factor) throws InterruptedException {
                     handlerThreads.add(Thread.currentThread().getName());
                     handlerThreadsVirtual.add(Thread.currentThread().isVirtual());
                     super.scale(data, factor);
                 }
             };
             DemoServer server = DemoServer.start(workload, 0, DemoServer.RequestThreads.PLATFORM_200)) {
            assertTrue(workload.description().contains("blocking wait"), workload.description());
            URI base = server.baseUri();
            ReactorStats before = device.reactor().stats();
            int requests = 300;
            List<Future<String>> bodies = new ArrayList<>();
            try (ExecutorService senders = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < requests; i++) {
                    int seed = i * 41 % 10_001, n = 1 + i * 7 % 256, factor = i % 201 - 100;
                    bodies.add(senders.submit(() -> {
                        HttpResponse<String> resp = get(base, "?seed=" + seed + "&n=" + n + "&factor=" + factor);
                        assertEquals(200, resp.statusCode(), resp.body());
                        return resp.body();
                    }));
                }
            }
            for (int i = 0; i < requests; i++) {
                int seed = i * 41 % 10_001, n = 1 + i * 7 % 256, factor = i % 201 - 100;
                assertEquals(ScaleServlet.expectedBody(seed, n, factor), bodies.get(i).get(),
                        "request " + i + " (seed " + seed + ", n " + n + ", factor " + factor + ")");
            }
            assertEquals(Set.of(false), handlerThreadsVirtual, "every handler ran on a platform thread");
            assertTrue(handlerThreads.stream().allMatch(t -> t.startsWith("demo-http-platform")), handlerThreads.toString());
            assertTrue(handlerThreads.size() <= DemoServer.RequestThreads.PLATFORM_POOL_SIZE,
                    handlerThreads.size() + " handler threads");
            assertEquals(requests, workload.awaitLatency().count(), "one wait per request");
            ReactorStats after = device.reactor().stats();
            assertEquals(before.registrations() + before.immediate() + before.fallbacks() + before.coalesced(),
                    after.registrations() + after.immediate() + after.fallbacks() + after.coalesced(),
                    "the blocking wait never went through the reactor");
        }
    }

    @Test
    void defaultsAndBadInput() throws Exception {
        try (DemoWorkload workload = DemoWorkload.forDevice(device, 1, Duration.ZERO);
             DemoServer server = DemoServer.start(workload, 0)) {
            URI base = server.baseUri();
            HttpResponse<String> ok = get(base, "");
            assertEquals(200, ok.statusCode());
            assertEquals(ScaleServlet.expectedBody(0, 256, 2), ok.body());
            assertEquals("sum=65280\n", ok.body());

            String[][] bad = {
                {"?n=0", "n must be between 1 and 256, was 0"},
                {"?n=257", "n must be between 1 and 256, was 257"},
                {"?seed=-1", "seed must be between 0 and 10000, was -1"},
                {"?factor=abc", "factor must be a whole number, was 'abc'"},
                {"?factor=101", "factor must be between -100 and 100, was 101"},
            };
            for (String[] b : bad) {
                HttpResponse<String> resp = get(base, b[0]);
                assertEquals(400, resp.statusCode(), b[0]);
                assertEquals("bad request: " + b[1] + "\n", resp.body(), b[0]);
            }
            assertEquals(404, get(base.resolve("/nothing/"), "").statusCode());
        }
    }

    @Test
    void aDeviceFaultAnswers500AndAClosedDevice503() throws Exception {
        SimulatedStream faulty = device.newStream();
        DemoWorkload faulting = new DemoRunTest.ForwardingWorkload(DemoWorkload.forDevice(device, 1, Duration.ZERO)) {
            @Override
            public void scale(float[] data, float factor) throws InterruptedException {
                faulty.injectFault("illegal address (injected)");
                faulty.event().await();
            }
        };
        try (faulting; DemoServer server = DemoServer.start(faulting, 0)) {
            HttpResponse<String> resp = get(server.baseUri(), "?n=4");
            assertEquals(500, resp.statusCode());
            assertTrue(resp.body().startsWith("GPU fault: "), resp.body());
            assertTrue(resp.body().contains("illegal address (injected)"), resp.body());
        }

        try (DemoWorkload workload = DemoWorkload.forDevice(device, 1, Duration.ZERO);
             DemoServer server = DemoServer.start(workload, 0)) {
            assertEquals(200, get(server.baseUri(), "?n=4").statusCode());
            device.close();
            HttpResponse<String> resp = get(server.baseUri(), "?n=4");
            assertEquals(503, resp.statusCode());
            assertTrue(resp.body().startsWith("device unavailable: "), resp.body());
        }
    }
}
