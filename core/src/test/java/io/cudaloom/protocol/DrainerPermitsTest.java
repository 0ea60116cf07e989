package io.cudaloom.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The device-wide cap on drainers on its own (no stream, no driver): the cap, no lane left undrained, bad input. */
class DrainerPermitsTest {

    @Test
    void aCapBelowOneIsRefusedNamingIt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new DrainerPermits(0));
        assertEquals("permits must be at least 1, was 0", e.getMessage());
    }

    /**
     * Eight lanes, each a queue of appends drained by whoever holds a permit, 16 platform threads
     * appending and asking for drains at once, a cap of two: never more than two drains run at once,
     * and every append is drained (each lane's last drain sees its last append). Its premise,
     * checked: requests did find every permit taken.
     */
    @Test
    void atMostTheCapDrainsAtOnceAndEveryAppendIsDrained() throws Exception {
        DrainerPermits permits = new DrainerPermits(2);
        int lanes = 8, threads = 16, appendsPerThread = 20_000;
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger mostInside = new AtomicInteger();
        List<AtomicLong> appended = new ArrayList<>();
        List<AtomicLong> drained = new ArrayList<>();
        List<DrainerPermits.Lane> all = new ArrayList<>();
        for (int i = 0; i < lanes; i++) {
            AtomicLong a = new AtomicLong();
            AtomicLong d = new AtomicLong();
            appended.add(a);
            drained.add(d);
            all.add(permits.lane(() -> {
                mostInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                d.accumulateAndGet(a.get(), Math::max); // everything appended before this read is drained
                inside.decrementAndGet();
            }));
        }
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int lane = t % lanes;
            workers.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < appendsPerThread; i++) {
                    appended.get(lane).incrementAndGet();
                    all.get(lane).drain();
                }
            }));
        }
        start.countDown();
        for (Thread w : workers) {
            w.join();
        }
        for (int i = 0; i < lanes; i++) {
            assertEquals(appended.get(i).get(), drained.get(i).get(), "lane " + i + " left with appends undrained");
        }
        assertEquals((long) threads * appendsPerThread, appended.stream().mapToLong(AtomicLong::get).sum());
        assertTrue(mostInside.get() <= 2, "at most the cap drains at once, was " + mostInside.get());
        assertTrue(permits.leftToHolders() > 0, "premise: requests found every permit taken");
    }

    /** A drain that asks for a drain (a proof raised by a completion inside it) leaves it to its own loop: no deadlock. */
    @Test
    void aNestedRequestOnTheHoldersThreadIsDrainedByItsLoop() {
        DrainerPermits permits = new DrainerPermits(1);
        AtomicInteger drainsOfB = new AtomicInteger();
        DrainerPermits.Lane b = permits.lane(drainsOfB::incrementAndGet);
        DrainerPermits.Lane a = permits.lane(b::drain); // A's drain asks for B's while holding the one permit
        a.drain();
        assertEquals(1, drainsOfB.get(), "B drained by the holder's loop, after A's drain returned");
        assertEquals(1, permits.leftToHolders(), "the nested request found the permit taken");
    }
}
