package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * {@code awaitUninterruptibly()} on a thread whose interrupt status is set (a pool's
 * {@code shutdownNow()} interrupted the task) still sleeps through a predicted wait: before, the
 * predicted sleep's {@code parkNanos} returned at once while the status was set, and the waiter
 * spun for the whole wait (35-39 ms of CPU for 40-45 ms of wall over 5 awaits of 8 ms kernels,
 * against 0.1-0.8 ms without the status). The waiting thread's own CPU time (ThreadMXBean) is
 * compared with the wall time of the awaits; the simulated kernels run on the device's worker,
 * whose CPU is not counted.
 */
class PredictedSleepInterruptTest {
    private static final Duration KERNEL = Duration.ofMillis(8);
    private static final int WARM = 20;
    private static final int MEASURED = 5;

    @Test
    void anUninterruptibleAwaitWithTheInterruptStatusSetSleepsThroughItsPredictionAndKeepsTheStatus() throws Exception {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        assumeTrue(threads.isCurrentThreadCpuTimeSupported(), "this JVM measures no thread CPU time");
        if (!threads.isThreadCpuTimeEnabled()) {
            threads.setThreadCpuTimeEnabled(true);
        }
        // A platform thread of its own: the CPU time of a virtual thread is not measured.
        long[] measured = new long[2]; // CPU, wall
        boolean[] statusKept = new boolean[1];
        Throwable[] failure = new Throwable[1];
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build())) {
            SimulatedStream stream = device.newStream();
            Thread waiter = Thread.ofPlatform().name("uninterruptible waiter").start(() -> {
                try {
                    for (int i = 0; i < WARM; i++) { // the stream's recent waits: about 8 ms, slept through
                        stream.launchKernel(KERNEL);
                        stream.event().awaitUninterruptibly();
                    }
                    Thread.currentThread().interrupt();
                    long cpu0 = threads.getCurrentThreadCpuTime();
                    long wall0 = System.nanoTime();
                    for (int i = 0; i < MEASURED; i++) {
                        stream.launchKernel(KERNEL);
                        stream.event().awaitUninterruptibly();
                    }
                    measured[1] = System.nanoTime() - wall0;
                    measured[0] = threads.getCurrentThreadCpuTime() - cpu0;
                    statusKept[0] = Thread.interrupted();
                } catch (Throwable t) {
                    failure[0] = t;
                }
            });
            waiter.join(); // bounded: every await is of an 8 ms kernel
        }
        if (failure[0] != null) {
            throw new AssertionError("the waiter failed", failure[0]);
        }
        long cpu = measured[0];
        long wall = measured[1];
        System.out.printf("%d awaitUninterruptibly() of %s kernels, interrupt status set: %.1f ms CPU for %.1f ms wall%n",
                MEASURED, KERNEL, cpu / 1e6, wall / 1e6);
        assertTrue(statusKept[0], "the interrupt status is still set after the awaits");
        assertTrue(wall >= MEASURED * KERNEL.toNanos(), "premise: the awaits waited for their kernels: " + wall + " ns");
        // Spinning through the sleep costs about the whole wall time (over 80% of it before); the
        // sleep costs the spin at its end (a few hundred microseconds an await).
        assertTrue(cpu < wall / 4, "the waiter slept: " + cpu / 1_000_000.0 + " ms of CPU for "
                + wall / 1_000_000.0 + " ms of wall");
    }
}
