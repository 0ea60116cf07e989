package io.cudaloom.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.CompletionStrategy;
import io.cudaloom.ReactorConfig;
import io.cudaloom.protocol.BackoffIdleStrategy;
import io.cudaloom.protocol.OffHeapFlagArray;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.spi.FlagMemory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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

    /** The park seam: records what the idle strategy asked for. */
    private static final class Recorder implements BackoffIdleStrategy.Parker {
        final List<Long> timed = new ArrayList<>();
        int untimed;

        @Override
        public void park(Object blocker) {
            untimed++;
        }

        @Override
        public void parkNanos(Object blocker, long nanos) {
            timed.add(nanos);
        }
    }

    /** {@code armed} slots armed (each on its own fake stream), {@code watchers} watching; the timed parks of {@link #STEPS} steps. */
    private static List<Long> timedParks(ReactorConfig config, int armed, int watchers) {
        OffHeapFlagArray flags = OffHeapFlagArray.allocate(4);
        SlotTable<Completion> table = new SlotTable<>(4, flags);
        ReactorState state = new ReactorState("defer");
        Registrar registrar = new Registrar(state, () -> { }, table, new FlagMemory(flags, () -> { }),
                new ReactorCounters(), CompletionStrategy.REACTOR);
        PreWake preWake = new PreWake(config, () -> { });
        Recorder parker = new Recorder();
        Scanner scanner = new Scanner(PartsStandAloneTest.OPEN, registrar, table, config, new DeviceFaults(), preWake, new Object(), parker);
        for (int i = 0; i < armed; i++) {
            FakeStream stream = new FakeStream(config);
            stream.submissions.set(1); // its kernel runs for good
            long ticket = registrar.tryArm(stream, (t, failure) -> { throw new AssertionError("delivered"); });
            assertTrue(Registrar.armed(ticket), "premise: armed");
        }
        assertEquals(armed, table.armedCount(), "premise: the armed count");
        for (int i = 0; i < watchers; i++) {
            preWake.watch();
        }
        scanner.resume();
        for (int i = 0; i < STEPS; i++) {
            assertFalse(scanner.step(), "no untimed park while a slot is armed");
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
        assertFalse(ReactorConfig.defaults().scannerDefersToSpinningWaiters(), "off by default: not yet measured as it is now");
    }
}
