package io.cudaloom.stress.jcstress;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A model of {@link java.util.concurrent.locks.LockSupport}'s per-thread park permit, for one
 * thread (the scanner), that never blocks: a jcstress actor cannot block on another actor.
 *
 * <p>It is faithful to the contract the reactor relies on: the permit is binary (unparks do not
 * accumulate); {@code unpark} of a thread that is not parked makes the permit available, and the
 * next {@code park} consumes it and returns at once; {@code unpark} of a parked thread wakes it.
 * Each transition is one compare-and-set on one word, so the model is linearizable, as the real
 * permit is (HotSpot's Parker updates it under a mutex). {@code park} here only <em>decides</em>:
 * it returns whether the thread would now block; an unpark that comes later moves
 * {@link #PARKED} to {@link #WOKEN}. A final state of {@link #PARKED} is a thread that sleeps
 * with no wake-up pending: a lost wake-up if anything still needs it.
 *
 * <p>Not modelled (deliberately): spurious returns from {@code park}, which the real scanner loop
 * tolerates by re-checking, and which could only hide a lost wake-up, never create one.
 */
public final class ParkModel {
    /** Running, no permit. */
    public static final int RUNNING = 0;
    /** Running, permit available (an unpark came while not parked). */
    public static final int PERMIT = 1;
    /** Blocked in park, no unpark since: stays asleep. */
    public static final int PARKED = 2;
    /** Was blocked in park and an unpark woke it. */
    public static final int WOKEN = 3;

    private final AtomicInteger state = new AtomicInteger(RUNNING);

    /**
     * The scanner parks: consumes an available permit and returns false (does not block), or
     * returns true, the thread now being {@link #PARKED}.
     */
    public boolean park() {
        for (;;) {
            int s = state.get();
            if (s == PERMIT) {
                if (state.compareAndSet(PERMIT, RUNNING)) {
                    return false;
                }
            } else if (s == RUNNING) {
                if (state.compareAndSet(RUNNING, PARKED)) {
                    return true;
                }
            } else {
                throw new IllegalStateException("park while parked or woken: " + s);
            }
        }
    }

    /** A registrant unparks the scanner: wakes it if parked, else leaves the (binary) permit. */
    public void unpark() {
        for (;;) {
            int s = state.get();
            if (s == PARKED) {
                if (state.compareAndSet(PARKED, WOKEN)) {
                    return;
                }
            } else if (s == RUNNING) {
                if (state.compareAndSet(RUNNING, PERMIT)) {
                    return;
                }
            } else {
                return; // PERMIT: permits do not accumulate; WOKEN: already woken
            }
        }
    }

    public int state() {
        return state.get();
    }
}
