package io.cudaloom.protocol;

/**
 * The consumer's {@link IdleStrategy}: what the single consumer of a {@link SlotTable} does when a
 * cycle found nothing to retire. It decides; the consumer's loop parks (the strategy never does).
 * Its CPU follows what is armed:
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
 *       always did. A long prediction (25 {@code minParkNanos} or more: 500 us by default) is
 *       <em>polled</em> through that window instead, with parks of 1% of it (at least
 *       {@code minParkNanos}): its retirement is seen within about 1% of the wait, and the window
 *       (the margin and up to {@code spinNanos} past the prediction) costs a few parks instead of
 *       a core. Where many streams retire, the gaps vary around the prediction and that window
 *       was most of the scanner's CPU: on an H100 with 8 streams of 1 ms kernels, about 5 us per
 *       completion, 0.3 ms of spin per retirement;
 *   <li>something is armed and the prediction has passed (or there is none yet): spin until
 *       {@code spinNanos} after the last progress when there is no prediction, then back off with
 *       parks of 1/50 of the time waited so far (2%), within {@code [minParkNanos, maxParkNanos]},
 *       so a wait that outlives every prediction adds at most about 2% (or {@code minParkNanos})
 *       of latency and costs a bounded number of wake-ups;
 *   <li>nothing armed: keep spinning until {@code lingerNanos} after the last progress (an await
 *       that comes meanwhile then pays no wake-up of the consumer), then park untimed
 *       ({@link IdleStrategy#PARK}). The caller must check "nothing armed" with the table's
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
 * The loop reports the end of each park ({@link #parked}): the timed parks teach their overshoot,
 * and an idle park (nothing armed) restarts the clock of the next retirement. Tests drive it with
 * a model clock. Single-threaded: one instance per consumer.
 */
public final class BackoffIdleStrategy implements IdleStrategy {

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
    private long lastProgress;
    /** Predicted time from a wake-up or retirement to the next retirement; 0 while unknown. */
    private long expectedGap;
    /** Whether the last idle step was a predicted park (no spin since): see {@link #progress}. */
    private boolean afterPredictedPark;
    /** Whether the last idle step was a back-off park: a gap found then is not learned (it may be overslept). */
    private boolean afterBackOffPark;
    /** When the latest back-off park began: nothing had been retired by then (see {@link #progress}). */
    private long backOffFrom;
    /** Whether the last idle step was a poll park of a long prediction (see {@link #pollPark}). */
    private boolean afterPollPark;
    /** When the latest poll park began: nothing had been retired by then. */
    private long pollFrom;
    /**
     * Predictions of at least this ({@code 25 * minParkNanos}: 500 us by default) are polled with
     * parks of 1% of the prediction where shorter ones are spun for (see the class comment).
     */
    private final long pollAboveNanos;
    /** How much longer than asked the timed parks took, on average (timer slack, scheduling). */
    private long parkOvershoot;
    /** What the park asked for last was: {@link #NO_PARK}, {@link #IDLE_PARK} or {@link #LEARNING_PARK} (see {@link #parked}). */
    private int pendingPark;
    /** The learning park asked for: when its decision was made, and how long. */
    private long parkFrom;
    private long parkAsked;

    private static final int NO_PARK = 0;
    /** A park with nothing armed (untimed, or to a deadline): the next retirement's clock restarts when it ends. */
    private static final int IDLE_PARK = 1;
    /** A timed park while something is armed: its overshoot is learned when it ends. */
    private static final int LEARNING_PARK = 2;

    /**
     * @param startNanos the {@link System#nanoTime()} (or a model's clock) at which the consumer starts
     */
    public BackoffIdleStrategy(long spinNanos, long lingerNanos, long minParkNanos, long maxParkNanos, long startNanos) {
        if (spinNanos < 0 || lingerNanos < 0 || minParkNanos <= 0 || maxParkNanos < minParkNanos) {
            throw new IllegalArgumentException("need spin >= 0, linger >= 0 and 0 < minPark <= maxPark, was spin "
                    + spinNanos + " ns, linger " + lingerNanos + " ns, park " + minParkNanos + ".." + maxParkNanos + " ns");
        }
        this.spinNanos = spinNanos;
        this.lingerNanos = lingerNanos;
        this.minParkNanos = minParkNanos;
        this.maxParkNanos = maxParkNanos;
        this.pollAboveNanos = 25 * minParkNanos;
        this.lastProgress = startNanos;
    }

    /** The consumer was woken for new work at {@code now}: the time to the next retirement counts from here. */
    @Override
    public void reset(long now) {
        lastProgress = now;
        pendingPark = NO_PARK;
    }

    /**
     * The park asked for ended at {@code now}. After an idle park (nothing was armed) the consumer
     * was woken for new work: spin for it first, the time to the next retirement counting from
     * here. After a timed park while something was armed, how much longer than asked it took is
     * learned (timer slack, scheduling), and subtracted from later predicted parks.
     */
    @Override
    public void parked(long now) {
        int pending = pendingPark;
        pendingPark = NO_PARK;
        if (pending == IDLE_PARK) {
            lastProgress = now; // woken for new work: spin for it first
        } else if (pending == LEARNING_PARK) {
            long over = now - parkFrom - parkAsked;
            if (over > 0 && over < MAX_OVERSHOOT_NANOS) { // a longer one was descheduling or an unpark's absence: not slack
                parkOvershoot += (over - parkOvershoot) >> 3;
            } else if (over <= 0) {
                parkOvershoot -= parkOvershoot >> 3; // woken early (an unpark): decay
            }
        }
    }

