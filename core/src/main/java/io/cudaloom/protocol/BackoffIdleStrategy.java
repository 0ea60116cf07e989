package io.cudaloom.protocol;

import java.util.concurrent.locks.LockSupport;

/**
 * What the single consumer of a {@link SlotTable} does when a cycle found nothing to retire (in the
 * manner of Agrona's {@code IdleStrategy}). Its CPU follows what is armed:
 * <ul>
 *   <li>something is armed and the consumer has a <em>prediction</em>: the average time from one
 *       wake-up or retirement to the next retirement ({@link #progress}, an exponential moving
 *       average of weight 1/4). It parks until shortly before the predicted retirement (less
 *       a margin of 2% of the prediction or 5 us, whichever is larger, less its own measured park
 *       overshoot), in parks of at most {@code maxParkNanos}, so that a retirement earlier than
 *       predicted is seen within {@code maxParkNanos} and the timer's slack; then it spins through the predicted time and a little past it (a quarter of the
 *       prediction, at most {@code spinNanos}). A retirement that comes as predicted is therefore
 *       seen within the margin while the core sleeps through most of the wait: one waiter on a
 *       200 us kernel costs a few microseconds of scanner CPU, not 200. A prediction shorter than
 *       the park's own cost (overshoot plus {@code minParkNanos}) just spins, as short kernels
 *       always did;
 *   <li>something is armed and the prediction has passed (or there is none yet): spin until
 *       {@code spinNanos} after the last progress when there is no prediction, then back off with
 *       parks of 1/50 of the time waited so far (2%), within {@code [minParkNanos, maxParkNanos]},
 *       so a wait that outlives every prediction adds at most about 2% (or {@code minParkNanos})
 *       of latency and costs a bounded number of wake-ups;
 *   <li>nothing armed: keep spinning until {@code lingerNanos} after the last progress (an await
 *       that comes meanwhile then pays no wake-up of the consumer), then park untimed. The caller must check "nothing armed" with the table's
 *       {@link SlotTable#isIdle()} right before, because a registrant unparks the consumer only on
 *       the idle-to-active transition (SlotTable ordering 3): if that unpark raced ahead of the
 *       check, it is this park's permit and the park returns at once;
 *   <li>everything armed is <em>watched</em> (another thread looks at each armed flag and
 *       completes it itself, as a waiter spinning on its own flag does; the caller says so): where
 *       the first two rules would spin, it parks for {@code minParkNanos} instead, so a lone
 *       waiter's spin is not doubled by the consumer's;
 *   <li>a deadline (e.g. quarantined slots to look at again) caps every park, timed or not.
 * </ul>
 * A park is only ever shortened by an unpark (a registration's idle-to-active wake-up), never
 * needed for correctness: the prediction changes when a flag is seen, not whether it is.
 * Parks go through a {@link Parker}, so tests and harnesses can drive the real strategy with a
 * model of the permit. Single-threaded: one instance per consumer.
 */
public final class BackoffIdleStrategy {
    /** No deadline: {@link #idle} may park untimed. */
    public static final long NO_DEADLINE = Long.MAX_VALUE;

    /** The park seam; {@link #LOCK_SUPPORT} in production. */
    public interface Parker {
        void park(Object blocker);

        void parkNanos(Object blocker, long nanos);
    }

    public static final Parker LOCK_SUPPORT = new Parker() {
        @Override
        public void park(Object blocker) {
            LockSupport.park(blocker);
        }

        @Override
        public void parkNanos(Object blocker, long nanos) {
            LockSupport.parkNanos(blocker, nanos);
        }
    };

    /** The least margin before a predicted retirement (see the class comment). */
    public static final long MIN_MARGIN_NANOS = 5_000L;

    /** How early a sleep through a predicted wait of {@code predicted} ns ends: 2% of it or 5 us, whichever is larger. */
    public static long marginFor(long predicted) {
        return Math.max(MIN_MARGIN_NANOS, predicted / 50);
    }
    /** Overshoots above this are not counted as the timer's slack. */
    public static final long MAX_OVERSHOOT_NANOS = 500_000L;

