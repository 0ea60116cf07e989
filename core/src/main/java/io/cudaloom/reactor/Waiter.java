package io.cudaloom.reactor;

import io.cudaloom.protocol.WakeBoard;
import io.cudaloom.reactor.metrics.SlowAwaitEvent;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * A waiting thread's completion record, one per thread and reused by all its awaits, so an await
 * allocates nothing. A thread is in at most one await at a time, and an await does not return
 * before its registration is either delivered or withdrawn (see
 * {@link io.cudaloom.CompletionReactor#await}), so a record never has two registrations outstanding.
 *
 * <p>Hand-off ({@link io.cudaloom.protocol.SlotTable} ordering 9, "volatile write before unpark"):
 * {@link #complete} stores the failure (plain), then stores the delivered ticket with a
 * <em>volatile</em> write, then unparks; the waiter reads the ticket with a volatile load
 * ({@link #isDelivered}) before it reads the failure. The volatile write publishes the failure to
 * whoever reads the ticket; it must be volatile, not a release store, because {@code unpark} of a
 * virtual thread that already holds a permit performs only a volatile <em>read</em> of the permit
 * ({@code VirtualThread.getAndSetParkPermit}). A release store followed by that read may be
 * reordered (store-load, allowed even on x86); the waiter can then consume its stale permit, miss
 * the ticket and park again with nobody left to unpark it. A volatile store followed by a volatile
 * load is never reordered, so either the unparker sees the permit already consumed (and sets it
 * again, which wakes the second park), or the waiter's ticket load, which comes after its
 * permit-consuming read-modify-write, sees the ticket. Guarded by the jcstress
 * {@code WaiterHandoffTest} and its broken twin.
 *
 * <p>The ticket comparison is the ABA guard: a delivery for any other registration (an earlier
 * one of this thread that was abandoned) never satisfies the current one.
 */
final class Waiter implements Completion, WakeBoard.Sleeper {
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

    final Thread thread;
    private volatile long delivered = NONE;
    private @Nullable RuntimeException failure;
    /** See {@link #landedAt()}: read by the waiter after its volatile read of the ticket. */
    private long landedAt;
    /**
     * How this thread's current await was served: one of {@link SlowAwaitEvent}'s path constants
     * (compile-time constants: assigning one loads no JFR class), set by the wait code where it
     * decides ({@link BlockingWait#acquire}) and read by {@link BlockingWait} when it
     * commits the event. Written and read by this thread only (a record is never shared by two
     * threads' awaits), so plain.
     */
    String path = SlowAwaitEvent.PARKED;
    /**
     * When this thread wants the scanner to wake it ({@link PreWake}): a volatile store made before
     * the post's compare-and-set, read by the scanner after it read the cell (WakeBoard).
     */
    private volatile long wakeAt;

    Waiter() {
        this(Thread.currentThread());
    }

    /** A record for {@code thread}; the reactor uses {@link #current()}, the stress tests these. */
    Waiter(Thread thread) {
        this.thread = thread;
    }

    static Waiter current() {
        return CURRENT.get();
    }

    @Override
    public void complete(long ticket, @Nullable RuntimeException failure) {
        publish(ticket, failure);
        if (thread != Thread.currentThread()) {
            LockSupport.unpark(thread);
        }
        // else the waiter delivered itself (it saw its group's flag while spinning): it is not
        // parked, and reads the ticket it just stored; an unpark would only leave a stale permit
        // that ends its next timed park at once (BlockingWait's sleep through a predicted wait).
    }

    /**
     * The store half of {@link #complete}: failure, then the ticket with a volatile write, which
     * must come before the unpark (see the class comment).
     */
    void publish(long ticket, @Nullable RuntimeException failure) {
        this.failure = failure;
        this.landedAt = System.nanoTime(); // plain: published by the volatile store below
        delivered = ticket; // volatile: ordered before the unpark's read of the permit
    }

    /** When this registration's work was seen done (its delivery, or {@link #landed}); 0 if not yet. */
    long landedAt() {
        return landedAt;
    }

    /** The waiter itself saw its work done (its own flag, withdrawn before any delivery). */
    void landed() {
        landedAt = System.nanoTime();
    }

    /**
     * Forget the previous registration before a new one is published. Plain stores are enough:
     * the publish that follows (a volatile read-modify-write) orders them before any delivery, and
     * no unpark depends on them. Needed because tickets of different reactors can be equal.
     */
    void reset() {
        path = SlowAwaitEvent.PARKED;
        failure = null;
        landedAt = 0L;
        DELIVERED.set(this, NONE);
    }

    @Override
    public long wakeAtNanos() {
        return wakeAt;
    }

    /** Sets the time a {@link PreWake} post asks for; before the post (see the field). */
    void wakeAt(long nanos) {
        wakeAt = nanos;
    }

    boolean isDelivered(long ticket) {
        return delivered == ticket;
    }

    /** The failure delivered with {@code ticket}; read only after {@link #isDelivered} was true. */
    @Nullable RuntimeException failure() {
        return failure;
    }

    /** The tickets of registrations without a slot, counted up from {@link #NONE} (see {@link #syntheticTicket}). */
    private static final AtomicLong SYNTHETIC_TICKETS = new AtomicLong();

    /**
     * A ticket for a registration without a slot (a group's member, a fallback): never {@link
     * #NONE}, never a slot ticket (those are not negative), unique in the process.
     */
    static long syntheticTicket() {
        return NONE + SYNTHETIC_TICKETS.incrementAndGet();
    }
}
