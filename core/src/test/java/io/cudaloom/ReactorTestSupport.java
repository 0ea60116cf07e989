package io.cudaloom;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/** Fixtures shared by the reactor tests on the simulated device. */
final class ReactorTestSupport {
    static final Duration LONG = Duration.ofSeconds(30);

    private ReactorTestSupport() {}

    /** Parked, untimed or timed (a parked waiter re-checks its delivery on a timer). */
    static boolean parked(Thread t) {
        Thread.State s = t.getState();
        return s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING;
    }

    /** Parked in a park whose blocker is {@code blocker} (e.g. the reactor's own park). */
    static boolean parkedOn(Thread t, Object blocker) {
        return parked(t) && java.util.concurrent.locks.LockSupport.getBlocker(t) == blocker;
    }

    /** A kernel that holds the stream until the returned latch opens. */
    static CountDownLatch gate(SimulatedStream stream) {
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

    /** Eventually: nothing armed, every slot back on the free list, nothing quarantined. */
    static void assertNothingLeaked(GpuDevice device) {
        await().atMost(LONG).untilAsserted(() -> {
            ReactorStats s = device.reactor().stats();
            assertEquals(0, s.armedNow(), "armed slots left: " + s);
            assertEquals(s.capacity(), s.freeSlots(), "slots not back on the free list: " + s);
            assertEquals(0, s.quarantined(), "quarantined slots left: " + s);
        });
    }

    /** Waits for {@code latch}, ignoring interrupts and keeping the interrupt status (for simulated kernels that hold a stream). */
    static void awaitUninterruptibly(CountDownLatch latch) {
        boolean interrupted = false;
        while (true) {
            try {
                latch.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
