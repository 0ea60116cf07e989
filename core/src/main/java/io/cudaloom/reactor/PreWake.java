package io.cudaloom.reactor;

import io.cudaloom.ReactorConfig;
import io.cudaloom.protocol.IdleStrategy;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.protocol.WakeBoard;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * The scanner's wake-up of waiters that sleep through a predicted wait
 * ({@link ReactorConfig.Builder#waiterPreWake}): {@link BlockingWait} posts when the waiter wants
 * to be woken, then parks with its own timer as the backstop; the {@link Scanner} unparks it at
 * that time ({@link #fireDue}, every pass) and never sleeps past a posted time (its runner plans
 * every timed park on the board first: {@link #planPark}). The protocol, its orderings and what a lost race costs are
 * {@link WakeBoard}'s; this class adds the reactor's side: the board's cells, the unpark of the
 * waiter's thread, the scanner's wake-up when a post finds it planning to sleep past it, and the
 * count of pre-wakes ({@link io.cudaloom.reactor.metrics.Counter#PRE_WAKES}).
 *
 * <p>Why the scanner: its parks have 1 us of timer slack ({@link TimerSlack}); a virtual thread's
 * timed park is ended by the JDK's timer thread, whose slack (Linux's default, 50 us) the library
 * cannot set, and then by a carrier's wake-up: 65-78 us late at p50 on the H200
 * (docs/issue20/s8-run2/park-overshoot.md). A waiter that sleeps on its own timer must wake that
 * much earlier and spin through the difference; one the scanner wakes spins only through a
 * carrier's wake-up.
 */
public final class PreWake {
    /** {@link #post} posted nothing (off, or every cell taken): the waiter sleeps on its own timer. */
    static final int NOT_POSTED = WakeBoard.NOT_POSTED;

    private final WakeBoard<Waiter> board;
    private final boolean enabled;
    /** Whether the scanner parks while every armed slot is watched ({@link #everyArmedSlotWatched}). */
    private final boolean deferToWatchers;
    /**
     * Threads that spin on their own armed flag now ({@link #watch}; not while they sleep through
     * a prediction): each watches one armed slot, its own or its group's, and on seeing the flag
     * withdraws the payload and completes it on its own thread. Read by the scanner
     * ({@link #everyArmedSlotWatched}); a hint, never needed for correctness (see there).
     */
    private final AtomicInteger watching = new AtomicInteger();
    private final Runnable wakeScanner;
    private final Consumer<Waiter> unpark = w -> LockSupport.unpark(w.thread);

    /**
     * For a reactor with {@code config}: one cell per waiter that may spin
     * ({@link ReactorConfig#waiterSpinMaxWaiters()}, doubled, at least 8, at most 64), as only
     * those sleep through predictions. {@code wakeScanner} unparks the scanner thread.
     */
    public PreWake(ReactorConfig config, Runnable wakeScanner) {
        this.board = new WakeBoard<>(Math.min(64, Math.max(8, 2 * config.waiterSpinMaxWaiters())));
        this.enabled = config.waiterPreWake();
        this.deferToWatchers = config.scannerDefersToSpinningWaiters();
        this.wakeScanner = wakeScanner;
    }

    // ---- watchers ------------------------------------------------------------------------------

    /**
     * This thread starts spinning on its own armed flag (after its arm and any sleep);
     * {@link #unwatch} follows. Counted only where the scanner defers to watchers: otherwise no
     * one reads the count, and the spin path pays no read-modify-write for it.
     */
    void watch() {
        if (deferToWatchers) {
            watching.incrementAndGet();
        }
    }

    /** This thread no longer looks at its flag (it saw it, was delivered, or its spin ended). */
    void unwatch() {
        if (deferToWatchers) {
            watching.decrementAndGet();
        }
    }

    /**
     * Whether every armed slot of {@code table} has a thread looking at its flag (the scanner's
     * idle step asks, {@link IdleStrategy#idle}): then the scanner need not look at spin
     * latency, and parks in short parks instead ({@code scannerMinPark}, cut to any posted
     * pre-wake). A hint only, both ways. A watcher is counted only after its own arm, so a wrong
     * "yes" (an armed slot nobody looks at) needs a watcher whose slot is no longer armed: one
     * that lost its flag to the scanner and spins for the delivery (at most its spin window), or
     * the racy pair of reads here; it costs that other slot at most one short park of latency, as
     * a scanner that backs off would. A wrong "no" costs a spin. Liveness never rests on it: the
     * scanner still scans after every park and never parks untimed while anything is armed.
     */
    boolean everyArmedSlotWatched(SlotTable<?> table) {
        if (!deferToWatchers) {
            return false;
        }
        int w = watching.get();
        return w > 0 && w >= table.armedCount();
    }

    // ---- the waiter's side --------------------------------------------------------------------

    /**
     * Asks the scanner to wake {@code waiter}'s thread at {@code wakeAt}; returns the cell, or
     * {@link #NOT_POSTED}. Unparks the scanner if it plans to sleep past {@code wakeAt}
     * (WakeBoard, ordering 2).
     */
    int post(Waiter waiter, long wakeAt) {
        if (!enabled) {
            return NOT_POSTED;
        }
        waiter.wakeAt(wakeAt); // volatile, before the post's compare-and-set publishes the waiter
        int r = board.post(waiter, waiter.thread.threadId());
        if (r == WakeBoard.NOT_POSTED) {
            return NOT_POSTED;
        }
        if ((r & WakeBoard.WAKE_CONSUMER) != 0) {
            wakeScanner.run();
        }
        return WakeBoard.cellOf(r);
    }

    /** Whether any waiter has a request posted now (tests and diagnostics). */
    boolean anyPosted() {
        return board.anyPosted();
    }

    /** Whether the scanner has not yet taken {@code waiter}'s request in {@code cell}. */
    boolean holds(int cell, Waiter waiter) {
        return board.holds(cell, waiter);
    }

    /** Withdraws the request; false if the scanner took it (its unpark is made or coming). */
    boolean withdraw(int cell, Waiter waiter) {
        return board.withdraw(cell, waiter);
    }

    // ---- the scanner's side -------------------------------------------------------------------

    /** Unparks every waiter whose time has come (the scanner, every pass); returns how many. */
    int fireDue(long now) {
        return board.fireDue(now, unpark);
    }

    /**
     * Plans a timed park of the scanner of {@code nanos} on the board (WakeBoard, ordering 1):
     * returns it cut short to the earliest posted wake time, or 0 (no park) if one is due. The
     * scanner's loop makes the park, then calls {@link #awake}. The untimed park needs no plan
     * (WakeBoard says why).
     */
    long planPark(long nanos) {
        return board.planPark(System.nanoTime(), nanos);
    }

    /** The scanner is awake again after the park {@link #planPark} planned. */
    void awake() {
        board.awake();
    }
}
