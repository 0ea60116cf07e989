package io.cudaloom.protocol;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;

/**
 * Wake-up requests from sleeping threads to the single consumer of a {@link SlotTable} (the
 * scanner), with no CUDA in it: a thread that sleeps through most of a predicted wait posts the
 * time it wants to be woken ({@link Sleeper#wakeAtNanos}), and the consumer, whose timed parks are
 * precise (1 us of timer slack) where a virtual thread's are not (the JDK's timer thread has
 * Linux's default 50 us, and the carrier's wake-up follows: 65-78 us late at p50 on the H200),
 * wakes it at that time. A fixed number of cells; a sleeper that finds none free just sleeps on its
 * own timer, as it would without the board.
 *
 * <p>Who removes a request: whoever's compare-and-set of its cell from the sleeper to null
 * succeeds. The consumer's ({@link #fireDue}) is followed by the wake-up; the sleeper's
 * ({@link #withdraw}) means no wake-up will come for that request. So a request is woken at most
 * once, and a sleeper that withdrew successfully is never woken by the board afterwards. A sleeper
 * that fails to withdraw was taken by the consumer, whose unpark is then made or about to be: if
 * the sleeper had woken for another reason, that unpark leaves a permit that ends one later park
 * at once, which every park loop re-checks (as {@code LockSupport} allows).
 *
 * <p>The ordering that makes a request timely (a Dekker pair of volatile accesses):
 * <ol>
 *   <li>The consumer, before a timed park, stores the time it plans to wake
 *       ({@link #planPark}, a volatile write), then reads the posted requests (a volatile read of
 *       {@code posted}, then of the cells) and shortens the park to the earliest one.
 *   <li>A sleeper posts its request (the cell's compare-and-set, then {@code posted}'s
 *       increment: volatile read-modify-writes), then reads the consumer's plan
 *       ({@link #post}): if the consumer plans to sleep past the request, the sleeper's caller
 *       unparks it.
 * </ol>
 * Volatile accesses are sequentially consistent, so either the consumer's read of {@code posted}
 * sees the increment (its park is shortened to the request) or the sleeper's read of the plan sees
 * the plan (it unparks the consumer, whose park then returns at once, or soon); both may happen,
 * which costs one spurious wake-up of the consumer. Never neither: a request is never slept
 * through by a consumer that could have seen it. The jcstress {@code WakeBoardPlanTest} checks
 * this, and its broken twin, which reads the requests before storing the plan, is caught.
 *
 * <p>The untimed park needs no plan: the consumer parks untimed only while nothing is armed (its
 * park gate, SlotTable ordering 3), and a sleeper posts only while its own registration is armed;
 * one that raced the gate woke the consumer on its idle-to-active transition.
 *
 * <p>A request is a liveness hint, never needed for correctness: a sleeper woken early (an ABA of
 * its cell: the consumer read an earlier request's time, then took a newer one) sleeps again and
 * posts again, and one never woken by the board ends its sleep on its own timer.
 *
 * @param <T> the sleeper type (the reactor's per-thread waiter record)
 */
public final class WakeBoard<T extends WakeBoard.Sleeper> {
    /** A thread that wants to be woken at a time; the time is read with a volatile load. */
    public interface Sleeper {
        /** The {@link System#nanoTime()} at which to be woken, as of the latest post. */
        long wakeAtNanos();
    }

    /** {@link #post} found every cell taken: nothing was posted. */
    public static final int NOT_POSTED = -1;
    /** The consumer's plan while it is awake (looking at the table). */
    private static final long AWAKE = Long.MIN_VALUE;

    private final AtomicReferenceArray<T> cells;
    /** How many cells hold a request: the consumer skips the cells while 0 (see the class comment). */
    private final AtomicInteger posted = new AtomicInteger();
    /** When the consumer plans to wake ({@link #AWAKE} while it is awake): written by the consumer only. */
    private volatile long plannedWake = AWAKE;
    /** Whether the latest {@link #post} found the consumer planning to sleep past it: a signal for the caller. */
    public static final int WAKE_CONSUMER = 1 << 30;

