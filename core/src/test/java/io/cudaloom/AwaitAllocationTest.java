package io.cudaloom;

import static org.junit.jupiter.api.Assertions.*;

import io.cudaloom.reactor.metrics.SlowAwaitEvent;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import jdk.jfr.EventType;
import jdk.jfr.Recording;
import org.junit.jupiter.api.Test;

/**
 * The await hot path allocates nothing: measured with the JVM's per-thread allocation counter on
 * the awaiting (platform) thread, both when the waiter's spin sees its flag (inline completion)
 * and when it parks and the scanner wakes it; with the JFR event {@code io.cudaloom.SlowAwait}
 * disabled, whether no recording runs or a recording runs with that event disabled. With the
 * event enabled, each timed await allocates its one event object (bounded here, and printed).
 */
class AwaitAllocationTest {
    private static final int WARMUP = 50_000, MEASURED = 100_000;
    private static final ReactorConfig INLINE = ReactorConfig.builder().waiterSpin(Duration.ofNanos(20_000), 64).build();
    private static final ReactorConfig PARKED = ReactorConfig.builder().waiterSpin(Duration.ZERO).build();

    @Test
    void inlineCompletionAllocatesNothing() throws Exception {
        assertFalse(slowAwaitEnabled(), "premise: no recording has io.cudaloom.SlowAwait enabled");
        double perAwait = bytesPerAwait(INLINE);
        System.out.printf("await allocation, inline completion: %.3f bytes/await%n", perAwait);
        assertTrue(perAwait < 1.0, "expected no allocation per await, measured " + perAwait + " bytes");
    }

    @Test
    void parkedCompletionAllocatesNothing() throws Exception {
        assertFalse(slowAwaitEnabled(), "premise: no recording has io.cudaloom.SlowAwait enabled");
        double perAwait = bytesPerAwait(PARKED);
        System.out.printf("await allocation, parked and woken by the scanner: %.3f bytes/await%n", perAwait);
        assertTrue(perAwait < 1.0, "expected no allocation per await, measured " + perAwait + " bytes");
    }

    @Test
    void aRecordingWithTheEventDisabledAllocatesNothingPerAwait() throws Exception {
        try (Recording recording = new Recording()) {
            // The other cuda-loom events stay enabled (a new recording enables custom events).
            recording.disable(SlowAwaitEvent.NAME);
            recording.start();
            assertFalse(slowAwaitEnabled());
            double inline = bytesPerAwait(INLINE);
            double parked = bytesPerAwait(PARKED);
            System.out.printf("await allocation, recording running, SlowAwait disabled: inline %.3f, parked %.3f "
                    + "bytes/await%n", inline, parked);
            assertTrue(inline < 1.0, "expected no allocation per inline await, measured " + inline + " bytes");
            assertTrue(parked < 1.0, "expected no allocation per parked await, measured " + parked + " bytes");
        }
    }

    @Test
    void withTheEventEnabledAnAwaitAllocatesAtMostItsEvent() throws Exception {
        try (Recording recording = new Recording()) {
            // Enabled, but no await is that slow: each is timed and none committed.
            recording.enable(SlowAwaitEvent.NAME).withThreshold(Duration.ofHours(1));
            recording.start();
            assertTrue(slowAwaitEnabled());
            double inline = bytesPerAwait(INLINE);
            double parked = bytesPerAwait(PARKED);
            System.out.printf("await allocation, SlowAwait enabled (threshold 1 h): inline %.3f, parked %.3f "
                    + "bytes/await%n", inline, parked);
            assertTrue(inline < 100 && parked < 100, "one event object (about 48 bytes) at most: " + inline
                    + ", " + parked);
        }
    }

