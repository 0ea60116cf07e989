package io.cudaloom.protocol;

import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;

/**
 * Submission by combining, for one stream: callers {@link #append} an operation and go on; one
 * thread at a time drains the queue into the driver, in append order, for as long as the stream has
 * room there. Nobody waits to submit: the thread that finds the queue not being drained becomes its
 * drainer and submits everything queued (its own operation and the ones other callers appended
 * meanwhile); the others leave at once. A drain that stops for want of room is taken up again by
 * {@link #drain} from whoever frees room (a completion). This is flat combining (Hendler et al.,
 * SPAA 2010) in the shape of io_uring's submission queue: the caller's cost is one increment, one
 * store and one increment of the drain counter.
 *
 * <h2>Positions</h2>
 * Every operation gets a position, the value of {@link #tail} its {@code getAndIncrement} took
 * (XADD), and is stored in the ring at that position. Positions are the stream's one order: the
 * drainer submits position {@code h} only after every position before it, so
 * <ul>
 *   <li>{@link #appended()} read by a caller after its append is at least its own operation's
 *       position plus one: a requirement that covers everything the caller appended;
 *   <li>an operation submitted at position {@code h} is behind every operation of a lower position
 *       in the stream: a flag write drained at {@code h} proves, when it lands, that the first
 *       {@code h} positions are complete.
 * </ul>
 *
 * <h2>Orderings</h2>
 * <ol>
 *   <li><b>Append</b>: XADD on {@link #tail} claims the position; the operation is stored with a
 *       release store into its slot; then the caller calls {@link #drain}. The store happens-before
 *       the caller's increment of {@link #wip}.
 *   <li><b>Drain</b> ({@link #drain}): a thread whose increment of {@link #wip} took it from 0
 *       becomes the drainer; every other increment only records that there is more to do. The
 *       drainer reads each slot in position order with an acquire load; an empty slot (a caller
 *       between its XADD and its store) ends the pass, as does a stream without room. Then it
 *       subtracts the increments it has seen ({@code missed}); if others came meanwhile the
 *       result is not 0 and it drains again. So an append (or a freeing of room) whose increment
 *       comes after the drainer's last subtraction found {@code wip} at 0 and drains itself, and
 *       one whose increment comes before it is seen by the drainer's next pass, whose acquire loads
 *       follow that increment in {@link #wip}'s modification order and so see the store before
 *       it: <em>no operation is stranded</em> when the drainer leaves as another appends (the
 *       classic lost wake-up of combining; the jcstress {@code SubmissionQueueTest} checks it, and
 *       its broken twin, which reads {@code wip} and then leaves, is caught).
 *   <li><b>Exclusion</b>: only the thread whose increment took {@link #wip} from 0 drains, until
 *       its subtraction brings it back to 0: at most one thread submits for the stream at a time
 *       (so at most one thread of the stream is in the driver), and {@link #head} has one writer.
 *   <li><b>The ring's bound</b>: a slot is cleared (plain store) before {@link #head} passes it
 *       (volatile store); a caller whose position is a whole ring ahead of {@link #head} waits
 *       until the drainer has passed its slot ({@link #awaitSlot}: it parks, after publishing
 *       itself in {@link #full}; the drainer unparks every such caller after each pass that moved
 *       {@code head}; each side writes its volatile, then reads the other's, so one sees the other).
 *       This is the only place an append waits: a producer that submits without ever awaiting
 *       {@code capacity} operations ahead of the driver.
 * </ol>
 *
 * @param <T> the operation type
 */
public final class SubmissionQueue<T> {
    /** What the drainer does with the queue's operations: its room in the driver and the submission. */
    public interface Sink<T> {
        /**
         * Whether the stream has room in the driver for {@code op} now (called by the drainer, for
         * each operation, before submitting it); false ends the pass, and the operation waits in the
         * queue until {@link SubmissionQueue#drain} is called again.
         */
        boolean hasRoom(T op);

        /**
         * Submits {@code op}, the operation at {@code position} (called by the drainer, one at a time,
         * in position order). Must not throw: a driver error is the operation's outcome, reported
         * through the stream's fault.
         */
        void submit(T op, long position);
    }

