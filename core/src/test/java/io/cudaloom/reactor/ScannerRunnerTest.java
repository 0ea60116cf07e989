package io.cudaloom.reactor;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.ReactorConfig;
import io.cudaloom.protocol.SlotTable.OffHeapFlagArray;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.reactor.metrics.Counter;
import io.cudaloom.reactor.metrics.SharedCounters;
import io.cudaloom.spi.FlagMemory;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * The scanner's runner (the one place the scanner parks) on a real thread, over the real parts:
 * its untimed park is boxed, and a box that runs out onto armed work counts a missed wake-up
 * ({@link Counter#SCANNER_MISSED_WAKEUPS}, an attribute of the internals MXBean). A lost wake-up
 * is made on purpose: a registrar whose idle-to-active wake-up does nothing.
 */
class ScannerRunnerTest {
    private static final ReactorConfig CONFIG = ReactorConfig.builder().capacity(4).coalesce(false)
            .faultProbeInterval(Duration.ofSeconds(10)).build();

    /** A reactor that is open until {@link #close}. */
    private static final class Lifecycle implements Scanner.Owner {
        volatile boolean closed;

        @Override
        public boolean isClosed() {
            return closed;
        }

        @Override
        public boolean closeAfterScannerError(Error error) {
            throw new AssertionError("the scanner failed", error);
        }

        @Override
        public void finishClose() {
            throw new AssertionError("closed from the scanner thread");
        }
    }

    /** The parts, a scanner thread running the runner, and how to wake it. */
    private static final class Rig implements AutoCloseable {
        final OffHeapFlagArray flags = OffHeapFlagArray.allocate(4);
        final SlotTable<Completion> table = new SlotTable<>(4, flags);
        final SharedCounters counters = new SharedCounters();
        final Lifecycle lifecycle = new Lifecycle();
        final AtomicReference<Thread> scannerThread = new AtomicReference<>();
        final Registrar registrar;
        final Scanner scanner;
        final Scanner.Runner runner;
        final Thread thread;

        Rig(boolean wakeOnIdleToActive, long boxNanos) {
            this(wakeOnIdleToActive, boxNanos, Scanner.Parker.LOCK_SUPPORT);
        }

        Rig(boolean wakeOnIdleToActive, long boxNanos, Scanner.Parker parker) {
            this(wakeOnIdleToActive, boxNanos, parker, new AtomicReference<>());
        }

        /** As above; {@code self} is set to this rig before its scanner thread starts (for a parker that uses it). */
        Rig(boolean wakeOnIdleToActive, long boxNanos, Scanner.Parker parker, AtomicReference<Rig> self) {
            Runnable wake = wakeOnIdleToActive ? () -> LockSupport.unpark(scannerThread.get()) : () -> { };
            registrar = new Registrar(new LifecycleState("runner"), wake, table, new FlagMemory(flags, () -> { }), counters,
                    true);
            scanner = new Scanner(lifecycle, registrar, table, CONFIG, new DeviceFaults(), new PreWake(CONFIG, () -> { }),
                    new Object());
            runner = scanner.runner(parker, boxNanos);
            thread = Thread.ofPlatform().daemon().name("runner-test-scanner").unstarted(runner);
            scannerThread.set(thread);
            self.set(this);
            thread.start();
        }

        /** Waits until the scanner thread is in its untimed (boxed) park: its blocker is the runner. */
        void awaitUntimedPark() {
            await().atMost(Duration.ofSeconds(10)).until(() -> LockSupport.getBlocker(thread) == runner);
        }

        /** Arms a slot whose work has already landed; returns the latch its delivery counts down. */
        CountDownLatch armLanded() {
            FakeStream fake = new FakeStream(CONFIG, 1);
            CountDownLatch delivered = new CountDownLatch(1);
            long ticket = registrar.tryArm(fake.stream, (t, failure) -> delivered.countDown());
            assertTrue(Registrar.armed(ticket), "premise: armed");
            flags.setRelease(fake.flagSlot.get(), 1); // the device's write has landed
            return delivered;
        }

        long missed() {
            return counters.snapshot(table, scanner, thread, 0, 0).get(Counter.SCANNER_MISSED_WAKEUPS);
        }

        @Override
        public void close() throws InterruptedException {
            lifecycle.closed = true;
            LockSupport.unpark(thread);
            thread.join(TimeUnit.SECONDS.toMillis(10));
            assertTrue(!thread.isAlive(), "the runner ends once its reactor is closed");
        }
    }

    /**
     * The first untimed park: its gate has found nothing armed; then a registration arms landed
     * work and its wake-up is lost (the registrar's wake does nothing). The park sleeps its whole
     * box (LockSupport's park, made again until the box has passed, so a spurious return cannot
     * end it early); then the runner finds the work armed: one missed wake-up, and the work is
     * served.
     */
    @Test
    void aLostWakeUpIsServedWhenTheBoxRunsOutAndCounted() throws Exception {
        AtomicReference<Rig> rigRef = new AtomicReference<>();
        AtomicReference<CountDownLatch> delivered = new AtomicReference<>();
        Scanner.Parker losesTheWakeUp = new Scanner.Parker() {
            @Override
            public void parkNanos(Object blocker, long nanos) {
                LockSupport.parkNanos(blocker, nanos);
            }

            @Override
            public void parkBoxed(Object blocker, long boxNanos) {
                if (delivered.get() == null) {
                    assertEquals(0, rigRef.get().missed(), "premise: nothing missed while nothing was armed");
                    delivered.set(rigRef.get().armLanded()); // after the gate's read: nothing wakes us now
                }
                long end = System.nanoTime() + boxNanos;
                for (long left = boxNanos; left > 0; left = end - System.nanoTime()) {
                    LockSupport.parkNanos(blocker, left);
                }
            }
        };
        try (Rig rig = new Rig(false, TimeUnit.MILLISECONDS.toNanos(50), losesTheWakeUp, rigRef)) {
            await().atMost(Duration.ofSeconds(10)).until(() -> delivered.get() != null);
            assertTrue(delivered.get().await(10, TimeUnit.SECONDS), "served once the box ran out");
            assertEquals(1, rig.missed(), "the box ran out onto armed work: one missed wake-up");
            assertTrue(rig.scanner.count(Counter.SCANNER_PARKS) >= 1, "it parked untimed");
        }
    }

    @Test
    void theIdleToActiveWakeUpEndsTheUntimedParkAndNothingIsMissed() throws Exception {
        try (Rig rig = new Rig(true, Scanner.UNTIMED_PARK_BOX_NANOS)) {
            for (int i = 0; i < 3; i++) {
                rig.awaitUntimedPark();
                CountDownLatch delivered = rig.armLanded();
                // Far less than the box: the unpark, not the box, ended the park.
                assertTrue(delivered.await(10, TimeUnit.SECONDS), "delivered");
                await().atMost(Duration.ofSeconds(10)).until(() -> rig.table.isIdle());
            }
            assertEquals(0, rig.missed(), "every wake-up came");
        }
    }

    @Test
    void anIdleScannerRenewsItsBoxWithoutCountingAnything() throws Exception {
        try (Rig rig = new Rig(true, TimeUnit.MILLISECONDS.toNanos(5))) {
            long parks = rig.scanner.count(Counter.SCANNER_PARKS);
            await().atMost(Duration.ofSeconds(10)).until(() -> rig.scanner.count(Counter.SCANNER_PARKS) >= parks + 3);
            assertEquals(0, rig.missed(), "a box that runs out onto nothing armed is no missed wake-up");
        }
    }
}
