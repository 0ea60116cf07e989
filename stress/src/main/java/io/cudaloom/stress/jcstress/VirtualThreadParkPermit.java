package io.cudaloom.stress.jcstress;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A virtual thread's park permit exactly as the JDK implements it ({@code VirtualThread.parkPermit}
 * and {@code getAndSetParkPermit}, JDK 21 to 25), for one thread, never blocking: a jcstress actor
 * cannot block on another.
 *
 * <p>The part that matters is the fast path: {@code getAndSetParkPermit(v)} does its atomic
 * get-and-set only when the permit differs from {@code v}; when it already equals {@code v} it
 * returns after a single volatile <em>read</em>. So {@code unpark} of a thread that already holds
 * a permit (a stale one, from an earlier unpark that came while it was not parked) writes nothing
 * and makes no read-modify-write: whatever its caller stored just before is ordered before that
 * read only if the store was volatile (store-load order), not if it was a release store.
 *
 * <p>{@link #park()} and {@link #unpark()} model the first step of {@code VirtualThread.park} and
 * {@code unpark}; what follows in the JDK (yield, the state machine that re-checks the permit after
 * yielding) only matters when a permit was written, and then it guarantees the wake-up.
 */
public final class VirtualThreadParkPermit {
    private static final VarHandle PERMIT;

    static {
        try {
            PERMIT = MethodHandles.lookup().findVarHandle(VirtualThreadParkPermit.class, "parkPermit", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private volatile boolean parkPermit;

    /** @param stalePermit whether the thread starts with a permit (an earlier, harmless unpark) */
    public VirtualThreadParkPermit(boolean stalePermit) {
        this.parkPermit = stalePermit;
    }

    /** {@code VirtualThread.getAndSetParkPermit}: the atomic get-and-set only when the value changes. */
    private boolean getAndSetParkPermit(boolean newValue) {
        if (parkPermit != newValue) {
            return (boolean) PERMIT.getAndSet(this, newValue);
        }
        return newValue;
    }

    /** {@code park}'s first step: true if a permit was consumed (park returns at once), else it blocks. */
    public boolean park() {
        return getAndSetParkPermit(false);
    }

    /**
     * {@code unpark}'s first step: true if this call set the permit (then the thread's current or
     * next park returns); false if the permit was already set and the call returned having written
     * nothing (the fast path).
     */
    public boolean unpark() {
        return !getAndSetParkPermit(true);
    }
}
