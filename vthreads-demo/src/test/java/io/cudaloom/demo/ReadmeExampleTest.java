package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cudaloom.AwaitLatency;
import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuDevice;
import io.cudaloom.GpuKernel;
import io.cudaloom.GpuStream;
import io.cudaloom.HostMemory;

import io.cudaloom.micrometer.CudaLoomMetrics;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import io.micrometer.core.instrument.Tags;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The code of the Java examples of README.md and docs/USER-GUIDE.md, run in the build
 * (.ci/consumer-check compiles and runs the pages' own blocks).
 */
class ReadmeExampleTest {

    /**
     * The first example (README.md, "Use it"), as written; with no GPU here, {@code GpuDevice.open()}
     * picks the simulated device.
     */
    @Test
    void deviceAgnosticExample() throws InterruptedException {
        float last;
        // --- README: device-agnostic example ---
        int n = 1 << 20;
        try (GpuDevice device = GpuDevice.open();            // CUDA if present, else simulated
             GpuStream stream = device.newStream();
             DeviceMemory data = device.allocate(4L * n);
             HostMemory host = device.allocateHost(4L * n)) { // pinned on a GPU
            for (int i = 0; i < n; i++) host.floats().put(i, i);
            stream.copy(host, data, 4L * n);
            stream.launch(GpuKernel.SCALE_F32, (n + 255) / 256, 256, data, 2f, n); // grid, block, arguments
            stream.copy(data, host, 4L * n);
            stream.await();                                  // parks this virtual thread, nothing else
            last = host.floats().get(n - 1);                 // 2 * (n - 1)
        }
        // --- end ---
        assertEquals(2f * ((1 << 20) - 1), last);
    }

    @Test
    void javaExample() {
        AtomicInteger checked = new AtomicInteger();
        // --- docs/USER-GUIDE.md, "Java": the simulated device's Java tasks ---
        try (SimulatedDevice device = SimulatedDevice.create();
             SimulatedStream stream = device.newStream();
             var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 10_000; i++) {
                threads.submit(() -> {
                    float[] v = {1, 2, 3};
                    stream.launch(() -> {              // the "kernel": runs on the device, in stream order
                        for (int k = 0; k < v.length; k++) v[k] *= 2;
                    });
                    stream.event().await();            // parks this virtual thread; no platform thread waits
                    if (v[2] == 6) checked.incrementAndGet();
                    return null;                       // a Callable, since await() throws InterruptedException
                });
            }
        }                                              // waits for the threads, then closes stream and device
        // --- end ---
        assertEquals(10_000, checked.get());
    }

    /** docs/USER-GUIDE.md's "Observability": the latency distribution and the Micrometer binder. */
    @Test
    void metricsExample() throws InterruptedException {
        io.micrometer.core.instrument.simple.SimpleMeterRegistry registry =
                new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        // --- docs/USER-GUIDE.md: metrics example ---
        try (GpuDevice device = GpuDevice.open();
             GpuStream stream = device.newStream()) {
            CudaLoomMetrics.of(device)                          // io.cudaloom.micrometer
                    .tags(Tags.of("app", "scaler"))
                    .stream(stream)                             // cudaloom.stream.work.in.flight{stream=...}
                    .bindTo(registry);                          // any MeterRegistry: Prometheus, OTLP, ...
            for (int i = 0; i < 100; i++) {
                stream.launchKernel(Duration.ofMillis(1));
                stream.await();
            }
            AwaitLatency latency = device.reactor().awaitLatency();  // the same numbers, from Java
            System.out.printf("awaits %d, p50 %d us, p99 %d us, max %d us, SlowAwait above %d us%n",
                    latency.count(), latency.p50Nanos() / 1000, latency.p99Nanos() / 1000,
                    latency.maxNanos() / 1000, latency.slowAwaitThresholdNanos() / 1000);
        }
        // --- end ---
        // A closed device's meters keep their final values: the timer counted the awaits as they ended.
        long awaits = registry.get("cudaloom.await").tag("outcome", "completed").timer().count();
        org.junit.jupiter.api.Assertions.assertTrue(awaits > 50, "most of the 100 awaits registered: " + awaits);
    }
}