    private final long spinNanos;
    private final long lingerNanos;
    private final long minParkNanos;
    private final long maxParkNanos;
    private final Parker parker;
    private final Object blocker;
    private final java.util.function.LongSupplier clock;
    private long lastProgress;
    /** Predicted time from a wake-up or retirement to the next retirement; 0 while unknown. */
    private long expectedGap;
    /** Whether the last idle step was a predicted park (no spin since): see {@link #progress}. */
    private boolean afterPredictedPark;
    /** Whether the last idle step was a back-off park: a gap found then is not learned (it may be overslept). */
    private boolean afterBackOffPark;
    /** When the latest back-off park began: nothing had been retired by then (see {@link #progress}). */
    private long backOffFrom;
    /** How much longer than asked the timed parks took, on average (timer slack, scheduling). */
    private long parkOvershoot;

    public BackoffIdleStrategy(long spinNanos, long lingerNanos, long minParkNanos, long maxParkNanos, Parker parker,
            Object blocker) {
        this(spinNanos, lingerNanos, minParkNanos, maxParkNanos, parker, blocker, System::nanoTime);
    }

    /** As above, reading time from {@code clock} ({@link System#nanoTime} in production; a model's clock in tests). */
    public BackoffIdleStrategy(long spinNanos, long lingerNanos, long minParkNanos, long maxParkNanos, Parker parker,
            Object blocker, java.util.function.LongSupplier clock) {
        if (spinNanos < 0 || lingerNanos < 0 || minParkNanos <= 0 || maxParkNanos < minParkNanos) {
            throw new IllegalArgumentException("need spin >= 0, linger >= 0 and 0 < minPark <= maxPark, was spin "
                    + spinNanos + " ns, linger " + lingerNanos + " ns, park " + minParkNanos + ".." + maxParkNanos + " ns");
        }
        this.spinNanos = spinNanos;
        this.lingerNanos = lingerNanos;
        this.minParkNanos = minParkNanos;
        this.maxParkNanos = maxParkNanos;
        this.parker = parker;
        this.blocker = blocker;
        this.clock = clock;
        this.lastProgress = clock.getAsLong();
    }

    /** The consumer was woken for new work at {@code now}: the time to the next retirement counts from here. */
    public void reset(long now) {
        lastProgress = now;
    }

    /**
     * The consumer retired something at {@code now}. A gap seen while spinning is accurate and is
     * learned (an exponential moving average); one found on the first look after a predicted park
     * may have been overslept, so it teaches nothing and shrinks the prediction by an eighth
     * instead; one found after a back-off park teaches only its lower bound (nothing had landed at
     * the look before that park), which raises a prediction that was too short. Learning from
     * overslept gaps would feed the consumer's own delay back into its next park (the prediction
     * would grow without bound on a closed loop of one waiter): no rule here grows the prediction
     * beyond a gap that was proven.
     */
    public void progress(long now) {
        long gap = now - lastProgress;
        if (afterPredictedPark) {
            expectedGap -= Math.max(1L, expectedGap >> 3); // overslept: shrink (never grow on an overslept gap)
        } else if (afterBackOffPark && expectedGap != 0) {
            // Found after a back-off park: the gap is somewhere between the look before that park
            // (nothing then) and now. Learn only the lower bound, which oversleeping cannot
            // inflate: a prediction below it was too short, and is raised halfway towards it.
            // (Learning nothing here left a prediction between 1 and 2 times too short
            // uncorrected for good: the scanner then spun and backed off through every long wait.)
            long atLeast = backOffFrom - lastProgress;
            if (atLeast > expectedGap) {
                expectedGap += (atLeast - expectedGap) >> 1;
            }
        } else {
            long old = expectedGap; // seen while spinning, or the first gap: accurate
            expectedGap = old == 0 ? gap : old + ((gap - old) >> 2);
        }
        afterPredictedPark = false;
        afterBackOffPark = false;
        lastProgress = now;
    }



    /** What {@link #idle} did. */
    public enum Step { SPUN, TIMED_PARK, PARK }

    /**
     * One idle step.
     *
     * @param armed whether anything is still watched (if not, the caller has just checked the
     *     table idle, see the class comment)
     * @param now the current {@link System#nanoTime()}
     * @param deadlineNanos a time no park may outlast, or {@link #NO_DEADLINE}
     * @return what it did
     */
    public Step idle(boolean armed, long now, long deadlineNanos) {
        return idle(armed, false, now, deadlineNanos);
    }