    public WakeBoard(int cells) {
        if (cells < 1 || cells >= WAKE_CONSUMER) {
            throw new IllegalArgumentException("need 1 <= cells < " + WAKE_CONSUMER + ", was " + cells);
        }
        this.cells = new AtomicReferenceArray<>(cells);
    }

    public int capacity() {
        return cells.length();
    }

    // ---- the sleepers' side (any thread) ------------------------------------------------------

    /**
     * Posts {@code sleeper}'s request (its {@link Sleeper#wakeAtNanos} must be stored first, with a
     * volatile write: the cell's compare-and-set publishes it). Returns {@link #NOT_POSTED}, or the
     * cell, with {@link #WAKE_CONSUMER} added when the consumer plans to sleep past the request:
     * then the caller must unpark the consumer (class comment, ordering 2). {@code hint} picks the
     * first cell tried (e.g. the thread's id), so sleepers on different threads rarely contend.
     */
    public int post(T sleeper, long hint) {
        int n = cells.length();
        int start = (int) Math.floorMod(hint, (long) n);
        for (int k = 0; k < n; k++) {
            int i = start + k < n ? start + k : start + k - n;
            if (cells.get(i) == null && cells.compareAndSet(i, null, sleeper)) {
                posted.incrementAndGet(); // volatile: before the read of the plan (ordering 2)
                long plan = plannedWake;
                return plan != AWAKE && plan - sleeper.wakeAtNanos() > 0 ? i | WAKE_CONSUMER : i;
            }
        }
        return NOT_POSTED;
    }

    /** The cell of a {@link #post} result (without {@link #WAKE_CONSUMER}). */
    public static int cellOf(int postResult) {
        return postResult & ~WAKE_CONSUMER;
    }

    /** Whether {@code sleeper}'s request in {@code cell} is still posted (the consumer has not taken it). */
    public boolean holds(int cell, T sleeper) {
        return cells.get(cell) == sleeper;
    }

    /** Withdraws {@code sleeper}'s request from {@code cell}; false if the consumer took it first (its wake-up is coming). */
    public boolean withdraw(int cell, T sleeper) {
        if (cells.compareAndSet(cell, sleeper, null)) {
            posted.decrementAndGet();
            return true;
        }
        return false;
    }

    // ---- the consumer's side (one thread) -----------------------------------------------------

    /** Whether any request is posted (a volatile read; cheap enough for every pass). */
    public boolean anyPosted() {
        return posted.get() > 0;
    }

    /**
     * Takes every request due at {@code now} and hands each to {@code wake} (which unparks its
     * thread); returns how many it took.
     */
    public int fireDue(long now, Consumer<? super T> wake) {
        if (posted.get() == 0) {
            return 0;
        }
        int fired = 0;
        for (int i = 0; i < cells.length(); i++) {
            T s = cells.get(i);
            if (s != null && now - s.wakeAtNanos() >= 0 && cells.compareAndSet(i, s, null)) {
                posted.decrementAndGet();
                wake.accept(s);
                fired++;
            }
        }
        return fired;
    }

    /**
     * Before a timed park of {@code nanos} from {@code now}: stores the plan (ordering 1), then
     * returns the park shortened to the earliest posted request (0: one is due, do not park).
     * {@link #awake} must follow the park.
     */
    public long planPark(long now, long nanos) {
        long until = now + nanos;
        plannedWake = until; // volatile: before the reads of the requests (ordering 1)
        if (posted.get() == 0) {
            return nanos;
        }
        long earliest = until;
        for (int i = 0; i < cells.length(); i++) {
            T s = cells.get(i);
            if (s != null) {
                long at = s.wakeAtNanos();
                if (at - earliest < 0) {
                    earliest = at;
                }
            }
        }
        return Math.max(0L, earliest - now);
    }

    /** The consumer is awake again (after the park that {@link #planPark} planned). */
    public void awake() {
        plannedWake = AWAKE;
    }
}
