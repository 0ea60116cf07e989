package io.cudaloom.protocol;

import java.util.concurrent.locks.LockSupport;

/**
 * What the single consumer of a {@link SlotTable} does when a cycle found nothing to retire (in the
 * manner of Agrona's {@code IdleStrategy}). Chosen with the A/B harness (docs/STRESS.md section 4):
 * <ul>
 *   <li>something is armed: spin for {@code spinNanos} after the last progress (a completion
 *       within that time is seen at spin latency), then park for 1/8 of the time waited so far,
 *       within {@code [minParkNanos, maxParkNanos]}, so a long wait costs a small, bounded share of a
 *       core (at most one wake-up per {@code maxParkNanos});
 *   <li>nothing armed: keep spinning until {@code lingerNanos} after the last progress (an await
 *       that comes meanwhile then pays no wake-up of the consumer), then park untimed. The caller must check "nothing armed" with the table's
 *       {@link SlotTable#isIdle()} right before, because a registrant unparks the consumer only on
 *       the idle-to-active transition (SlotTable ordering 3): if that unpark raced ahead of the
 *       check, it is this park's permit and the park returns at once;
 *   <li>a deadline (e.g. quarantined slots to look at again) caps every park, timed or not.
 * </ul>
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

    private final long spinNanos;
    private final long lingerNanos;
    private final long minParkNanos;
    private final long maxParkNanos;
    private final Parker parker;
    private final Object blocker;
    private long lastProgress = System.nanoTime();

    public BackoffIdleStrategy(long spinNanos, long lingerNanos, long minParkNanos, long maxParkNanos, Parker parker,
            Object blocker) {
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
    }

    /** The consumer made progress (retired something) at {@code now}: the next idle spins again. */
    public void reset(long now) {
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
            lastProgress = System.nanoTime(); // woken for new work: spin for it first
            return step;
        }
        long waited = now - lastProgress;
        if (waited < spinNanos) {
            Thread.onSpinWait();
            return Step.SPUN;
        }
        long park = Math.max(minParkNanos, Math.min(maxParkNanos, waited >>> 3));
        parker.parkNanos(blocker, Math.max(1L, Math.min(park, untilDeadline)));
        return Step.TIMED_PARK;
    }
}
