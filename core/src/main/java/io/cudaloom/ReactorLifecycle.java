package io.cudaloom;

import io.cudaloom.spi.FlagMemory;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * A reactor's lifecycle, in one state: {@link #OPEN}, then {@link #CLOSED} (to new work: close()
 * ran, or the scanner stopped on an {@link Error}), then {@link #RELEASED} (the flag memory is
 * freed). It leaves OPEN by one compare-and-set, so exactly one closer sees the shutdown through:
 * it stops the scanner, then, as the consumer, fails what is armed and reclaims the slots, and
 * frees the flag memory once no device write into it can land (at once if nothing is in flight,
 * else from a short-lived reclaimer thread).
 *
 * <p>Registrants read the state after publishing (the Dekker pair of {@link Registrar}); the
 * scanner's loop runs while it is OPEN.
 */
final class ReactorLifecycle {
    private static final VarHandle STATE;
    private static final int OPEN = 0;
    private static final int CLOSED = 1;
    private static final int RELEASED = 2;
    /** The reclaimer's longest pause: a dead stream, or a backend that keeps failing, is looked at once a second. */
    private static final long MAX_RECLAIM_PAUSE_NANOS = 1_000_000_000L;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(ReactorLifecycle.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final CompletionReactor reactor;
    private final FlagMemory flagMemory;
    @SuppressWarnings("unused") // through STATE
    private volatile int state;
    /** The Error that stopped the scanner, if that is what closed the reactor; written before STATE. */
    private volatile @Nullable Throwable stopCause;

    ReactorLifecycle(CompletionReactor reactor, FlagMemory flagMemory) {
        this.reactor = reactor;
        this.flagMemory = flagMemory;
    }

    boolean isClosed() {
        return state != OPEN;
    }

    boolean isMemoryReleased() {
        return state == RELEASED;
    }

    void checkOpen() {
        if (state != OPEN) {
            throw closedFailure();
        }
    }

    /** What every waiter and later caller of a closed reactor gets (naming the Error, if one stopped it). */
    ReactorClosedException closedFailure() {
        String device = reactor.device().name();
        Throwable cause = stopCause;
        if (cause != null) {
            return new ReactorClosedException("the completion reactor of " + device
                    + " stopped: its scanner failed with " + cause, cause);
        }
        return new ReactorClosedException("the completion reactor of " + device + " is closed");
    }

    /**
     * {@link CompletionReactor#close()}: idempotent; returns without waiting for GPU work.
     *
     * <p>Called on the scanner thread itself (by a callback run there through a direct executor),
     * it only stops the scanner: the scanner finishes the delivery it is in, leaves its loop and
     * then wakes the rest. Running the shutdown right there would re-enter the delivery in progress
     * (its batch delivered twice) and, once a reclaimer took over, leave two consumers at once.
     */
    void close() {
        if (!beginClose()) {
            return;
        }
        reactor.observability().closing(); // the final JFR counters, before the shutdown changes them
        Thread scannerThread = reactor.scannerThread();
        if (Thread.currentThread() == scannerThread) {
            reactor.scanner().finishCloseOnExit(); // the scanner finishes it when it leaves its loop
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
     * OPEN to CLOSED, once: true for the caller that did it (who must then see the shutdown
     * through). Registrants that publish from now on see it (the Dekker pair of {@link Registrar}).
     */
    private boolean beginClose() {
        if (!STATE.compareAndSet(this, OPEN, CLOSED)) {
            return false;
        }
        // The Dekker pairing with the registrar needs this write ordered before the consumer's
        // later reads of the active bits and the fallback set (reclaimStep). Those are acquire
        // loads, and a volatile write is ordered only before later volatile loads: the fence gives
        // the store-load order for them too. The unpark follows a volatile write (SlotTable
        // ordering 9); on the scanner itself it leaves a permit, so it does not park.
        VarHandle.fullFence();
        LockSupport.unpark(reactor.scannerThread());
        return true;
    }

    /**
     * Called on the scanner after an {@link Error} in its loop: closes the reactor with the error
     * as the cause. True if this closed it (the scanner then finishes the shutdown itself).
     */
    boolean closeAfterScannerError(Error error) {
        stopCause = error; // before the state change that publishes it
        return beginClose();
    }

    /**
     * Shutdown as the consumer: one reclaim step now, the rest (if any) on a reclaimer thread; then
     * the MXBean and the JFR hook go (last, so nothing they do can keep a waiter from being woken).
     */
    void finishClose() {
        try {
            if (!reclaimStep()) {
                String name = reactor.scannerThread().getName().replace("scanner", "reclaimer");
                ReactorThreads.system(name, () -> {
                    // Streams settle within milliseconds, unless dead or a backend keeps failing:
                    // then look again less and less often.
                    for (long pause = 1_000_000L; !reclaimStep(); pause = Math.min(pause << 1, MAX_RECLAIM_PAUSE_NANOS)) {
                        LockSupport.parkNanos(this, pause);
                    }
                }).start();
            }
        } finally {
            reactor.observability().close();
        }
    }

    private boolean reclaimStep() {
        if (!reactor.scanner().reclaimStep(closedFailure())) {
            return false;
        }
        state = RELEASED;
        flagMemory.release().run();
        return true;
    }
}
