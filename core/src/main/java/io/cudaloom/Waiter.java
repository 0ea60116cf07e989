package io.cudaloom;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * A waiting thread's completion record, one per thread and reused by all its awaits, so an await
 * allocates nothing. A thread is in at most one await at a time, and an await does not return
 * before its registration is either delivered or withdrawn (see
 * {@link CompletionReactor#await}), so a record never has two registrations outstanding.
 *
 * <p>Hand-off: {@link #complete} stores the failure, then release-stores the delivered ticket, then
 * unparks; the waiter acquire-loads the ticket ({@link #isDelivered}) before it reads the failure.
 * The ticket comparison is the ABA guard: a delivery for any other registration (an earlier one of
 * this thread that was abandoned) never satisfies the current one.
 */
final class Waiter implements Completion {
    private static final VarHandle DELIVERED;
    private static final ThreadLocal<Waiter> CURRENT = ThreadLocal.withInitial(Waiter::new);
    static final long NONE = Long.MIN_VALUE;

    static {
        try {
            DELIVERED = MethodHandles.lookup().findVarHandle(Waiter.class, "delivered", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final Thread thread = Thread.currentThread();
    @SuppressWarnings("unused") // accessed through DELIVERED
    private volatile long delivered = NONE;
    private @Nullable RuntimeException failure;

    static Waiter current() {
        return CURRENT.get();
    }

    @Override
    public void complete(long ticket, @Nullable RuntimeException failure) {
        this.failure = failure;
        DELIVERED.setRelease(this, ticket);
        LockSupport.unpark(thread);
    }

    /**
     * Forget the previous registration before a new one is published (its publish, a volatile
     * read-modify-write, orders these plain stores before any delivery). Needed because tickets of
     * different reactors can be equal.
     */
    void reset() {
        failure = null;
        DELIVERED.set(this, NONE);
    }

    /** For tests: a delivery whose wake-up is lost (stored, but the thread is not unparked). */
    void deliverWithoutWakeup(long ticket) {
        failure = null;
        DELIVERED.setRelease(this, ticket);
    }

    boolean isDelivered(long ticket) {
        return (long) DELIVERED.getAcquire(this) == ticket;
    }

    /** The failure delivered with {@code ticket}; read only after {@link #isDelivered} was true. */
    @Nullable RuntimeException failure() {
        return failure;
    }
}
