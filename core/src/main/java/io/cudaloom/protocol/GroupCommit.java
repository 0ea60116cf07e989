package io.cudaloom.protocol;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * Who arms the next shared flag write of one stream (group commit), with no CUDA in it: at most
 * {@code maxPending} writes are pending (armed, not yet delivered); beyond that, waiters gather in
 * one <em>open</em> group, which is armed as soon as there is room again. {@code G} is the group;
 * the caller's {@code startArming} predicate takes a group from open to arming exactly once (a
 * compare-and-set on the group), so two threads never arm the same group.
 *
 * <h2>Orderings, and where each is enforced</h2>
 * <ol>
 *   <li><b>Reservations are exact.</b> {@link #tryReserve} raises {@code pending} with a
 *       compare-and-set only while it is below {@code maxPending}; each reservation is returned
 *       once, by {@link #delivered} (its write was delivered) or by {@link #takeIfRoom} (it lost the
 *       group to another armer).
 *   <li><b>No open group is stranded</b> (a Dekker pair). A waiter installs the open group
 *       ({@link #installOpen}, a volatile compare-and-set) and then tries to reserve
 *       ({@link #takeIfRoom}: a volatile read of {@code pending}); a delivery first returns its
 *       reservation (a volatile decrement) and then reads the open group. In every interleaving
 *       at least one of them sees the other's write: the waiter sees room, or the delivery sees
 *       the group; whichever does arms it. A reservation returned in {@link #takeIfRoom} is
 *       followed by the same re-check, so it strands nothing either. Reading the open group
 *       before the decrement breaks this (the jcstress {@code GroupCommitTest} and its generated
 *       broken twin).
 * </ol>
 */
public final class GroupCommit<G> {
    private final int maxPending;
    private final AtomicInteger pending = new AtomicInteger();
    private final AtomicReference<@Nullable G> open = new AtomicReference<>();

    public GroupCommit(int maxPending) {
        if (maxPending < 1) {
            throw new IllegalArgumentException("maxPending must be >= 1, was " + maxPending);
        }
        this.maxPending = maxPending;
    }

    /** Reserves room for one write now; true if reserved (ordering 1). */
    public boolean tryReserve() {
        for (;;) {
            int p = pending.get();
            if (p >= maxPending) {
                return false;
            }
            if (pending.compareAndSet(p, p + 1)) {
                return true;
            }
        }
    }

    /** The open group, or null. */
    public @Nullable G open() {
        return open.get();
    }

    /** Installs {@code fresh} as the open group if the open group is still {@code expected}. */
    public boolean installOpen(@Nullable G expected, G fresh) {
        return open.compareAndSet(expected, fresh);
    }

    /**
     * Takes the open group for arming if there is room: returns it with a reservation held (the
     * caller arms it), or null (no open group, no room, or another thread is arming it). Call after
     * installing or joining an open group (ordering 2).
     */
    public @Nullable G takeIfRoom(Predicate<? super G> startArming) {
        for (;;) {
            G g = open.get();
            if (g == null || !tryReserve()) {
                return null;
            }
            if (startArming.test(g)) {
                open.compareAndSet(g, null);
                return g;
            }
            // Another thread is arming g (and clears it): give the reservation back, then look
            // again, since a group installed meanwhile may have seen no room because of it.
            pending.decrementAndGet();
            Thread.onSpinWait();
        }
    }

    /**
     * A pending write was delivered (or failed): returns its reservation, then takes the open
     * group for arming if there is one (ordering 2). Returns the group to arm (with a
     * reservation held), or null.
     */
    public @Nullable G delivered(Predicate<? super G> startArming) {
        pending.decrementAndGet(); // first: see ordering 2
        return takeIfRoom(startArming);
    }

    /** Writes pending now (for tests and stats). */
    public int pending() {
        return pending.get();
    }
}