    /**
     * The latency histogram records every registered await (HdrHistogram's Recorder into a
     * fixed-range histogram) and allocates nothing doing so; reading it in between (as the MXBean
     * and a Micrometer registry do) does not make the awaits allocate either. Every await here
     * registers: each follows a counted submission (with coalescing a stream with nothing counted
     * is known complete and its await registers nothing, so is never timed), on the waiter's own
     * slot, spinning and parked. (The shared-write path is printed, not asserted: its await allocates
     * the group member and delivery of {@link io.cudaloom.reactor.CoalescedWait}, about 88 bytes, with or without the
     * histogram, whose recording is the same line of {@link io.cudaloom.reactor.BlockingWait} on every path.)
     */
    @Test
    void theLatencyHistogramRecordsEveryRegisteredAwaitWithoutAllocating() throws Exception {
        ReactorConfig ownSlotInline = INLINE.toBuilder().coalesce(false).build();
        ReactorConfig ownSlotParked = PARKED.toBuilder().coalesce(false).build();
        for (ReactorConfig config : new ReactorConfig[] {ownSlotInline, ownSlotParked, INLINE, PARKED}) {
            var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            try (InstantDevice device = InstantDevice.create(config)) {
                GpuStream stream = device.newStream();
                for (int i = 0; i < WARMUP; i++) {
                    stream.noteExternalSubmission();
                    stream.await();
                    if (i == WARMUP / 2) {
                        device.reactor().awaitLatency(); // a reader drains the recorder in between
                    }
                }
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < MEASURED; i++) {
                    stream.noteExternalSubmission();
                    stream.await();
                }
                long allocated = threads.getCurrentThreadAllocatedBytes() - before;
                AwaitLatency latency = device.reactor().awaitLatency();
                assertEquals(0, device.reactor().stats().immediate(), "premise: every await registered");
                assertEquals(WARMUP + MEASURED, latency.count(), "every await recorded: " + latency);
                assertTrue(latency.maxNanos() > 0 && latency.p50Nanos() <= latency.maxNanos(), latency.toString());
                double perAwait = (double) allocated / MEASURED;
                System.out.printf("await allocation with the latency histogram (%s, %s): %.3f bytes/await, %s%n",
                        config.waiterSpinNanos() > 0 ? "spinning" : "parked", config.coalesce() ? "shared write"
                        : "own slot", perAwait, latency);
                if (!config.coalesce()) {
                    assertTrue(perAwait < 1.0, "expected no allocation per await, measured " + perAwait + " bytes");
                }
            }
        }
    }

    /**
     * An {@link AwaitListener} that allocates nothing adds no allocation to the await (the listener
     * array is read, not copied; the outcome is an enum constant; the duration a primitive), and
     * each registered await calls it once. Nor does the Micrometer binder's listener, recording
     * into a Prometheus registry's timer with its percentile histogram (measured here on
     * Micrometer 1.17: a fixed-bucket histogram and a time-window max, updated in place).
     */
    @Test
    void anAwaitListenerAddsNoAllocationToTheAwait() throws Exception {
        ReactorConfig ownSlotParked = PARKED.toBuilder().coalesce(false).build();
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long[] calls = new long[AwaitListener.Outcome.values().length];
        try (InstantDevice device = InstantDevice.create(ownSlotParked)) {
            device.reactor().addAwaitListener((outcome, nanos) -> calls[outcome.ordinal()]++); // this thread only
            GpuStream stream = device.newStream();
            for (int i = 0; i < WARMUP; i++) {
                stream.noteExternalSubmission();
                stream.await();
            }
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < MEASURED; i++) {
                stream.noteExternalSubmission();
                stream.await();
            }
            double perAwait = (double) (threads.getCurrentThreadAllocatedBytes() - before) / MEASURED;
            System.out.printf("await allocation with an await listener: %.3f bytes/await%n", perAwait);
            assertEquals(WARMUP + MEASURED, calls[AwaitListener.Outcome.COMPLETED.ordinal()], "one call per await");
            assertTrue(perAwait < 1.0, "expected no allocation per await, measured " + perAwait + " bytes");
        }
        var registry = new io.micrometer.prometheusmetrics.PrometheusMeterRegistry(
                io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT);
        try (InstantDevice device = InstantDevice.create(ownSlotParked);
                var metrics = io.cudaloom.micrometer.CudaLoomMetrics.of(device)) {
            metrics.bindTo(registry);
            GpuStream stream = device.newStream();
            for (int i = 0; i < WARMUP; i++) {
                stream.noteExternalSubmission();
                stream.await();
            }
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < MEASURED; i++) {
                stream.noteExternalSubmission();
                stream.await();
            }
            double perAwait = (double) (threads.getCurrentThreadAllocatedBytes() - before) / MEASURED;
            System.out.printf("await allocation with the Micrometer binder's timer (Prometheus registry): %.3f "
                    + "bytes/await%n", perAwait);
            assertEquals(WARMUP + MEASURED, registry.get("cudaloom.await").tag("outcome", "completed").timer().count());
            assertTrue(perAwait < 1.0, "expected no allocation per await, measured " + perAwait + " bytes");
        }
    }

    private static boolean slowAwaitEnabled() {
        return EventType.getEventType(SlowAwaitEvent.class).isEnabled();
    }

    private static double bytesPerAwait(ReactorConfig config) throws Exception {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        try (InstantDevice device = InstantDevice.create(config)) {
            GpuStream stream = device.newStream();
            for (int i = 0; i < WARMUP; i++) {
                stream.await();
            }
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < MEASURED; i++) {
                stream.await();
            }
            long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            assertEquals(WARMUP + MEASURED, device.reactor().stats().completions());
            return (double) allocated / MEASURED;
        }
    }
}
