package io.cudaloom;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/** The scanner's re-wake of delivered waiters that stayed parked (docs/LOST-WAKEUP.md). */
class RewakerTest {
    private final Object reactor = new Object(); // the blocker the reactor parks waiters with
    private final Rewaker rewaker = new Rewaker(reactor);

    /** A virtual thread parked the way the reactor parks a waiter, on its own reset record. */
    private Thread parkedWaiter(long ticket, AtomicReference<Waiter> record) {
        Thread t = Thread.ofVirtual().start(() -> {
            Waiter w = Waiter.current();
            w.reset();
            record.set(w);
            while (!w.isDelivered(ticket)) {
                LockSupport.park(reactor);
            }
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> record.get() != null
                && ReactorTestSupport.parkedOn(t, reactor));
        return t;
    }

    @Test
    void aDeliveredWaiterStillParkedAfterTheGraceIsWokenAgain() throws Exception {
        AtomicReference<Waiter> record = new AtomicReference<>();
        Thread t = parkedWaiter(7L, record);
        record.get().deliverWithoutWakeup(7L); // the delivery is stored, its unpark is lost
        long now = System.nanoTime();
        rewaker.remember(record.get(), 7L, now);
        rewaker.sweep(now); // too early: within the grace period nothing is checked
        assertFalse(t.join(Duration.ofMillis(100)), "parked: its wake-up was lost");
        assertEquals(0, rewaker.rewoken());
        rewaker.sweep(now + Rewaker.AFTER_NANOS);
        assertTrue(t.join(Duration.ofSeconds(10)), "woken again by the sweep");
        assertEquals(1, rewaker.rewoken());
        assertTrue(rewaker.isEmpty());
    }

    @Test
    void aWaiterThatMovedOnIsNotWokenForAnOldDelivery() throws Exception {
        AtomicReference<Waiter> record = new AtomicReference<>();
        Thread t = parkedWaiter(9L, record); // waits for 9; the remembered delivery was 7
        long now = System.nanoTime();
        rewaker.remember(record.get(), 7L, now);
        rewaker.sweep(now + Rewaker.AFTER_NANOS);
        assertEquals(0, rewaker.rewoken(), "its record does not hold 7");
        assertFalse(t.join(Duration.ofMillis(100)), "still parked, not woken spuriously");
        record.get().complete(9L, null);
        assertTrue(t.join(Duration.ofSeconds(10)));
    }

    @Test
    void aFullRingChecksItsOldestEntryInsteadOfForgettingIt() throws Exception {
        AtomicReference<Waiter> record = new AtomicReference<>();
        Thread t = parkedWaiter(5L, record);
        record.get().deliverWithoutWakeup(5L);
        long now = System.nanoTime();
        rewaker.remember(record.get(), 5L, now);
        Waiter other = record.get();
        for (int i = 0; i < 4096; i++) { // fills the ring; the next one evicts our entry early
            rewaker.remember(other, -1L, now);
        }
        assertTrue(t.join(Duration.ofSeconds(10)), "checked when evicted, and woken");
        assertEquals(1, rewaker.rewoken());
    }

    @Test
    void membersOfACoalescedGroupDeliveredOnTheScannerAreRemembered() throws Exception {
        AtomicReference<Waiter> record = new AtomicReference<>();
        Thread t = parkedWaiter(11L, record);
        WaitGroup group = new WaitGroup(0L);
        WaitGroup.Member joined = new WaitGroup.Member(record.get(), 11L);
        WaitGroup.Member withdrawn = new WaitGroup.Member(record.get(), 12L);
        assertTrue(group.join(joined));
        assertTrue(group.join(withdrawn));
        assertTrue(withdrawn.withdraw(record.get()));
        group.complete(null, rewaker, System.nanoTime());
        assertEquals(1, rewaker.pending(), "the delivered member, not the withdrawn one");
        assertTrue(t.join(Duration.ofSeconds(10)), "delivered and woken");
    }
}
