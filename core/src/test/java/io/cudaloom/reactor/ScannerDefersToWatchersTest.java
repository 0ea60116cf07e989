package io.cudaloom.reactor;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.TestAccess;
import io.cudaloom.ReactorConfig;
import io.cudaloom.protocol.SlotTable.OffHeapFlagArray;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.reactor.metrics.LatencyRecorder;
import io.cudaloom.reactor.metrics.SharedCounters;
import io.cudaloom.spi.FlagMemory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The real {@link Scanner}'s idle step, driven by this thread through its park seam, with one or
 * two slots armed on a fake stream whose work never lands: while a waiter looks at every armed
 * flag itself ({@link PreWake#watch}), the scanner parks in short parks where it would spin;
 * otherwise it spins. The scanner's spin window is set long, so "spins" here is certain and not
 * a matter of this machine's speed.
 */
class ScannerDefersToWatchersTest {
    private static final int STEPS = 40;
    private static final ReactorConfig CONFIG = ReactorConfig.builder().capacity(4).coalesce(false)
            .scannerSpin(Duration.ofSeconds(10)).scannerDefersToSpinningWaiters(true).build();

    /** The runner's park seam: records the parks the runner makes (none is made: a model). */
    private static final class Recorder implements Scanner.Parker {
        final List<Long> timed = new ArrayList<>();
        int untimed;

        @Override
        public void parkNanos(Object blocker, long nanos) {
            timed.add(nanos);
        }

        @Override
        public void parkBoxed(Object blocker, long boxNanos) {
            untimed++;
        }
    }

    /** {@code armed} slots armed (each on its own fake stream), {@code watchers} watching; the timed parks of {@link #STEPS} steps. */
    private static List<Long> timedParks(ReactorConfig config, int armed, int watchers) {
        OffHeapFlagArray flags = OffHeapFlagArray.allocate(4);
        SlotTable<Completion> table = new SlotTable<>(4, flags);
        LifecycleState state = new LifecycleState("defer");
        Registrar registrar = new Registrar(state, () -> { }, table, new FlagMemory(flags, () -> { }),
                new SharedCounters(), true);
        PreWake preWake = new PreWake(config, () -> { });
        Recorder parker = new Recorder();
        Scanner scanner = new Scanner(PartsStandAloneTest.OPEN, registrar, table, config, new DeviceFaults(), preWake, new Object());
        Scanner.Runner runner = scanner.runner(parker, Scanner.UNTIMED_PARK_BOX_NANOS);
        for (int i = 0; i < armed; i++) {
            FakeStream fake = new FakeStream(config, 1); // its kernel runs for good
            long ticket = registrar.tryArm(fake.stream, (t, failure) -> { throw new AssertionError("delivered"); });
            assertTrue(Registrar.armed(ticket), "premise: armed");
        }
        assertEquals(armed, table.armedCount(), "premise: the armed count");
        for (int i = 0; i < watchers; i++) {
            preWake.watch();
        }
        assertTrue(runner.start());
        for (int i = 0; i < STEPS; i++) {
            assertTrue(runner.turn(), "the loop goes on");
        }
        assertEquals(0, parker.untimed);
        return parker.timed;
    }

    @Test
    void aScannerWhoseOnlyArmedSlotIsWatchedParksInShortParksInsteadOfSpinning() {
        List<Long> parks = timedParks(CONFIG, 1, 1);
        assertEquals(STEPS, parks.size(), "one park per step: " + parks);
        long minPark = CONFIG.scannerMinParkNanos();
        assertTrue(parks.stream().allMatch(p -> p > 0 && p <= minPark), "parks of at most scannerPark's minimum: " + parks);
    }

    @Test
    void anUnwatchedArmedSlotKeepsTheScannerSpinning() {
        assertEquals(List.of(), timedParks(CONFIG, 1, 0), "nobody watches: spin");
        assertEquals(List.of(), timedParks(CONFIG, 2, 1), "one of two armed slots unwatched: spin");
    }

    @Test
    void withTheSettingOffTheScannerSpinsBesideAWatcher() {
        ReactorConfig off = CONFIG.toBuilder().scannerDefersToSpinningWaiters(false).build();
        assertEquals(List.of(), timedParks(off, 1, 1));
        assertTrue(ReactorConfig.defaults().scannerDefersToSpinningWaiters(), "on by default (measured on the H200: BENCHMARKS, seventh pass)");
        assertTrue(off.toString().contains("no deferral to spinning waiters"), off.toString());
        assertFalse(ReactorConfig.defaults().toString().contains("deferral"), "a config names only what differs from the defaults");
    }
    /**
     * The regression the H200 found (docs/BENCHMARKS.md, sixth pass): a waiter asleep through a
     * predicted wait looks at its flag only when it wakes, so it must not count as watching, or
     * the scanner defers to it and a kernel that lands early is left to that late look. The real
     * {@link BlockingWait} sleeps through a learned 9 ms wait with its pre-wake posted; caught in
     * that sleep, its armed slot must not count as watched. Then the flag lands and the real
     * scanner (this thread) delivers it. The sleep lasts only the prediction, so a look that
     * misses it (a slow machine) tries again with the next await.
     */
    @Test
    void aWaiterAsleepThroughAPredictionIsNotCountedAsWatching() throws Exception {
        OffHeapFlagArray flags = OffHeapFlagArray.allocate(8);
        SlotTable<Completion> table = new SlotTable<>(8, flags);
        ReactorConfig config = ReactorConfig.builder().capacity(8).coalesce(false)
                .waiterSpin(Duration.ofNanos(50_000), 4).scannerDefersToSpinningWaiters(true).build();
        LifecycleState state = new LifecycleState("defer");
        SharedCounters counters = new SharedCounters();
        Registrar registrar = new Registrar(state, () -> { }, table, new FlagMemory(flags, () -> { }), counters,
                true);
        Thread self = Thread.currentThread(); // this thread is the scanner
        PreWake preWake = new PreWake(config, () -> { });
        Object blocker = new Object();
        BlockingWait wait = new BlockingWait(new BlockingWait.Parts(state,
                new BlockingWait.Checks(state, counters, "defer", () -> self), table, registrar, preWake, config, counters,
                new LatencyRecorder(0), "defer", blocker, Runnable::run));
        Scanner scanner = new Scanner(PartsStandAloneTest.OPEN, registrar, table, config, new DeviceFaults(), preWake,
                blocker);
        FakeStream fake = new FakeStream(config, 0);
        ReactorStream stream = fake.stream;
        int caughtAsleep = 0;
        for (int attempt = 1; attempt <= 20 && caughtAsleep == 0; attempt++) {
            for (int i = 0; i < 40; i++) {
                stream.recordWait(9_000_000L); // the stream's recent waits: 9 ms
            }
            fake.flagSlot.set(-1);
            stream.noteExternalSubmission(); // one more kernel, running: attempt in all
            long required = attempt;
            AtomicBoolean completed = new AtomicBoolean();
            Thread waiter = Thread.ofVirtual().start(() -> {
                try {
                    completed.set(wait.await(stream, required, false, true, TimeUnit.SECONDS.toNanos(30)));
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            });
            long lookUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (System.nanoTime() - lookUntil < 0 && waiter.isAlive()
                    && !(preWake.anyPosted() && TestAccess.parkedOn(waiter, blocker))) {
                Thread.onSpinWait();
            }
            boolean watched = preWake.everyArmedSlotWatched(table);
            // Still posted after that read: the sleep had not ended, so watch() (after the sleep's
            // withdrawal) had not run when `watched` was read.
            if (preWake.anyPosted() && table.armedCount() == 1) {
                caughtAsleep++;
                assertFalse(watched, "asleep through its prediction, the waiter does not watch its flag");
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> fake.flagSlot.get() >= 0);
            flags.setRelease(fake.flagSlot.get(), 1); // the kernel lands, early for the prediction
            scanner.resume();
            await().atMost(Duration.ofSeconds(10)).until(() -> {
                scanner.doWork();
                return !waiter.isAlive();
            });
            assertTrue(completed.get(), "delivered, not timed out");
            await().atMost(Duration.ofSeconds(10)).until(() -> {
                scanner.doWork();
                return table.armedCount() == 0;
            });
        }
        assertTrue(caughtAsleep > 0, "premise: a waiter was seen asleep through its prediction, its pre-wake posted");
    }
}
