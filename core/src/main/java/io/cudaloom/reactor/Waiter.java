package io.cudaloom.reactor;

import io.cudaloom.protocol.WakeBoard;
import io.cudaloom.reactor.metrics.SlowAwaitEvent;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * The hand-offs of a delivery to the waiting threads, in one place: {@link Waiter} itself, a waiting
 * thread's completion record; {@link Group}, waiters that share one completion slot (coalescing);
 * {@link Member}, one waiter's membership of a group. The arming of a group's flag write
 * ({@link CoalescedWait}) and the payload that delivers it (the stream's,
 * {@link ReactorStream.GroupDelivery}) stay apart: they use the stream and the registrar, which name
 * these classes, so nested here they would put the reactor's parts in a cycle ({@code ClassCycleTest});
 * their orderings are {@link CoalescedWait}'s class comment.
 *
 * <p>The record: one per thread and reused by all its awaits, so an await allocates nothing. A
 * thread is in at most one await at a time, and an await does not return before its registration
 * is either delivered or withdrawn (see {@link BlockingWait#acquire}), so a record
 * never has two registrations outstanding.
 *
 * <h2>The hand-offs and their invariants</h2>
 * <ol>
 *   <li><b>The ticket: a delivery to the waiting thread</b> ({@link io.cudaloom.protocol.SlotTable}
 *       ordering 9, "volatile write before unpark"):
 *       {@link #complete} stores the failure (plain), then stores the delivered ticket with a
 *       <em>volatile</em> write, then unparks; the waiter reads the ticket with a volatile load
 *       ({@link #isDelivered}) before it reads the failure. The volatile write publishes the failure to
 *       whoever reads the ticket; it must be volatile, not a release store, because {@code unpark} of a
 *       virtual thread that already holds a permit performs only a volatile <em>read</em> of the permit
 *       ({@code VirtualThread.getAndSetParkPermit}). A release store followed by that read may be
 *       reordered (store-load, allowed even on x86); the waiter can then consume its stale permit, miss
 *       the ticket and park again with nobody left to unpark it. A volatile store followed by a volatile
 *       load is never reordered, so either the unparker sees the permit already consumed (and sets it
 *       again, which wakes the second park), or the waiter's ticket load, which comes after its
 *       permit-consuming read-modify-write, sees the ticket. Guarded by the jcstress
 *       {@code WaiterHandoffTest} and its broken twin.
 *       <p>The ticket comparison is the ABA guard: a delivery for any other registration (an earlier
 *       one of this thread that was abandoned) never satisfies the current one.
 *   <li><b>A join against the group's delivery</b>: members are pushed on a lock-free stack
 *       ({@link Group#join}); delivery ({@link Group#complete}) stores the failure, then swaps the
 *       stack for the {@link Group#SEALED} sentinel with a volatile get-and-set, so a join either
 *       lands before the swap (and is delivered) or sees the sentinel (and reads the failure,
 *       written before the swap). Guarded by the jcstress {@code WaitGroupJoinTest} and its broken
 *       twin.
 *   <li><b>A member, delivered or withdrawn once</b>: each member is delivered or withdrawn exactly
 *       once by a compare-and-set on its own state ({@link Member#deliver}, {@link Member#cancel});
 *       the delivered member's target is then woken by its own {@link Completion#complete} (a
 *       waiter's volatile ticket store, then its unpark: item 1).
 *   <li><b>Relayed wake-ups (a wake tree).</b>
 *       Waking a parked thread costs its waker one or more microseconds (a virtual thread's unpark is a
 *       submission to its scheduler, often a futex wake of an idle carrier); one scanner waking every
 *       member of every group in turn is a serial bottleneck under load (at 10 us kernels on 8 streams,
 *       some 370,000 wake-ups a second on one thread). With relaying ({@link io.cudaloom.ReactorConfig#relayWakeups()},
 *       the default) the deliverer wakes at most two members itself and hands each a contiguous part of
 *       the remaining list ({@link Member#relayFrom}); a woken member wakes the heads of its part the same
 *       way before its await returns ({@link Group#relayOf}), so a group of {@code n} is woken in about
 *       {@code log2(n)} rounds spread over the woken threads' carriers. Orderings:
 *       <ol>
 *         <li><b>A member learns its part before it can wake.</b> The deliverer writes the part
 *             (plain fields) before the member's delivering compare-and-set and the waiter's volatile
 *             ticket store (SlotTable ordering 9); the waiter reads the part only after its volatile
 *             read of that ticket, so it sees it.
 *         <li><b>No part is dropped.</b> A member's state goes from waiting to delivered or withdrawn
 *             exactly once. If the deliverer's compare-and-set wins, the member's thread returns from
 *             its park only through the delivered path (a timed-out or interrupted waiter whose
 *             withdrawal fails waits for the delivery), which relays the part; if the withdrawal won,
 *             the deliverer's {@link Member#deliver} returns false and the deliverer relays that part
 *             itself.
 *       </ol>
 *       {@link Member#count}, the length of the list from a member to its end, is written before the
 *       compare-and-set that publishes the member, so the deliverer, reading after its swap, can split
 *       any part without walking it twice. Guarded by the jcstress {@code WaitGroupRelayTest} and its
 *       broken twin.
 *   <li><b>The settle, handed to the group's founder.</b> What a landed shared write changes of its
 *       stream beyond the proof (the room's drain, the group commit's reservation, the next group's
 *       arming: {@link ReactorStream.GroupDelivery#run}) is not the deliverer's: the deliverer (the
 *       scanner) hands it to the group's founder, the member that armed the group or installed it
 *       open ({@link Group#deliver}), whose own thread runs it once it sees its delivery, before its
 *       await returns ({@link Group#afterDelivery}); the scanner only scans, raises the proof and
 *       wakes. The founder is the bottom of the group's stack (it joined in the group's
 *       constructor, before the group was published), so it is in no relayed part. Orderings:
 *       <ol>
 *         <li><b>The founder learns the settle before it can wake</b>, as a relay part (item 4,
 *             ordering 1): the deliverer writes {@link Member#settle} (plain) before the founder's
 *             delivering compare-and-set and the waiter's volatile ticket store; the founder reads it
 *             only after its volatile read of that ticket.
 *         <li><b>The settle runs exactly once.</b> The founder's state goes from waiting to delivered
 *             or withdrawn once: if the deliverer's compare-and-set wins, the founder's thread returns
 *             from its park only through the delivered path ({@link BlockingWait#acquire}), which
 *             runs the settle; if the withdrawal won, {@link Group#deliver} returns false and the
 *             deliverer runs it itself, as it does for a group without a founder.
 *       </ol>
 *       Guarded by the jcstress {@code GroupSettleTest} and its generated broken twin (a settle handed
 *       to a founder that withdrew is dropped: the stream's next group is never armed, its room
 *       never drained).
 * </ol>
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
     * must come before the unpark (see the class comment, item 1).
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

    /**
     * Runs a completion, reporting anything it throws (e.g. a caller's executor that rejects the
     * callback; a user's callback itself never throws this far: it is contained, logged and
     * counted where it runs, {@link CallbackRegistrations#callbackThrew}) to the current thread's
     * uncaught-exception handler instead of letting it escape:
     * completions run on the scanner, which serves every waiter, on the closing thread, which must
     * go on waking the others, and on a stream's host-callback thread, where an escaping exception
     * would be taken for a fault of the stream.
     */
    static void deliverGuarded(Completion c, long ticket, @Nullable RuntimeException failure) {
        try {
            c.complete(ticket, failure);
        } catch (Throwable t) {
            reportUncaught(t);
        }
    }

    /** Hands {@code t} to the current thread's uncaught-exception handler (it escapes no further). */
    static void reportUncaught(Throwable t) {
        Thread.currentThread().getUncaughtExceptionHandler().uncaughtException(Thread.currentThread(), t);
    }

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
     * <p>Its hand-offs (a join against the delivery, the relayed wake-ups) and their invariants: the
     * class comment of {@link Waiter}, items 2 to 4.
     */
    static final class Group implements Completion {
        private static final VarHandle HEAD;
        /**
         * The head of a delivered group's stack: joins fail from then on. A marker of this lock-free
         * stack only, compared by identity; never a member anyone waits on (no target, never delivered
         * or withdrawn), and not to be confused with {@link Registration#DELIVERED}.
         */
        private static final Member SEALED = new Member(null, 0L);

        static {
            try {
                HEAD = MethodHandles.lookup().findVarHandle(Group.class, "head", Member.class);
                COVERED = MethodHandles.lookup().findVarHandle(Group.class, "covered", long.class);
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

        /** Whether woken members relay the wake-ups of the rest ({@link Waiter}'s class comment, item 4). */
        private final boolean relay;
        /**
         * The member that founded the group, the bottom of its stack, handed the delivery's settle
         * ({@link #deliver}; {@link Waiter}'s class comment, item 5); null for a group founded
         * without one.
         */
        private final @Nullable Member founder;

        Group(long covered) {
            this(covered, false);
        }

        Group(long covered, boolean relay) {
            this(covered, relay, null);
        }

        /**
         * A group of {@code founder} (if not null), which joins it here, before the group is published
         * (a volatile write: the arming's {@link ReactorStream#lastGroup}, the open group's
         * compare-and-set), so it is the bottom of the stack and in no relayed part.
         */
        Group(long covered, boolean relay, @Nullable Member founder) {
            this.covered = covered;
            this.relay = relay;
            this.founder = founder;
            if (founder != null) {
                founder.next = null;
                founder.count = 1;
                this.head = founder;
            }
        }

        /** A group armed later, by whoever finds room for its flag write ({@link CoalescedWait}), founded by {@code founder}. */
        static Group open(boolean relay, Member founder) {
            return new Group(OPEN, relay, founder);
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
            deliver(failure, null); // no settle: the founder is delivered as any member
        }

        /**
         * Delivers every member, as {@link #complete} does, and hands {@code settle} to the founder
         * ({@link Waiter}'s class comment, item 5): the founder first, with {@code settle} written
         * before its delivering compare-and-set, then the rest. Returns true if the founder took it
         * (its thread runs it, {@link #afterDelivery}); false if there is no founder or it withdrew:
         * the caller runs {@code settle} itself. With {@code settle} null ({@link #complete}), the
         * founder is delivered as any member.
         */
        boolean deliver(@Nullable RuntimeException failure, @Nullable Runnable settle) {
            this.failure = failure; // before the swap: a join that sees SEALED reads it
            Member list = (Member) HEAD.getAndSet(this, SEALED);
            Member f = settle == null ? null : founder; // null: the founder is in the list's delivery
            boolean handed = false;
            if (f != null) {
                f.settle = settle; // item 5, ordering 1: before deliver's CAS and the waiter's volatile ticket store
                handed = f.deliver(failure); // ordering 2: false if withdrawn, and then nobody else runs it
            }
            if (relay) {
                deliverPart(list, f, failure); // [list, founder): the founder is the stack's bottom
            } else {
                for (Member m = list; m != f; m = m.next) {
                    m.deliver(failure);
                }
            }
            return handed;
        }

        /** Members from {@code from} up to (not including) {@code to}; {@code to} null means the end. */
        private static int length(@Nullable Member from, @Nullable Member to) {
            return (from == null ? 0 : from.count) - (to == null ? 0 : to.count);
        }

        /**
         * Delivers the members of {@code [from, to)}: up to two directly, each of them also handed
         * half of the rest to wake once it runs ({@link Waiter}'s class comment, item 4). A member
         * that withdrew cannot relay: its part is delivered here.
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
            head.relayFrom = from; // relay ordering 1: before deliver's CAS and the waiter's volatile ticket store
            head.relayTo = to;
            head.relayFailure = failure;
            if (!head.deliver(failure)) {
                deliverPart(from, to, failure); // relay ordering 2: withdrawn, so nobody else will
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
         * Called by a member's own thread once its delivery was seen (after the volatile ticket read),
         * before its await returns: wakes the part of its group it was handed ({@link #relayOf}), then,
         * if it founded the group and was handed the delivery's settle, runs it ({@link Waiter}'s
         * class comment, item 5). A settle that throws is reported to this thread's
         * uncaught-exception handler, not to the await, whose work is done.
         */
        static void afterDelivery(Registration registration) {
            relayOf(registration);
            if (registration instanceof Member m && m.settle != null) {
                Runnable settle = m.settle;
                m.settle = null; // run once
                try {
                    settle.run();
                } catch (Throwable t) {
                    reportUncaught(t);
                }
            }
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
        /**
         * The part of the group this member wakes once woken ([relayFrom, relayTo)); see {@link Waiter}'s
         * class comment, item 4.
         */
        @Nullable Member relayFrom;
        @Nullable Member relayTo;
        @Nullable RuntimeException relayFailure;
        /**
         * The delivery's settle, handed to the group's founder ({@link Group#deliver}; {@link Waiter}'s
         * class comment, item 5): written before the delivering compare-and-set, read after the ticket.
         */
        @Nullable Runnable settle;
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
