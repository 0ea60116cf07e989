package io.cudaloom.protocol;

import static org.junit.jupiter.api.Assertions.*;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * {@link LifetimeGuard}: the release runs once, after every admitted call has left, never while one
 * is inside, and no call is admitted after the close. The interleavings themselves are the jcstress
 * {@code LifetimeGuardTest}'s; this checks the contract and a many-thread race end to end.
 */
class LifetimeGuardTest {

    @Test
    void aCloseWithNoCallInsideReleasesAtOnceAndRefusesLaterCalls() {
        LifetimeGuard guard = new LifetimeGuard();
        AtomicInteger releases = new AtomicInteger();
        assertTrue(guard.enter());
        guard.exit();
        assertTrue(guard.close(releases::incrementAndGet));
        assertEquals(1, releases.get(), "released on the closing thread, before close returned");
        assertFalse(guard.enter());
        assertTrue(guard.isClosing());
        assertFalse(guard.close(() -> fail("a second close's release must never run")));
        assertEquals(1, releases.get());
    }

    @Test
    void aCloseWithCallsInsideReleasesOnTheLastExitingThread() throws Exception {
        LifetimeGuard guard = new LifetimeGuard();
        AtomicReference<Thread> releasedOn = new AtomicReference<>();
        assertTrue(guard.enter());
        assertTrue(guard.enter());
        assertTrue(guard.close(() -> assertTrue(releasedOn.compareAndSet(null, Thread.currentThread()))));
        assertNull(releasedOn.get(), "two calls inside: not yet");
        assertEquals(2, guard.callsInside());
        assertFalse(guard.enter(), "closing: no call enters");
        guard.exit();
        assertNull(releasedOn.get(), "one call still inside");
        Thread last = Thread.ofPlatform().start(guard::exit);
        last.join();
        assertSame(last, releasedOn.get(), "run by the last call out, inside its exit()");
        assertEquals(0, guard.callsInside());
    }

    @Test
    void anExitWithoutItsEnterIsRefusedAndLeavesTheGuardUsable() {
        LifetimeGuard guard = new LifetimeGuard();
        assertThrows(IllegalStateException.class, guard::exit);
        assertTrue(guard.enter());
        assertEquals(1, guard.callsInside());
        guard.exit();
        AtomicInteger releases = new AtomicInteger();
        guard.close(releases::incrementAndGet);
        assertEquals(1, releases.get());
    }

    /**
     * Many threads entering and leaving in a loop while another closes: the release runs exactly
     * once, sees every admitted call's write, and no admitted call ever sees the release done.
     */
    @Test
    void callsRacingACloseNeverOverlapTheRelease() throws Exception {
        int rounds = 2_000;
        int callers = 3;
        for (int round = 0; round < rounds; round++) {
            LifetimeGuard guard = new LifetimeGuard();
            AtomicLong admitted = new AtomicLong();
            long[] writes = new long[callers]; // plain: published to the release by the guard alone
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger releases = new AtomicInteger();
            AtomicInteger violations = new AtomicInteger();
            AtomicLong seenByRelease = new AtomicLong(-1);
            boolean[] released = new boolean[1]; // plain: an admitted call must never see it set
            CyclicBarrier start = new CyclicBarrier(callers + 1);
            CountDownLatch done = new CountDownLatch(callers);
            for (int c = 0; c < callers; c++) {
                int me = c;
                Thread.ofPlatform().start(() -> {
                    try {
                        start.await();
                        for (int i = 0; i < 200; i++) {
                            if (!guard.enter()) {
                                break;
                            }
                            inside.incrementAndGet();
                            if (released[0]) {
                                violations.incrementAndGet();
                            }
                            writes[me]++;
                            admitted.incrementAndGet();
                            inside.decrementAndGet();
                            guard.exit();
                        }
                    } catch (Exception e) {
                        violations.incrementAndGet();
                    } finally {
                        done.countDown();
                    }
                });
            }
            start.await();
            guard.close(() -> {
                releases.incrementAndGet();
                if (inside.get() != 0) {
                    violations.incrementAndGet();
                }
                long sum = 0;
                for (long w : writes) {
                    sum += w;
                }
                seenByRelease.set(sum);
                released[0] = true;
            });
            assertTrue(done.await(30, TimeUnit.SECONDS));
            assertEquals(0, violations.get(), "round " + round);
            assertEquals(1, releases.get(), "round " + round);
            assertEquals(admitted.get(), seenByRelease.get(), "the release saw every admitted call's write, round " + round);
            assertFalse(guard.enter());
        }
    }

    @Test
    void toStringSaysTheState() {
        LifetimeGuard guard = new LifetimeGuard();
        assertTrue(guard.enter());
        assertEquals("LifetimeGuard[open, 1 inside]", guard.toString());
        guard.close(() -> { });
        assertEquals("LifetimeGuard[closing, 1 inside]", guard.toString());
        guard.exit();
        assertEquals("LifetimeGuard[closing, 0 inside]", guard.toString());
    }
}