    private final AtomicReferenceArray<T> ring;
    private final int mask;
    private final Sink<T> sink;
    /** The next position to claim: the number of operations appended (or being appended). */
    private final AtomicLong tail = new AtomicLong();
    /** The next position to drain: the number drained. Written only by the drainer. */
    private volatile long head;
    /** Drain requests not yet seen by a drainer; the thread that takes it from 0 drains. */
    private final AtomicInteger wip = new AtomicInteger();
    /** Callers waiting for their slot (the ring is full): unparked after every pass that moved {@link #head}. */
    private final ConcurrentLinkedQueue<Thread> full = new ConcurrentLinkedQueue<>();

    /**
     * A queue of {@code capacity} slots (rounded up to a power of two) draining into {@code sink}.
     *
     * @throws IllegalArgumentException if {@code capacity} is below 2 or above 2^30
     */
    public SubmissionQueue(int capacity, Sink<T> sink) {
        if (capacity < 2 || capacity > 1 << 30) {
            throw new IllegalArgumentException("capacity must be between 2 and 2^30, was " + capacity);
        }
        int size = Integer.highestOneBit(capacity - 1) << 1;
        this.ring = new AtomicReferenceArray<>(size);
        this.mask = size - 1;
        this.sink = Objects.requireNonNull(sink, "sink");
    }

    /**
     * Appends {@code op} and returns its position; the calling thread drains the queue if nobody
     * else does (ordering 2), else it leaves at once. Waits only while the ring is full (ordering 4).
     */
    public long append(T op) {
        Objects.requireNonNull(op, "op");
        long p = tail.getAndIncrement();
        if (p - head >= ring.length()) {
            awaitSlot(p);
        }
        ring.setRelease((int) p & mask, op);
        drain();
        return p;
    }

    /**
     * Drains the queue if no other thread is draining it, else records that there is more to do
     * for the drainer (ordering 2). Called after an append, and by whoever frees room in the driver.
     */
    public void drain() {
        if (wip.getAndIncrement() != 0) {
            return;
        }
        int missed = 1;
        while (true) {
            long h = head;
            long start = h;
            while (true) {
                int slot = (int) h & mask;
                T op = ring.getAcquire(slot);
                if (op == null || !sink.hasRoom(op)) {
                    break; // a caller between its claim and its store, or no room: a later drain() goes on
                }
                ring.setPlain(slot, null);
                head = h + 1; // volatile: publishes the cleared slot to callers waiting for it
                sink.submit(op, h);
                h++;
            }
            if (h != start && !full.isEmpty()) {
                wakeFull();
            }
            missed = wip.addAndGet(-missed);
            if (missed == 0) {
                return;
            }
        }
    }

    /** Waits (parks) until the drainer has passed the slot of position {@code p} (ordering 4). */
    private void awaitSlot(long p) {
        Thread me = Thread.currentThread();
        full.add(me);
        try {
            boolean interrupted = false;
            while (p - head >= ring.length()) {
                LockSupport.park(this);
                interrupted |= Thread.interrupted();
            }
            if (interrupted) {
                me.interrupt();
            }
        } finally {
            full.remove(me);
        }
    }

    private void wakeFull() {
        for (Thread t : full) {
            LockSupport.unpark(t);
        }
    }

    /**
     * Appends {@code op} and returns its position, without draining: for a thread that must not
     * make driver calls (a host callback, the stream's own worker), which then has {@link #drain}
     * called by a thread that may. Ordering 1 as for {@link #append}: the store happens-before
     * whatever that thread's {@code drain()} increments, so the operation is not stranded.
     */
    public long enqueue(T op) {
        Objects.requireNonNull(op, "op");
        long p = tail.getAndIncrement();
        if (p - head >= ring.length()) {
            awaitSlot(p);
        }
        ring.setRelease((int) p & mask, op);
        return p;
    }

    /** The number of operations appended or being appended: a requirement that covers every one appended before this read. */
    public long appended() {
        return tail.get();
    }

    /** The number of operations drained (submitted): a proof's upper bound. */
    public long drained() {
        return head;
    }

    /** Operations appended and not yet drained (a snapshot). */
    public long queued() {
        return Math.max(0, tail.get() - head);
    }

    /** The ring's size: how far appends may run ahead of the drainer before one waits. */
    public int capacity() {
        return ring.length();
    }

    @Override
    public String toString() {
        return "SubmissionQueue[appended " + tail.get() + ", drained " + head + ", capacity " + ring.length() + "]";
    }
}
