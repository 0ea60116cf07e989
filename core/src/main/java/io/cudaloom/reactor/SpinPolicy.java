package io.cudaloom.reactor;

import io.cudaloom.ReactorConfig;

/**
 * Whether, and how, a blocking waiter spins on its own flag before it parks: asked at most once per
 * await by {@link BlockingWait}, after the checks (a wait whose work is known complete returns
 * before it asks) and right before it arms a flag write of its own (its own slot, or a coalesced
 * group of its own; a waiter that joins another's group has no flag to watch and does not ask). It decides; the wait carries it out (the sleep, the spin, the
 * park) and the policy holds no per-await state.
 *
 * <p>Inputs: what the waiter knows then, the stream's recent waits
 * ({@link ReactorStream#recentWaitNanos}), how many threads are inside the blocking wait (itself
 * included), and how many slots of the table are armed. The answer is one {@code long}, so that a
 * decision allocates nothing:
 * <ul>
 *   <li>{@link #NO_SPIN}: register and park at once;
 *   <li>{@link #SPIN}: spin on the flag until {@link #spinNanos()} from now, then park;
 *   <li>a positive number, a predicted wait: sleep until shortly before it ends (the wait's margin,
 *       2% or 5 us, and the learned lateness of such sleeps), then spin through its end and
 *       {@link #spinNanos()} past it, then park.
 * </ul>
 */
public interface SpinPolicy {
    /** Do not spin: park at once. */
    long NO_SPIN = -1L;
    /** Spin at once, for {@link #spinNanos()}. */
    long SPIN = 0L;

    /**
     * The decision for one await.
     *
     * @param recentWaitNanos the stream's recent waits (an average; 0 while unknown)
     * @param waitersInside the threads inside the blocking wait now, this one included
     * @param armedSlots the slots of the table armed now
     * @return {@link #NO_SPIN}, {@link #SPIN}, or a predicted wait in nanoseconds (positive):
     *     sleep through most of it, then spin
     */
    long decide(long recentWaitNanos, int waitersInside, long armedSlots);

    /** How long a spin lasts: from the decision ({@link #SPIN}), or past the predicted end. */
    long spinNanos();

    /** The reactor's policy: {@link Predictive}, from {@code config}, for a table of {@code capacity} slots. */
    static SpinPolicy predictive(ReactorConfig config, int capacity) {
        return new Predictive(config.waiterSpinNanos(), config.waiterSpinMaxWaiters(), Math.max(1, capacity / 4));
    }

    /**
     * The predictive policy (the reactor's). Spin budget: at most {@code spinNanos}
     * ({@link ReactorConfig#waiterSpinNanos()}), because a short kernel then completes at spin
     * latency with no wake-up at all; and only while at most {@code maxWaiters}
     * ({@link ReactorConfig#waiterSpinMaxWaiters()}) threads are inside the wait, because with
     * more of them every carrier is better used running other virtual threads than spinning (the
     * armed-slot count is the wrong signal for that: spinning waiters retire their own slots, which
     * keeps it low and the spinning on); and not while {@code armedLimit} slots (a quarter) are
     * armed: back-pressure, because a waiter that completes inline leaves its slot armed for the
     * scanner to retire, and with this many armed the scanner is behind (e.g. descheduled), so
     * waiters park instead of running ahead and exhausting the slots. If the stream's recent
     * waits were longer than the spin (up to {@link #MAX_PREDICTED_WAIT_NANOS}), a spin from the
     * start would be pure waste: the answer is the prediction, slept through and spun at its end.
     * Longer ones are not predicted: the waiter parks.
     */
    record Predictive(long spinNanos, int maxWaiters, int armedLimit) implements SpinPolicy {
        /** Predictions longer than this are not slept through and spun at the end: the waiter just parks. */
        public static final long MAX_PREDICTED_WAIT_NANOS = 10_000_000L;

        public Predictive {
            if (spinNanos < 0 || maxWaiters < 0 || armedLimit < 1) {
                throw new IllegalArgumentException("need spin >= 0, maxWaiters >= 0 and armedLimit >= 1, was "
                        + spinNanos + " ns, " + maxWaiters + ", " + armedLimit);
            }
        }

        @Override
        public long decide(long recentWaitNanos, int waitersInside, long armedSlots) {
            boolean few = spinNanos > 0 && waitersInside <= maxWaiters && armedSlots < armedLimit;
            if (!few) {
                return NO_SPIN;
            }
            if (recentWaitNanos <= spinNanos) {
                return SPIN; // short (or unknown): a spin from the start sees it
            }
            // A wait longer than the spin is predicted from the stream's recent ones: sleep through it, spin its end.
            return recentWaitNanos <= MAX_PREDICTED_WAIT_NANOS ? recentWaitNanos : NO_SPIN;
        }
    }
}
