package io.cudaloom.reactor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;

/**
 * Waiters that share one completion slot (opt-in, {@link io.cudaloom.ReactorConfig.Builder#coalesce}): every
 * waiter on a stream that needs no work submitted after this group's flag write joins the group
 * instead of arming a slot and enqueueing a write of its own. 100,000 threads waiting behind one
 * kernel on 8 streams then cost 8 slots and 8 device writes, not 100,000.
 *
 * <p>Correctness rests on the stream's submission count ({@link io.cudaloom.GpuStream#submissionCount()}): a
 * group covers every submission counted before its flag write was enqueued ({@link #covered}); a
 * waiter that needs the submissions counted up to {@code required} may join only if
 * {@code covered >= required}. A submission is counted after its driver call returned, so anything
 * counted when the group read the count was already in the stream ahead of the group's write.
 *
 * <p>Hand-off: members are pushed on a lock-free stack ({@link #join}); delivery
 * ({@link #complete}) stores the failure, then swaps the stack for the {@link #SEALED}
 * sentinel with a volatile get-and-set, so a join either lands before the swap (and is delivered)
 * or sees the sentinel (and reads the failure, written before the swap). Each member is
 * delivered or withdrawn exactly once by a compare-and-set on its own state.
 *
 * <h2>Relayed wake-ups (a wake tree)</h2>
 * Waking a parked thread costs its waker one or more microseconds (a virtual thread's unpark is a
 * submission to its scheduler, often a futex wake of an idle carrier); one scanner waking every
 * member of every group in turn is a serial bottleneck under load (at 10 us kernels on 8 streams,
 * some 370,000 wake-ups a second on one thread). With relaying ({@link io.cudaloom.ReactorConfig#relayWakeups()},
 * the default) the deliverer wakes at most two members itself and hands each a contiguous part of
 * the remaining list ({@link Member#relay}); a woken member wakes the heads of its part the same
 * way before its await returns ({@link #relayOf}), so a group of {@code n} is woken in about
 * {@code log2(n)} rounds spread over the woken threads' carriers. Orderings:
 * <ol>
 *   <li><b>A member learns its part before it can wake.</b> The deliverer writes the part
 *       (plain fields) before the member's delivering compare-and-set and the waiter's volatile
 *       ticket store (SlotTable ordering 9); the waiter reads the part only after its volatile
 *       read of that ticket, so it sees it.
 *   <li><b>No part is dropped.</b> A member's state goes from waiting to delivered or withdrawn
 *       exactly once. If the deliverer's compare-and-set wins, the member's thread returns from
 *       its park only through the delivered path (a timed-out or interrupted waiter whose
 *       withdrawal fails waits for the delivery), which relays the part; if the withdrawal won,
 *       the deliverer's {@link Member#deliver} returns false and the deliverer relays that part
 *       itself.
 * </ol>
 * {@link Member#count}, the length of the list from a member to its end, is written before the
 * compare-and-set that publishes the member, so the deliverer, reading after its swap, can split
 * any part without walking it twice.
 */
final class WaitGroup implements Completion {
    private static final VarHandle HEAD;
    /**
     * The head of a delivered group's stack: joins fail from then on. A marker of this lock-free
     * stack only, compared by identity; never a member anyone waits on (no target, never delivered
     * or withdrawn), and not to be confused with {@link Registration#DELIVERED}.
     */
    private static final Member SEALED = new Member(null, 0L);

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

    /** Whether woken members relay the wake-ups of the rest (class comment). */
    private final boolean relay;

    WaitGroup(long covered) {
        this(covered, false);
    }

    WaitGroup(long covered, boolean relay) {
        this.covered = covered;
        this.relay = relay;
    }

    /** A group armed later, by whoever finds room for its flag write ({@link CoalescedWait}). */
    static WaitGroup open(boolean relay) {
        return new WaitGroup(OPEN, relay);
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
            if (h == SEALED) {
                return false;
            }
            m.next = h;
            m.count = h == null ? 1 : h.count + 1; // before the publishing CAS (relay ordering)
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
        this.failure = failure; // before the swap: a join that sees SEALED reads it
        Member list = (Member) HEAD.getAndSet(this, SEALED);
        if (relay) {
            deliverPart(list, null, failure);
        } else {
            for (Member m = list; m != null; m = m.next) {
                m.deliver(failure);
            }
        }
    }

    /** Members from {@code from} up to (not including) {@code to}; {@code to} null means the end. */
    private static int length(@Nullable Member from, @Nullable Member to) {
        return (from == null ? 0 : from.count) - (to == null ? 0 : to.count);
    }

    /**
     * Delivers the members of {@code [from, to)}: up to two directly, each of them also handed
     * half of the rest to wake once it runs (class comment). A member that withdrew cannot relay:
     * its part is delivered here.
     */
    static void deliverPart(@Nullable Member from, @Nullable Member to, @Nullable RuntimeException failure) {
        int n = length(from, to);
        if (n <= 0) {
            return;
        }
        if (n <= 2) {
            for (Member m = from; m != to; m = m.next) {
                m.deliver(failure);
            }
            return;
        }
        // from relays [from.next, second); second relays [second.next, to).
        Member first = from;
        int firstPart = (n - 2) / 2;
        Member second = first.next;
        for (int i = 0; i < firstPart; i++) {
            second = second.next;
        }
        handOff(first, first.next, second, failure);
        handOff(second, second.next, to, failure);
    }

    private static void handOff(Member head, @Nullable Member from, @Nullable Member to,
            @Nullable RuntimeException failure) {
        head.relayFrom = from; // ordering 1: before deliver's CAS and the waiter's volatile ticket store
        head.relayTo = to;
        head.relayFailure = failure;
        if (!head.deliver(failure)) {
            deliverPart(from, to, failure); // ordering 2: withdrawn, so nobody else will
        }
    }

    /**
     * Called by a member's own thread once its delivery was seen (after the volatile ticket read):
     * wakes the part of its group it was handed, if any.
     */
    static void relayOf(Registration registration) {
        if (registration instanceof Member m && m.relayFrom != null) {
            Member from = m.relayFrom;
            m.relayFrom = null; // a membership is delivered once; clear for the collector's sake
            deliverPart(from, m.relayTo, m.relayFailure);
        }
    }

    /**
     * One waiter's membership: its own ticket, delivered or withdrawn once (the waiter's
     * {@link Registration}: {@link #cancel} withdraws it).
     */
    static final class Member implements Registration {
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
        /** Members from this one to the end of its group's list (written with {@link #next}). */
        int count;
        /** The part of the group this member wakes once woken ([relayFrom, relayTo)); see the class comment. */
        @Nullable Member relayFrom;
        @Nullable Member relayTo;
        @Nullable RuntimeException relayFailure;
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

        /** Withdraws the membership: true if it was still waiting (it will never be delivered now). */
        @Override
        public boolean cancel() {
            return STATE.compareAndSet(this, 0, 2);
        }
    }
}
