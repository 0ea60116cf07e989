package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.sim.SimulatedDevice;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * A parked waiter must not depend on its unpark alone (docs/LOST-WAKEUP.md). A lost unpark is
 * modelled exactly: the waiting thread parks on a record whose wake-ups go to another thread, so
 * the delivery is stored and its unpark reaches someone else.
 */
class LostWakeupRecheckTest {
    private static final long TICKET = 42L;

    @Test
    void aDeliveryWhoseUnparkIsLostIsFoundByTheRecheck() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder()
                .parkRecheck(Duration.ofMillis(5)).build())) {
            Waiter foreign = waiterOfAnotherThread();
            AtomicBoolean returned = new AtomicBoolean();
            CountDownLatch parking = new CountDownLatch(1);
            Thread waiter = Thread.ofVirtual().start(() -> {
                parking.countDown();
                try {
                    returned.set(device.reactor().parkUntilDelivered(foreign, TICKET, null, false, false, 0L));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            parking.await();
            awaitParkedInTheReactor(waiter, device);
            foreign.complete(TICKET, null); // stores the delivery; the unpark goes to the other thread
            assertTrue(waiter.join(Duration.ofSeconds(10)), "the waiter found its delivery without a wake-up");
            assertTrue(returned.get());
            assertEquals(1, device.reactor().stats().lateWakeups(), device.reactor().stats().toString());
        }
    }

    @Test
    void withoutTheRecheckTheSameLossHangsTheWaiter() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder()
                .parkRecheck(Duration.ZERO).build())) {
            Waiter foreign = waiterOfAnotherThread();
            CountDownLatch parking = new CountDownLatch(1);
            Thread waiter = Thread.ofVirtual().start(() -> {
                parking.countDown();
                try {
                    device.reactor().parkUntilDelivered(foreign, TICKET, null, false, false, 0L);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            parking.await();
            awaitParkedInTheReactor(waiter, device);
            foreign.complete(TICKET, null);
            // Shows what the recheck is for: the thread is still parked long after its delivery.
            assertTrue(!waiter.join(Duration.ofMillis(300)), "an untimed park stays parked when its unpark is lost");
            LockSupport.unpark(waiter); // the wake-up it missed
            assertTrue(waiter.join(Duration.ofSeconds(10)));
            assertEquals(0, device.reactor().stats().lateWakeups());
        }
    }

    private static void awaitParkedInTheReactor(Thread waiter, SimulatedDevice device) {
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() ->
                ReactorTestSupport.parkedOn(waiter, device.reactor()));
    }

    /** A reset record that belongs to (and unparks) a thread that has finished. */
    private static Waiter waiterOfAnotherThread() throws InterruptedException {
        AtomicReference<Waiter> ref = new AtomicReference<>();
        Thread t = Thread.ofVirtual().start(() -> {
            Waiter w = Waiter.current();
            w.reset();
            ref.set(w);
        });
        t.join();
        return ref.get();
    }
}
