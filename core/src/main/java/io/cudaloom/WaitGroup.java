package io.cudaloom;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;

/**
 * Waiters that share one completion slot (opt-in, {@link ReactorConfig.Builder#coalesce}): every
 * waiter on a stream that needs no work submitted after this group's flag write joins the group
 * instead of arming a slot and enqueueing a write of its own. 100,000 threads waiting behind one
 * kernel on 8 streams then cost 8 slots and 8 device writes, not 100,000.
 *
 * <p>Correctness rests on the stream's submission count ({@link GpuStream#submissionCount()}): a
 * group covers every submission counted before its flag write was enqueued ({@link #covered}); a
 * waiter that needs the submissions counted up to {@code required} may join only if
 * {@code covered >= required}. A submission is counted after its driver call returned, so anything
 * counted when the group read the count was already in the stream ahead of the group's write.
 *
 * <p>Hand-off: members are pushed on a lock-free stack ({@link #join}); delivery
 * ({@link #complete}) stores the failure, then swaps the stack for the {@link #DELIVERED}
 * sentinel with a volatile get-and-set, so a join either lands before the swap (and is delivered)
 * or sees the sentinel (and reads the failure, written before the swap). Each member is
 * delivered or withdrawn exactly once by a compare-and-set on its own state.
 */
final class WaitGroup implements Completion {
    private static final VarHandle HEAD;
    private static final Member DELIVERED = new Member(null, 0L);

    static {
        try {
            HEAD = MethodHandles.lookup().findVarHandle(WaitGroup.class, "head", Member.class);
            COVERED = MethodHandles.lookup().findVarHandle(WaitGroup.class, "covered", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** {@link #covered} of a group not yet armed: any waiter may join it (see {@link CoalescedWait}). */
    static final long OPEN = -1L;
    /** {@link #covered} while a thread arms the group: it takes no new members, its count is not yet known. */
    static final long ARMING = -2L;
    private static final VarHandle COVERED;

    /**
     * Submissions of the group's stream counted before this group's flag write was enqueued; or
     * {@link #OPEN} / {@link #ARMING} before that. Volatile: a waiter that reads a count here reads
     * it after the arming thread wrote it, before the group's write was enqueued.
     */
    private volatile long covered;
    @SuppressWarnings("unused") // through HEAD
    private volatile @Nullable Member head;
    private volatile @Nullable RuntimeException failure;

    WaitGroup(long covered) {
        this.covered = covered;
    }

    /** A group armed later, by whoever finds room for its flag write ({@link CoalescedWait}). */
    static WaitGroup open() {
        return new WaitGroup(OPEN);
    }

    /** Whether a waiter needing the first {@code required} submissions may join: armed and covering them. */
    boolean covers(long required) {
        return covered >= required; // OPEN and ARMING are negative, required never is
    }

    /** The count the group's write covers, once armed (negative before). */
    long coveredCount() {
        return covered;
    }

    boolean isOpen() {
        return covered == OPEN;
    }

    /** Takes the group from {@link #OPEN} to {@link #ARMING}; true for the one caller that will arm it. */
    boolean startArming() {
        return COVERED.compareAndSet(this, OPEN, ARMING);
    }

    /** The arming thread read the count {@code count} (after {@link #startArming}, before the enqueue). */
    void armedAt(long count) {
        covered = count;
    }

    /**
     * Adds {@code m}; false if the group was already delivered (then {@link #deliveredFailure()}
     * says how: null means the covered work is done).
     */
    boolean join(Member m) {
        for (;;) {
            Member h = (Member) HEAD.getVolatile(this);
            if (h == DELIVERED) {
                return false;
            }
            m.next = h;
            if (HEAD.compareAndSet(this, h, m)) {
                return true;
            }
        }
    }

    @Nullable RuntimeException deliveredFailure() {
        return failure;
    }

    /**
     * Delivers every member. Each member's target is woken by its own {@link Completion#complete}
     * (a waiter's volatile ticket store, then its unpark: SlotTable ordering 9).
     */
    @Override
    public void complete(long ticket, @Nullable RuntimeException failure) {
        this.failure = failure; // before the swap: a join that sees DELIVERED reads it
        for (Member m = (Member) HEAD.getAndSet(this, DELIVERED); m != null; m = m.next) {
            m.deliver(failure);
        }
    }

    /** One waiter's membership: its own ticket, delivered or withdrawn once. */
    static final class Member implements Withdrawable {
        private static final VarHandle STATE;

        static {
            try {
                STATE = MethodHandles.lookup().findVarHandle(Member.class, "state", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final @Nullable Completion target;
        final long ticket;
        @Nullable Member next; // written before the publishing CAS in join; read after the swap
        @SuppressWarnings("unused") // through STATE: 0 waiting, 1 delivered, 2 withdrawn
        private volatile int state;

        Member(@Nullable Completion target, long ticket) {
            this.target = target;
            this.ticket = ticket;
        }

        /** Delivers unless withdrawn; true if this call delivered. */
        boolean deliver(@Nullable RuntimeException failure) {
            if (target != null && STATE.compareAndSet(this, 0, 1)) {
                target.complete(ticket, failure);
                return true;
            }
            return false;
        }

        @Override
        public boolean withdraw(Waiter waiter) {
            return STATE.compareAndSet(this, 0, 2);
        }
    }
}
