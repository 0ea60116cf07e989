package io.cudaloom.reactor.lifecycle;

import io.cudaloom.reactor.LifecycleState;
import io.cudaloom.reactor.Scanner;
import io.cudaloom.spi.FlagMemory;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * A reactor's shutdown, driven through its {@link LifecycleState} (open, closed, released). The
 * state leaves open by one compare-and-set, so exactly one closer sees the shutdown through:
 * it stops the scanner, then, as the consumer, fails what is armed and reclaims the slots, and
 * frees the flag memory once no device write into it can land (at once if nothing is in flight,
 * else from a short-lived reclaimer thread).
 *
 * <p>Registrants read the state after publishing (the Dekker pair of {@link io.cudaloom.reactor.Registrar}); the
 * scanner's loop runs while it is OPEN.
 */
public final class Shutdown implements Scanner.Owner {
    /** The reclaimer's longest pause: a dead stream, or a backend that keeps failing, is looked at once a second. */
    private static final long MAX_RECLAIM_PAUSE_NANOS = 1_000_000_000L;

    private final LifecycleState state;
    private final FlagMemory flagMemory;
    /**
     * The scanner this lifecycle stops, its thread and the observability hooks: set once by
     * {@link #attach}, before the scanner thread starts and before the reactor is handed to any
     * other thread (its constructor), so every closer reads it set; volatile so that no closer
     * depends on how the reactor was published.
     */
    private volatile @Nullable Attached attached;

    /** What {@link #attach} gives: the parts a close drives, none of which names this class. */
    private record Attached(Scanner scanner, Thread scannerThread, Runnable closing, Runnable closed) {}

    public Shutdown(LifecycleState state, FlagMemory flagMemory) {
        this.state = state;
        this.flagMemory = flagMemory;
    }

    /**
     * Wires the scanner and the observability hooks ({@code closing}: the final counters, before
     * the shutdown changes them; {@code closed}: after it): once, before the scanner thread starts.
     */
    public void attach(Scanner scanner, Thread scannerThread, Runnable closing, Runnable closed) {
        if (attached != null) {
            throw new IllegalStateException("lifecycle already attached");
        }
        attached = new Attached(scanner, scannerThread, closing, closed);
    }

    private Attached attached() {
        Attached a = attached;
        if (a == null) {
            throw new IllegalStateException("lifecycle used before attach");
        }
        return a;
    }

    @Override
    public boolean isClosed() {
        return state.isClosed();
    }

    /**
     * {@link io.cudaloom.CompletionReactor#close()}: idempotent; returns without waiting for GPU work.
     *
     * <p>Called on the scanner thread itself (by a callback run there through a direct executor),
     * it only stops the scanner: the scanner finishes the delivery it is in, leaves its loop and
     * then wakes the rest. Running the shutdown right there would re-enter the delivery in progress
     * (its batch delivered twice) and, once a reclaimer took over, leave two consumers at once.
     */
    public void close() {
        if (!beginClose(null)) {
            return;
        }
        Attached a = attached();
        a.closing().run(); // the final JFR counters, before the shutdown changes them
        Thread scannerThread = a.scannerThread();
        if (Thread.currentThread() == scannerThread) {
            a.scanner().finishCloseOnExit(); // the scanner finishes it when it leaves its loop
            return;
        }
        boolean interrupted = false;
        while (true) {
            try {
                scannerThread.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        // The scanner has stopped (join: happens-before): this thread is now the consumer.
        finishClose();
    }

    /**
     * OPEN to CLOSED, once ({@link LifecycleState#beginClose}): true for the caller that did it. The
     * unpark follows the state's volatile write (SlotTable ordering 9); on the scanner itself it
     * leaves a permit, so it does not park.
     */
    private boolean beginClose(@Nullable Throwable cause) {
        if (!state.beginClose(cause)) {
            return false;
        }
        LockSupport.unpark(attached().scannerThread());
        return true;
    }

    /**
     * Called on the scanner after an {@link Error} in its loop: closes the reactor with the error
     * as the cause. True if this closed it (the scanner then finishes the shutdown itself).
     */
    @Override
    public boolean closeAfterScannerError(Error error) {
        return beginClose(error);
    }

    /**
     * Shutdown as the consumer: one reclaim step now, the rest (if any) on a reclaimer thread; then
     * the MXBean and the JFR hook go (last, so nothing they do can keep a waiter from being woken).
     */
    @Override
    public void finishClose() {
        Attached a = attached();
        try {
            if (!reclaimStep()) {
                String name = a.scannerThread().getName().replace("scanner", "reclaimer");
                DaemonThreads.system(name, () -> {
                    // Streams settle within milliseconds, unless dead or a backend keeps failing:
                    // then look again less and less often.
                    for (long pause = 1_000_000L; !reclaimStep(); pause = Math.min(pause << 1, MAX_RECLAIM_PAUSE_NANOS)) {
                        LockSupport.parkNanos(this, pause);
                    }
                }).start();
            }
        } finally {
            a.closed().run();
        }
    }

    private boolean reclaimStep() {
        if (!attached().scanner().reclaimStep(state.closedFailure())) {
            return false;
        }
        state.markReleased();
        flagMemory.release().run();
        return true;
    }
}