    /**
     * One idle step, told whether every armed registration is {@code watched}: a thread other than
     * the consumer looks at its flag and completes it on its own (a waiter spinning on its own
     * flag). Then where the consumer would spin (a predicted retirement due, or no prediction yet)
     * it parks for {@code minParkNanos} instead: the watcher sees the flag at spin latency, and
     * anything armed meanwhile without a watcher is seen within that park, as after a back-off
     * park. A gap found after such a park may have been overslept, so it teaches only its lower
     * bound, as after a back-off park. Where it would park anyway, nothing changes.
     */
    public Step idle(boolean armed, boolean watched, long now, long deadlineNanos) {
        long untilDeadline = deadlineNanos == NO_DEADLINE ? Long.MAX_VALUE : Math.max(0L, deadlineNanos - now);
        if (!armed) {
            if (now - lastProgress < lingerNanos && untilDeadline > 0) {
                Thread.onSpinWait(); // lingering: a registration's unpark would find us awake anyway
                return Step.SPUN;
            }
            Step step;
            if (untilDeadline == Long.MAX_VALUE) {
                parker.park(blocker);
                step = Step.PARK;
            } else {
                parker.parkNanos(blocker, Math.max(1L, untilDeadline));
                step = Step.TIMED_PARK;
            }
            lastProgress = clock.getAsLong(); // woken for new work: spin for it first
            return step;
        }
        long waited = now - lastProgress;
        long expected = expectedGap;
        if (expected > 0) {
            long margin = marginFor(expected);
            long wakeAt = expected - margin - parkOvershoot;
            if (wakeAt - waited >= minParkNanos) {
                // In parks of at most maxParkNanos: a retirement that comes earlier than predicted
                // (the gaps of many streams' completions vary) is seen within maxParkNanos and the
                // timer's slack, not at the end of the whole prediction. What such a late look costs
                // under load: the permits of admission come back only when the scanner sees a
                // completion, so a stream whose queued work was all covered by the landed write
                // stands idle until then.
                timedPark(Math.min(Math.min(wakeAt - waited, maxParkNanos), untilDeadline), now);
                afterPredictedPark = true;
                return Step.TIMED_PARK;
            }
            if (waited < expected + Math.min(spinNanos, expected >> 2)) {
                if (watched) {
                    return watchedPark(now, untilDeadline);
                }
                afterPredictedPark = false;
                afterBackOffPark = false;
                Thread.onSpinWait(); // the predicted retirement is due: look for it at spin latency
                return Step.SPUN;
            }
        } else if (waited < spinNanos) {
            if (watched) {
                return watchedPark(now, untilDeadline);
            }
            afterBackOffPark = false;
            Thread.onSpinWait();
            return Step.SPUN;
        }
        afterPredictedPark = false;
        afterBackOffPark = true;
        backOffFrom = now; // nothing retired up to this look (see progress)
        long park = Math.max(minParkNanos, Math.min(maxParkNanos, waited / 50));
        timedPark(Math.min(park, untilDeadline), now);
        return Step.TIMED_PARK;
    }

    /**
     * Where a watched registration would have been spun for: a short park, which teaches what a
     * back-off park does (a gap found after it may be overslept: only its lower bound, the look
     * before it, is learned; see {@link #progress}).
     */
    private Step watchedPark(long now, long untilDeadline) {
        afterPredictedPark = false;
        afterBackOffPark = true;
        backOffFrom = now; // nothing retired up to this look
        timedPark(Math.min(minParkNanos, untilDeadline), now);
        return Step.TIMED_PARK;
    }

    /** A timed park of {@code nanos} (at least 1), learning how much longer it took. */
    private void timedPark(long nanos, long now) {
        long asked = Math.max(1L, nanos);
        parker.parkNanos(blocker, asked);
        long over = clock.getAsLong() - now - asked;
        if (over > 0 && over < MAX_OVERSHOOT_NANOS) { // a longer one was descheduling or an unpark's absence: not slack
            parkOvershoot += (over - parkOvershoot) >> 3;
        } else if (over <= 0) {
            parkOvershoot -= parkOvershoot >> 3; // woken early (an unpark): decay
        }
    }
}
