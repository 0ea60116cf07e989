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
import io.cudaloom.ReactorClosedException;
import io.cudaloom.ReactorConfig;
import io.cudaloom.ReactorStats;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The Micrometer binder, read through a {@link SimpleMeterRegistry} and scraped through a
 * {@link PrometheusMeterRegistry}, against a simulated device.
 */
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
    void theAwaitTimerCountsWhatTheLatencyHistogramDoesAndTheCountersTheStats() throws Exception {
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

            Timer completed = registry.get("cudaloom.await").tags("device", device.name(), "app", "test",
                    "outcome", "completed").timer();
            assertEquals(latency.count(), completed.count(), "one timer record per await the histogram counts");
            assertEquals(latency.totalNanos(), completed.totalTime(TimeUnit.NANOSECONDS), latency.totalNanos() * 0.02,
                    "the same durations (the histogram's mean is within 1%)");
            assertTrue(completed.max(TimeUnit.MILLISECONDS) >= 1.0, "2 ms kernels: " + completed.max(TimeUnit.MILLISECONDS));
            assertEquals(6, registry.find("cudaloom.await").timers().size(), "one timer per outcome, registered at once");
            for (String other : List.of("timeout", "interrupted", "fault", "closed", "failed")) {
                assertEquals(0, registry.get("cudaloom.await").tag("outcome", other).timer().count(), other);
            }
            assertTrue(latency.recentP99Nanos() > 0, "20 awaits: the recent window has a p99: " + latency);
            assertEquals(latency.recentP99Nanos(),
                    registry.get("cudaloom.await.recent.p99").timeGauge().value(TimeUnit.NANOSECONDS), 1.0);
            assertNull(registry.find("cudaloom.await.latency").meter(), "no lifetime quantile gauges any more");

            assertEquals(stats.completions(), registry.get("cudaloom.completions").functionCounter().count());
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

    /**
     * What a Prometheus server scrapes: the await timer as a histogram with buckets (so it
     * aggregates across instances), one series per outcome, after awaits that complete, time out,
     * are interrupted, fault and find the device closed on the simulated device; the names in
     * Micrometer's conventions, rendered in Prometheus's (base unit seconds, counters
     * {@code _total}).
     */
    @Test
    void aPrometheusScrapeShowsTheAwaitHistogramsBucketsByOutcome() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build());
        try (CudaLoomMetrics metrics = CudaLoomMetrics.of(device).tags(Tags.of("app", "scrape"))
                .serviceLevelObjectives(Duration.ofMillis(5), Duration.ofMillis(50))) {
            metrics.bindTo(registry);
            SimulatedStream stream = device.newStream();
            stream.launchKernel(Duration.ofMillis(1));
            stream.await(); // completed

            CountDownLatch gate = gate(stream);
            assertFalse(stream.event().await(Duration.ofMillis(5)), "timed out behind the gate");
            Thread interrupted = interruptedWhileWaiting(device, stream);
            gate.countDown();
            interrupted.join();

            SimulatedStream faulty = device.newStream();
            faulty.injectFault("an illegal address");
            assertThrows(GpuFaultException.class, faulty::await); // fault

            SimulatedStream held = device.newStream();
            CountDownLatch never = gate(held);
            AtomicReference<Throwable> closed = new AtomicReference<>();
            Thread waiter = Thread.ofVirtual().start(() -> {
                try {
                    held.await();
                } catch (Throwable t) {
                    closed.set(t);
                }
            });
            await().atMost(LONG).until(() -> device.reactor().stats().waitersNow() == 1);
            device.close(); // the waiter throws ReactorClosedException
            waiter.join();
            never.countDown();
            assertInstanceOf(ReactorClosedException.class, closed.get());

            String scrape = registry.scrape();
            System.out.println(scrape.lines().filter(l -> l.startsWith("cudaloom_await_seconds_count")
                    || l.startsWith("# TYPE cudaloom_await")).collect(java.util.stream.Collectors.joining("\n")));
            assertTrue(scrape.contains("# TYPE cudaloom_await_seconds histogram"), "a histogram");
            for (String outcome : List.of("completed", "timeout", "interrupted", "fault", "closed")) {
                String series = "cudaloom_await_seconds_count{app=\"scrape\",device=\"" + device.name()
                        + "\",outcome=\"" + outcome + "\"} 1";
                assertTrue(scrape.contains(series), "one " + outcome + " await: " + series + " in\n" + scrape);
            }
            Pattern bucket = Pattern.compile("cudaloom_await_seconds_bucket\\{app=\"scrape\",device=\"[^\"]+\","
                    + "outcome=\"completed\",le=\"([^\"]+)\"\\} (\\d+)");
            List<String> bounds = bucket.matcher(scrape).results().map(m -> m.group(1)).toList();
            assertTrue(bounds.size() > 20, "the percentile histogram's buckets: " + bounds);
            assertTrue(bounds.contains("0.005") && bounds.contains("0.05"), "the SLO boundaries: " + bounds);
            assertTrue(bounds.contains("+Inf"), bounds.toString());
            assertTrue(Double.parseDouble(bounds.get(0)) <= 1e-6 * 1.5, "from about 1 us: " + bounds.get(0));
            System.out.printf("%d buckets per outcome, %s to %s%n", bounds.size(), bounds.get(0),
                    bounds.get(bounds.size() - 2));
            assertTrue(scrape.contains("cudaloom_await_seconds_max{"), "the timer's max");
            assertTrue(scrape.contains("cudaloom_await_recent_p99_seconds{"), "the recent p99 gauge");
            assertTrue(scrape.contains("cudaloom_completions_total{"), "a counter, _total");
            assertFalse(scrape.contains("cudaloom_timeouts"), "the timeouts are the timer's outcome tag");
            assertFalse(scrape.contains("quantile="), "no client-side quantiles: they do not aggregate");
        } finally {
            device.close();
        }
    }

    /** A virtual thread interrupted in {@code stream.await()}; returned once it has thrown. */
    private static Thread interruptedWhileWaiting(SimulatedDevice device, SimulatedStream stream) throws Exception {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        long before = device.reactor().stats().waitersNow();
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                stream.await();
            } catch (Throwable e) {
                thrown.set(e);
            }
        });
        await().atMost(LONG).until(() -> device.reactor().stats().waitersNow() > before);
        t.interrupt();
        await().atMost(LONG).until(() -> thrown.get() != null);
        assertInstanceOf(InterruptedException.class, thrown.get());
        return t;
    }

    @Test
    void closingTheBinderStopsTheTimerAndBindingARegistryAgainRecordsOnce() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build())) {
            SimulatedStream stream = device.newStream();
            CudaLoomMetrics metrics = CudaLoomMetrics.of(device).stream(stream);
            metrics.bindTo(registry);
            metrics.bindTo(registry); // again, after naming more streams: the same meters, one listener
            Timer completed = registry.get("cudaloom.await").tag("outcome", "completed").timer();
            long before = device.reactor().awaitLatency().count();
            for (int i = 0; i < 5; i++) {
                stream.launchKernel(Duration.ofMillis(1));
                stream.await();
            }
            long recorded = device.reactor().awaitLatency().count() - before;
            assertEquals(recorded, completed.count(), "each await recorded once");
            metrics.close();
            metrics.close(); // idempotent
            stream.launchKernel(Duration.ofMillis(1));
            stream.await();
            assertEquals(recorded, completed.count(), "closed: no more records");
            assertTrue(device.reactor().awaitLatency().count() >= before + recorded, "the awaits still ran");
        }
    }

    @Test
    void badSloBoundariesAreRefused() {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build())) {
            CudaLoomMetrics m = CudaLoomMetrics.of(device);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> m.serviceLevelObjectives(Duration.ofMillis(1), Duration.ZERO));
            assertEquals("SLO boundaries must be positive durations, got PT0S", e.getMessage());
            assertThrows(NullPointerException.class, () -> m.serviceLevelObjectives((Duration) null));
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
            // Combining counts queue positions: the waiters' shared flag write too.
            double work = device.reactor().config().submission() == io.cudaloom.Submission.COMBINING ? 3.0 : 2.0;
            assertEquals(work, heldInFlight.value(), "the gate and the kernel behind it");
            assertEquals(0.0, idleInFlight.value());
            assertEquals(work, inFlight.value(), "the device's total");
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
            Timer timeouts = registry.get("cudaloom.await").tag("outcome", "timeout").timer();
            FunctionCounter faults = registry.get("cudaloom.faults").functionCounter();
            SimulatedStream stream = device.newStream();
            CountDownLatch gate = gate(stream);
            assertFalse(stream.event().await(Duration.ofMillis(5)), "timed out behind the gate");
            assertFalse(stream.event().await(5, TimeUnit.MILLISECONDS));
            assertEquals(2, timeouts.count());
            assertEquals(2, device.reactor().stats().timeouts());
            assertTrue(timeouts.totalTime(TimeUnit.MILLISECONDS) >= 10, "each waited its 5 ms: "
                    + timeouts.totalTime(TimeUnit.MILLISECONDS));
            gate.countDown();
            stream.await();
            assertEquals(2, timeouts.count(), "a completed await is no timeout");

            SimulatedStream faulty = device.newStream();
            faulty.injectFault("an illegal address");
            Throwable t = assertThrows(Throwable.class, faulty::await);
            assertInstanceOf(GpuFaultException.class, t);
            await().atMost(LONG).until(() -> faults.count() == 1.0);
            assertEquals(1, registry.get("cudaloom.await").tag("outcome", "fault").timer().count(),
                    "the await that faulted (it registered before the fault was seen)");
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
