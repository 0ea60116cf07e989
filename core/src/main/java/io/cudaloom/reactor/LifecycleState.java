package io.cudaloom.reactor;

import io.cudaloom.ReactorClosedException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;

/**
 * A reactor's lifecycle state, alone: {@link #OPEN}, then {@link #CLOSED} (to new work: close()
 * ran, or the scanner stopped on an {@link Error}), then {@link #RELEASED} (the flag memory is
 * freed). What registrants and waiters read ({@link Registrar}, {@link BlockingWait.Checks},
 * {@link BlockingWait}); {@link io.cudaloom.reactor.lifecycle.Shutdown} drives the transitions and the shutdown.
 *
 * <p>Orderings: it leaves OPEN by one compare-and-set ({@link #beginClose}), so exactly one closer
 * sees the shutdown through; that write is followed by a full fence, the store side of the Dekker
 * pair with the registrar (a registrant publishes, then reads this state; the closer writes it,
 * then reads the active bits and the fallback set: at least one of them sees the other). The stop
 * cause is written before the state change that publishes it and read after the state.
 */
public final class LifecycleState {
    private static final VarHandle STATE;
    private static final int OPEN = 0;
    private static final int CLOSED = 1;
    private static final int RELEASED = 2;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(LifecycleState.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final String deviceName;
    @SuppressWarnings("unused") // through STATE
    private volatile int state;
    /** The Error that stopped the scanner, if that is what closed the reactor; written before STATE. */
    private volatile @Nullable Throwable stopCause;

    public LifecycleState(String deviceName) {
        this.deviceName = deviceName;
    }

    public boolean isClosed() {
        return state != OPEN;
    }

    public boolean isMemoryReleased() {
        return state == RELEASED;
    }

    public void checkOpen() {
        if (state != OPEN) {
            throw closedFailure();
        }
    }

    /** What every waiter and later caller of a closed reactor gets (naming the Error, if one stopped it). */
    public ReactorClosedException closedFailure() {
        Throwable cause = stopCause;
        if (cause != null) {
            return new ReactorClosedException("the completion reactor of " + deviceName
                    + " stopped: its scanner failed with " + cause, cause);
        }
        return new ReactorClosedException("the completion reactor of " + deviceName + " is closed");
    }

    /**
     * OPEN to CLOSED, once, with {@code cause} (null for a close()) published by it: true for the
     * caller that did it, who must then see the shutdown through. Called by
     * {@link io.cudaloom.reactor.lifecycle.Shutdown} only (public for that package; no part calls it).
     */
    public boolean beginClose(@Nullable Throwable cause) {
        if (state != OPEN) {
            return false;
        }
        if (cause != null) {
            // Before the state change that publishes it; a racing close() may still win the CAS
            // (then its plain "closed" is what callers see until this cause is read: both are true).
            stopCause = cause;
        }
        if (!STATE.compareAndSet(this, OPEN, CLOSED)) {
            return false;
        }
        // The Dekker pairing with the registrar needs this write ordered before the consumer's
        // later reads of the active bits and the fallback set (reclaim). Those are acquire loads,
        // and a volatile write is ordered only before later volatile loads: the fence gives the
        // store-load order for them too.
        VarHandle.fullFence();
        return true;
    }

    /**
     * CLOSED to RELEASED: the flag memory is about to be freed (the consumer, once nothing can land).
     * Called by {@link io.cudaloom.reactor.lifecycle.Shutdown} only.
     */
    public void markReleased() {
        state = RELEASED;
    }
}
