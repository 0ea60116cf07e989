package io.cudaloom.micrometer;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.AwaitLatency;
import io.cudaloom.GpuFaultException;
import io.cudaloom.ReactorConfig;
import io.cudaloom.ReactorStats;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The Micrometer binder, read through a {@link SimpleMeterRegistry} against a simulated device. */
class CudaLoomMetricsTest {
    private static final Duration LONG = Duration.ofSeconds(30);

    /** A kernel that holds the stream until the returned latch opens. */
    private static CountDownLatch gate(SimulatedStream stream) {
        CountDownLatch gate = new CountDownLatch(1);
        stream.launch(() -> {
            try {
                gate.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        return gate;
    }

    @Test
    void theAwaitTimerAndPercentilesFollowTheLatencyHistogramAndTheCountersTheStats() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build())) {
            CudaLoomMetrics.of(device).tags(Tags.of("app", "test")).bindTo(registry);
            SimulatedStream stream = device.newStream();
            for (int i = 0; i < 20; i++) {
                stream.launchKernel(Duration.ofMillis(2));
                stream.await();
            }
            AwaitLatency latency = device.reactor().awaitLatency();
            ReactorStats stats = device.reactor().stats();
            assertTrue(latency.count() >= 15, "most awaits registered: " + latency + " " + stats);

            FunctionTimer timer = registry.get("cudaloom.await").tags("device", device.name(), "app", "test").functionTimer();
            assertEquals(latency.count(), (long) timer.count());
            assertEquals(latency.totalNanos(), timer.totalTime(TimeUnit.NANOSECONDS), latency.totalNanos() * 1e-9);
            assertTrue(timer.totalTime(TimeUnit.MILLISECONDS) > 0, "time waited: " + timer.totalTime(TimeUnit.MILLISECONDS));

            TimeGauge p50 = registry.get("cudaloom.await.latency").tag("quantile", "0.5").timeGauge();
            TimeGauge p99 = registry.get("cudaloom.await.latency").tag("quantile", "0.99").timeGauge();
            TimeGauge p999 = registry.get("cudaloom.await.latency").tag("quantile", "0.999").timeGauge();
            TimeGauge max = registry.get("cudaloom.await.latency.max").timeGauge();
            assertEquals(latency.p50Nanos(), p50.value(TimeUnit.NANOSECONDS), 1.0);
            assertEquals(latency.p99Nanos(), p99.value(TimeUnit.NANOSECONDS), 1.0);
            assertTrue(p50.value(TimeUnit.NANOSECONDS) > 0);
            assertTrue(p50.value() <= p99.value() && p99.value() <= p999.value() && p999.value() <= max.value());
            assertEquals(4, registry.find("cudaloom.await.latency").timeGauges().size(), "p50, p90, p99, p999");

            assertEquals(stats.completions(), registry.get("cudaloom.awaits.completed").functionCounter().count());
            assertEquals(stats.registrations(), registry.get("cudaloom.registrations").functionCounter().count());
            assertEquals(stats.immediate(), registry.get("cudaloom.awaits.immediate").functionCounter().count());
            assertEquals(20, stats.completions());
            assertEquals(stats.capacity(), registry.get("cudaloom.slots.capacity").gauge().value());
            // The scanner returns a slot to the free list after the wake-up (a waiter that saw its
            // own flag may return first), so the gauge follows the stats once the last one is back.
            Gauge free = registry.get("cudaloom.slots.free").gauge();
            await().atMost(LONG).untilAsserted(() -> {
                ReactorStats now = device.reactor().stats();
                assertEquals(now.capacity(), now.freeSlots(), "all back: " + now);
                assertEquals(now.freeSlots(), free.value(), "the gauge reads the stats");
            });
            assertNull(registry.find("cudaloom.internal.scan.passes").functionCounter(), "internals only when asked");
        }
    }

    @Test
    void gaugesShowTheWaitersAndTheWorkInFlightNowAlsoPerStream() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build())) {
            SimulatedStream held = device.newStream();
            SimulatedStream idle = device.newStream();
            CudaLoomMetrics.of(device).stream(held).stream(idle).bindTo(registry);
            Gauge waiters = registry.get("cudaloom.waiters").gauge();
            Gauge inFlight = registry.get("cudaloom.work.in.flight").gauge();
            Gauge heldInFlight = registry.get("cudaloom.stream.work.in.flight").tag("stream", held.toString()).gauge();
            Gauge idleInFlight = registry.get("cudaloom.stream.work.in.flight").tag("stream", idle.toString()).gauge();
            assertEquals(0.0, waiters.value());
            assertEquals(0.0, inFlight.value());

            CountDownLatch gate = gate(held);
            held.launchKernel(Duration.ofMillis(1));
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread[] threads = new Thread[3];
            for (int i = 0; i < threads.length; i++) {
                threads[i] = Thread.ofVirtual().start(() -> {
                    try {
                        held.await();
                    } catch (Throwable t) {
                        failure.set(t);
                    }
                });
            }
            await().atMost(LONG).until(() -> waiters.value() == 3.0);
            assertEquals(2.0, heldInFlight.value(), "the gate and the kernel behind it");
            assertEquals(0.0, idleInFlight.value());
            assertEquals(2.0, inFlight.value(), "the device's total");
            gate.countDown();
            for (Thread t : threads) {
                t.join();
            }
            assertNull(failure.get());
            assertEquals(0.0, waiters.value());
            assertEquals(0.0, heldInFlight.value(), "the awaits proved the work complete");
            assertEquals(0.0, inFlight.value());
        }
    }

    @Test
    void timeoutsAndFaultsAreCounted() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build())) {
            CudaLoomMetrics.of(device).bindTo(registry);
            FunctionCounter timeouts = registry.get("cudaloom.timeouts").functionCounter();
            FunctionCounter faults = registry.get("cudaloom.faults").functionCounter();
            SimulatedStream stream = device.newStream();
            CountDownLatch gate = gate(stream);
            assertFalse(stream.event().await(Duration.ofMillis(5)), "timed out behind the gate");
            assertFalse(stream.event().await(5, TimeUnit.MILLISECONDS));
            assertEquals(2.0, timeouts.count());
            assertEquals(2, device.reactor().stats().timeouts());
            gate.countDown();
            stream.await();
            assertEquals(2.0, timeouts.count(), "a completed await is no timeout");

            SimulatedStream faulty = device.newStream();
            faulty.injectFault("an illegal address");
            Throwable t = assertThrows(Throwable.class, faulty::await);
            assertInstanceOf(GpuFaultException.class, t);
            await().atMost(LONG).until(() -> faults.count() == 1.0);
        }
    }

    @Test
    void internalsAreBoundOnlyWhenAsked() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build())) {
            CudaLoomMetrics.of(device).internals(true).bindTo(registry);
            SimulatedStream stream = device.newStream();
            stream.launchKernel(Duration.ofMillis(1));
            stream.await();
            await().atMost(LONG).until(() -> registry.get("cudaloom.internal.scan.passes").functionCounter().count() > 0);
            assertEquals(device.reactor().stats().internals().flagWrites(),
                    registry.get("cudaloom.internal.flag.writes").functionCounter().count());
            assertTrue(registry.find("cudaloom.internal.scanner.cpu").functionCounter() != null);
        }
    }

    @Test
    void aStreamOfAnotherDeviceIsRefused() {
        try (SimulatedDevice a = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build());
                SimulatedDevice b = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build())) {
            SimulatedStream other = b.newStream();
            assertThrows(IllegalArgumentException.class, () -> CudaLoomMetrics.of(a).stream(other));
        }
    }
}
