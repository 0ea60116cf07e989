package io.cudaloom.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.cudaloom.ReactorConfig;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The waiter's spin policy's decisions ({@link SpinPolicy.Predictive}, the reactor's), input by input. */
class SpinPolicyTest {
    private static final long SPIN = 50_000L;
    /** Spin 50 us, while at most 4 waiters are inside, and fewer than 16 slots are armed. */
    private final SpinPolicy policy = new SpinPolicy.Predictive(SPIN, 4, 16);

    @Test
    void aShortOrUnknownRecentWaitIsSpunForAtOnce() {
        assertEquals(SpinPolicy.SPIN, policy.decide(0L, 1, 0), "nothing known yet");
        assertEquals(SpinPolicy.SPIN, policy.decide(20_000L, 1, 0));
        assertEquals(SpinPolicy.SPIN, policy.decide(SPIN, 1, 0), "as long as the spin: spun");
        assertEquals(SPIN, policy.spinNanos());
    }

    @Test
    void aLongerRecentWaitIsSleptThroughAndSpunAtItsEnd() {
        assertEquals(SPIN + 1, policy.decide(SPIN + 1, 1, 0), "the prediction is the recent wait");
        assertEquals(200_000L, policy.decide(200_000L, 1, 0));
        long max = SpinPolicy.Predictive.MAX_PREDICTED_WAIT_NANOS;
        assertEquals(max, policy.decide(max, 1, 0), "up to 10 ms");
    }

    @Test
    void aWaitLongerThanAnyPredictionIsParkedFor() {
        assertEquals(SpinPolicy.NO_SPIN, policy.decide(SpinPolicy.Predictive.MAX_PREDICTED_WAIT_NANOS + 1, 1, 0));
        assertEquals(SpinPolicy.NO_SPIN, policy.decide(1_000_000_000L, 1, 0));
    }

    @Test
    void tooManyWaitersInsideParkAtOnce() {
        assertEquals(SpinPolicy.SPIN, policy.decide(0L, 4, 0), "4 inside: still few");
        assertEquals(SpinPolicy.NO_SPIN, policy.decide(0L, 5, 0), "5 inside: carriers are better used otherwise");
        assertEquals(SpinPolicy.NO_SPIN, policy.decide(200_000L, 5, 0), "nor sleep-then-spin");
    }

    @Test
    void aQuarterOfTheSlotsArmedIsBackPressure() {
        assertEquals(SpinPolicy.SPIN, policy.decide(0L, 1, 15));
        assertEquals(SpinPolicy.NO_SPIN, policy.decide(0L, 1, 16), "the scanner is behind: park");
        assertEquals(SpinPolicy.NO_SPIN, policy.decide(200_000L, 1, 16));
    }

    @Test
    void noSpinBudgetNeverSpins() {
        SpinPolicy off = new SpinPolicy.Predictive(0L, 4, 16);
        assertEquals(SpinPolicy.NO_SPIN, off.decide(0L, 1, 0));
        assertEquals(SpinPolicy.NO_SPIN, off.decide(200_000L, 1, 0));
    }

    @Test
    void theReactorsPolicyIsBuiltFromItsConfig() {
        ReactorConfig config = ReactorConfig.builder().capacity(64).waiterSpin(Duration.ofNanos(30_000), 2).build();
        SpinPolicy.Predictive p = (SpinPolicy.Predictive) SpinPolicy.predictive(config, config.capacity());
        assertEquals(new SpinPolicy.Predictive(30_000L, 2, 16), p, "the spin, the waiters, a quarter of the slots");
        assertEquals(1, ((SpinPolicy.Predictive) SpinPolicy.predictive(config, 2)).armedLimit(), "at least one");
        assertThrows(IllegalArgumentException.class, () -> new SpinPolicy.Predictive(-1L, 4, 16));
        assertThrows(IllegalArgumentException.class, () -> new SpinPolicy.Predictive(SPIN, 4, 0));
    }
}
