package io.cudaloom;

import java.util.concurrent.locks.LockSupport;

/**
 * The scanner's guarantee that a delivered waiter runs: it remembers each waiter it delivered to
 * and, {@link #AFTER_NANOS} later, unparks again any that is still parked in the reactor's park
 * with that delivery in its record. Such a waiter lost its wake-up: the unpark returned, but the
 * thread stayed parked (seen on JDK 25.0.3 when the unpark raced the waiter's entry into park;
 * docs/LOST-WAKEUP.md). An extra unpark is harmless (parks are re-checked in a loop), so the check
 * only needs to be cheap and to miss nothing that stays parked.
 *
 * <p>Scanner-only state (single thread, no synchronization). Reads of another thread's state:
 * the record's ticket (an acquire load) is checked before the thread's blocker and state, so a
 * waiter that has moved on (its record reset or re-delivered with another ticket) is never woken
 * for an old delivery.
 */
final class Rewaker {
    /** How long after its delivery a waiter still parked counts as a lost wake-up. */
    static final long AFTER_NANOS = 200_000L;
    private static final int CAPACITY = 4096; // a power of two

    private final Object blocker;
    private final Waiter[] waiters = new Waiter[CAPACITY];
    private final long[] tickets = new long[CAPACITY];
    private final long[] deliveredAt = new long[CAPACITY];
    private int head; // next free entry
    private int tail; // oldest entry
    private volatile long rewoken; // written by the scanner only; volatile for stats()

    Rewaker(Object blocker) {
        this.blocker = blocker;
    }

    /** Called right after {@code waiter} was delivered {@code ticket} (and unparked). */
    void remember(Waiter waiter, long ticket, long now) {
        if (head - tail == CAPACITY) {
            check(tail++ & (CAPACITY - 1)); // full: check the oldest early rather than forget it
        }
        int i = head++ & (CAPACITY - 1);
        waiters[i] = waiter;
        tickets[i] = ticket;
        deliveredAt[i] = now;
    }

    boolean isEmpty() {
        return head == tail;
    }

    /** Deliveries remembered and not yet checked. */
    int pending() {
        return head - tail;
    }

    /** Checks every entry at least {@link #AFTER_NANOS} old. */
    void sweep(long now) {
        while (head != tail) {
            int i = tail & (CAPACITY - 1);
            if (now - deliveredAt[i] < AFTER_NANOS) {
                return;
            }
            check(i);
            tail++;
        }
    }

    /** Wake-ups that were lost and given again. */
    long rewoken() {
        return rewoken;
    }

    private void check(int i) {
        Waiter w = waiters[i];
        waiters[i] = null;
        if (w == null || !w.isDelivered(tickets[i])) {
            return; // moved on: the record was reset for another await
        }
        Thread t = w.thread;
        Thread.State s = t.getState();
        if ((s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING) && LockSupport.getBlocker(t) == blocker) {
            rewoken = rewoken + 1;
            LockSupport.unpark(t);
        }
    }
}
