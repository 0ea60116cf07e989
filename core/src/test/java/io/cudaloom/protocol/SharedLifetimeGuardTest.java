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
 * {@link SharedLifetimeGuard}: {@link LifetimeGuard}'s contract (the release runs once, after every
 * admitted call has left, never while one is inside; no call is admitted after the close), through
 * the base, through the cells, and with calls in both at once. The interleavings of a call on a
 * cell with the close are the jcstress {@code SharedLifetimeGuardTest}'s; this checks the contract
 * and many-thread races end to end.
 */
class SharedLifetimeGuardTest {

    @Test
    void aCloseWithNoCallInsideReleasesAtOnceAndRefusesLaterCalls() {
        SharedLifetimeGuard guard = new SharedLifetimeGuard();
        AtomicInteger releases = new AtomicInteger();
        int token = guard.enter();
        assertEquals(0, token, "no collision yet: the base");
        assertFalse(guard.hasCells());
        guard.exit(token);
        assertTrue(guard.close(releases::incrementAndGet));
        assertEquals(1, releases.get(), "released on the closing thread, before close returned");
        assertEquals(SharedLifetimeGuard.REFUSED, guard.enter());
        assertEquals(SharedLifetimeGuard.REFUSED, guard.enterThroughCells(), "refused on a cell too");
        assertTrue(guard.isClosing());
        assertFalse(guard.close(() -> fail("a second close's release must never run")));
        assertEquals(1, releases.get());
    }

    @Test
    void callsOnTheBaseAndOnCellsAllHoldTheReleaseAndTheLastOneOutRunsIt() throws Exception {
        SharedLifetimeGuard guard = new SharedLifetimeGuard();
        AtomicReference<Thread> releasedOn = new AtomicReference<>();
        int onBase = guard.enter();
        int onCell = guard.enterThroughCells();
        assertEquals(0, onBase);
        assertTrue(onCell > 0, "a cell's token: " + onCell);
        assertTrue(guard.hasCells());
        int another = guard.enter();
        assertTrue(another > 0, "once there are cells, every call takes one: " + another);
        assertEquals(3, guard.callsInside());
        assertTrue(guard.close(() -> assertTrue(releasedOn.compareAndSet(null, Thread.currentThread()))));
        assertNull(releasedOn.get(), "three calls inside: not yet");
        assertEquals(SharedLifetimeGuard.REFUSED, guard.enter(), "closing: no call enters");
        guard.exit(onCell);
        guard.exit(onBase);
        assertNull(releasedOn.get(), "one call still inside");
        assertEquals(1, guard.callsInside());
        Thread last = Thread.ofPlatform().start(() -> guard.exit(another));
        last.join();
        assertSame(last, releasedOn.get(), "run by the last call out, inside its exit()");
        assertEquals(0, guard.callsInside());
    }

    @Test
    void aCloseReleasesAtOnceWhenOnlyEmptyCellsExist() {
        SharedLifetimeGuard guard = new SharedLifetimeGuard();
        guard.exit(guard.enterThroughCells());
        AtomicInteger releases = new AtomicInteger();
        assertTrue(guard.close(releases::incrementAndGet));
        assertEquals(1, releases.get());
    }

    @Test
    void anExitWithoutItsEnterOrWithAnotherTokenIsRefusedAndLeavesTheGuardUsable() {
        SharedLifetimeGuard guard = new SharedLifetimeGuard();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> guard.exit(0));
        assertEquals("exit(0) without a matching enter()", e.getMessage());
        assertThrows(IllegalStateException.class, () -> guard.exit(1), "no cells yet");
        int token = guard.enterThroughCells();
        assertThrows(IllegalStateException.class, () -> guard.exit(token == 1 ? 2 : 1), "another cell's token");
        assertThrows(IllegalStateException.class, () -> guard.exit(-5));
        assertEquals(1, guard.callsInside());
        guard.exit(token);
        AtomicInteger releases = new AtomicInteger();
        guard.close(releases::incrementAndGet);
        assertEquals(1, releases.get());
    }

    /**
     * Many threads entering and leaving in a loop while another closes, half of them through the
     * cells from their first call (so that cells exist while the close runs, whatever the machine's
     * core count), the rest through {@code enter()}: the release runs exactly once, sees every
     * admitted call's write, and no admitted call ever sees the release done.
     */
    @Test
    void callsRacingACloseNeverOverlapTheRelease() throws Exception {
        int rounds = 2_000;
        int callers = 4;
        int roundsWithCells = 0;
        for (int round = 0; round < rounds; round++) {
            SharedLifetimeGuard guard = new SharedLifetimeGuard();
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
                boolean throughCells = c % 2 == 0;
                Thread.ofPlatform().start(() -> {
                    try {
                        start.await();
                        for (int i = 0; i < 200; i++) {
                            int token = throughCells ? guard.enterThroughCells() : guard.enter();
                            if (token == SharedLifetimeGuard.REFUSED) {
                                break;
                            }
                            inside.incrementAndGet();
                            if (released[0]) {
                                violations.incrementAndGet();
                            }
                            writes[me]++;
                            admitted.incrementAndGet();
                            inside.decrementAndGet();
                            guard.exit(token);
                        }
                    } catch (Exception e) {
                        violations.incrementAndGet();
                    } finally {
                        done.countDown();
                    }
                });
            }
            start.await();
            if (round % 2 == 1) {
                Thread.onSpinWait(); // odd rounds: let some calls in first
            }
            boolean cellsAtClose = guard.hasCells();
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
            assertEquals(SharedLifetimeGuard.REFUSED, guard.enter());
            assertEquals(0, guard.callsInside());
            roundsWithCells += cellsAtClose ? 1 : 0;
        }
        assertTrue(roundsWithCells > 0, "premise: some closes ran with cells in use: " + roundsWithCells);
    }

    @Test
    void toStringSaysTheState() {
        SharedLifetimeGuard guard = new SharedLifetimeGuard();
        int token = guard.enter();
        assertEquals("SharedLifetimeGuard[open, 1 inside]", guard.toString());
        guard.close(() -> { });
        assertEquals("SharedLifetimeGuard[closing, 1 inside]", guard.toString());
        guard.exit(token);
        assertEquals("SharedLifetimeGuard[closing, 0 inside]", guard.toString());
    }
}