    /**
     * The consumer retired something at {@code now}. A gap seen while spinning is accurate and is
     * learned (an exponential moving average), as is the lower bound of one found by a poll (the
     * look before the poll's park, within 1% of it); one found on the first look after a predicted park
     * may have been overslept, so it teaches nothing and shrinks the prediction by an eighth
     * instead; one found after a back-off park teaches only its lower bound (nothing had landed at
     * the look before that park), which raises a prediction that was too short. Learning from
     * overslept gaps would feed the consumer's own delay back into its next park (the prediction
     * would grow without bound on a closed loop of one waiter): no rule here grows the prediction
     * beyond a gap that was proven.
     */
    @Override
    public void progress(long now) {
        long gap = now - lastProgress;
        if (afterPollPark) {
            // Found by a poll of a long prediction: it landed after the look before the last poll
            // park, within 1% of the prediction. That lower bound is learned (oversleeping cannot
            // inflate it), both ways: the prediction follows the gaps without growing past them.
            long atLeast = Math.max(1L, pollFrom - lastProgress);
            expectedGap = expectedGap + ((atLeast - expectedGap) >> 2);
        } else if (afterPredictedPark) {
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
        afterPollPark = false;
        lastProgress = now;
    }


    /** {@link #idle(boolean, boolean, long, long)} with nothing watched. */
    public long idle(boolean armed, long now, long deadlineNanos) {
        return idle(armed, false, now, deadlineNanos);
    }

    /**
     * One idle step's decision (what the loop then does: {@link IdleStrategy}), told whether every armed registration is {@code watched}: a thread other than
     * the consumer looks at its flag and completes it on its own (a waiter spinning on its own
     * flag). Then where the consumer would spin (a predicted retirement due, or no prediction yet)
     * it parks for {@code minParkNanos} instead: the watcher sees the flag at spin latency, and
     * anything armed meanwhile without a watcher is seen within that park, as after a back-off
     * park. A gap found after such a park may have been overslept, so it teaches only its lower
     * bound, as after a back-off park. Where it would park anyway, nothing changes.
     */
    @Override
    public long idle(boolean armed, boolean watched, long now, long deadlineNanos) {
        long untilDeadline = deadlineNanos == NO_DEADLINE ? Long.MAX_VALUE : Math.max(0L, deadlineNanos - now);
        pendingPark = NO_PARK;
        if (!armed) {
            if (now - lastProgress < lingerNanos && untilDeadline > 0) {
                return SPIN; // lingering: a registration's unpark would find us awake anyway
            }
            pendingPark = IDLE_PARK; // when it ends: woken for new work (see parked)
            return untilDeadline == Long.MAX_VALUE ? PARK : Math.max(1L, untilDeadline);
        }
        afterPollPark = false; // set again only by pollPark: the latest step decides what a retirement teaches
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
                afterPredictedPark = true;
                return timedPark(Math.min(Math.min(wakeAt - waited, maxParkNanos), untilDeadline), now);
            }
            if (waited < expected + Math.min(spinNanos, expected >> 2)) {
                if (watched) {
                    return watchedPark(now, untilDeadline);
                }
                if (expected >= pollAboveNanos) {
                    return pollPark(expected, now, untilDeadline);
                }
                afterPredictedPark = false;
                afterBackOffPark = false;
                return SPIN; // the predicted retirement is due: look for it at spin latency
            }
        } else if (waited < spinNanos) {
            if (watched) {
                return watchedPark(now, untilDeadline);
            }
            afterBackOffPark = false;
            return SPIN;
        }
        afterPredictedPark = false;
        afterBackOffPark = true;
        backOffFrom = now; // nothing retired up to this look (see progress)
        long park = Math.max(minParkNanos, Math.min(maxParkNanos, waited / 50));
        return timedPark(Math.min(park, untilDeadline), now);
    }

    /**
     * Where a long prediction's retirement is due: a park of 1% of the prediction (at least
     * {@code minParkNanos}) instead of a spin. A gap found after it is known to within that park:
     * its lower bound, the look before it, is learned (see {@link #progress}).
     */
    private long pollPark(long expected, long now, long untilDeadline) {
        afterPredictedPark = false;
        afterBackOffPark = false;
        afterPollPark = true;
        pollFrom = now; // nothing retired up to this look
        return timedPark(Math.min(Math.max(minParkNanos, expected / 100), untilDeadline), now);
    }

    /**
     * Where a watched registration would have been spun for: a short park, which teaches what a
     * back-off park does (a gap found after it may be overslept: only its lower bound, the look
     * before it, is learned; see {@link #progress}).
     */
    private long watchedPark(long now, long untilDeadline) {
        afterPredictedPark = false;
        afterBackOffPark = true;
        backOffFrom = now; // nothing retired up to this look
        return timedPark(Math.min(minParkNanos, untilDeadline), now);
    }

    /** A timed park of {@code nanos} (at least 1), whose overshoot {@link #parked} learns. */
    private long timedPark(long nanos, long now) {
        long asked = Math.max(1L, nanos);
        pendingPark = LEARNING_PARK;
        parkFrom = now;
        parkAsked = asked;
        return asked;
    }
}
