package io.cudaloom.stress.jcstress;

import io.cudaloom.protocol.BackoffIdleStrategy;

/**
 * {@link BackoffIdleStrategy}'s park seam backed by a {@link ParkModel}, so a jcstress actor can run
 * the real strategy's park decision without blocking: {@link #park} asks the model and records
 * whether the thread would now block ({@link #WOULD_BLOCK}) or consumed a pending permit and goes
 * on ({@link #PERMIT_CONSUMED}); {@link #parkNanos} only records {@link #TIMED}: a timed park ends
 * by itself, so it is never a lost wake-up. (A real timed park would also consume a pending permit;
 * the model leaves it, which can only keep a later untimed park from blocking, and every untimed
 * park is preceded by the park gate's {@code isIdle()} check anyway.) One actor only.
 */
final class ModelParker implements BackoffIdleStrategy.Parker {
    /** No park since {@link #clear}. */
    static final int NONE = 0;
    /** A timed park (the strategy's back-off, or a deadline). */
    static final int TIMED = 1;
    /** An untimed park that found the permit pending and returned at once. */
    static final int PERMIT_CONSUMED = 2;
    /** An untimed park with no permit: the thread would block until an unpark. */
    static final int WOULD_BLOCK = 3;

    private final ParkModel model;
    private int last = NONE;

    ModelParker(ParkModel model) {
        this.model = model;
    }

    @Override
    public void park(Object blocker) {
        last = model.park() ? WOULD_BLOCK : PERMIT_CONSUMED;
    }

    @Override
    public void parkNanos(Object blocker, long nanos) {
        last = TIMED;
    }

    /** What the last park did, and forgets it. */
    int takeLast() {
        int l = last;
        last = NONE;
        return l;
    }
}
