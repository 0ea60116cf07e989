package io.cudaloom;

import static org.junit.jupiter.api.Assertions.*;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The await hot path allocates nothing: measured with the JVM's per-thread allocation counter on
 * the awaiting (platform) thread, both when the waiter's spin sees its flag (inline completion)
 * and when it parks and the scanner wakes it.
 */
class AwaitAllocationTest {
    private static final int WARMUP = 50_000, MEASURED = 100_000;

    @Test
    void inlineCompletionAllocatesNothing() throws Exception {
        double perAwait = bytesPerAwait(ReactorConfig.builder().waiterSpin(Duration.ofNanos(20_000), 64).build());
        System.out.printf("await allocation, inline completion: %.3f bytes/await%n", perAwait);
        assertTrue(perAwait < 1.0, "expected no allocation per await, measured " + perAwait + " bytes");
    }

    @Test
    void parkedCompletionAllocatesNothing() throws Exception {
        double perAwait = bytesPerAwait(ReactorConfig.builder().waiterSpin(Duration.ZERO).build());
        System.out.printf("await allocation, parked and woken by the scanner: %.3f bytes/await%n", perAwait);
        assertTrue(perAwait < 1.0, "expected no allocation per await, measured " + perAwait + " bytes");
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
