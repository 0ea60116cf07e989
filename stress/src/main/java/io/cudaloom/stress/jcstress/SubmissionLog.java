package io.cudaloom.stress.jcstress;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The driver side of a {@code SubmissionQueue} as the {@code SubmissionQueue} tests see it: what
 * the queue's sink ({@link io.cudaloom.protocol.SubmissionQueue.Sink}) forwards, recorded. The
 * tests' sinks call {@link #hasRoom} and {@link #submit} (a class of its own, not a sink, so that
 * the real queue and its generated broken twin, whose {@code Sink} is a different nested type,
 * record into the same model). It never blocks and has no race of its own: every field is atomic
 * or volatile, so a FORBIDDEN outcome of a test that uses it is the queue's.
 *
 * <p>Recorded: how many operations were submitted and which (by position), how many submissions
 * overlapped (a thread entered {@link #submit} while another was inside: two drainers at once),
 * how many arrived out of position order (a position other than the count submitted before it),
 * how many were submitted by a thread other than the one that appended them (combining: the
 * drainer submitted another caller's operation), and how many times the sink had no room.
 */
public final class SubmissionLog {
    /** An operation: its name and the thread that appended it (set before the append). */
    public static final class Op {
        final String name;
        volatile Thread appender;

        public Op(String name) {
            this.name = name;
        }

        /** Marks the calling thread as the appender; call just before appending the op. */
        public Op appendedByMe() {
            appender = Thread.currentThread();
            return this;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    private final AtomicReferenceArray<Op> byPosition;
    private final AtomicInteger submitted = new AtomicInteger();
    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger overlaps = new AtomicInteger();
    private final AtomicInteger outOfOrder = new AtomicInteger();
    private final AtomicInteger foreign = new AtomicInteger();
    private final AtomicInteger noRoom = new AtomicInteger();
    private volatile boolean room;

    /** A log for up to {@code positions} operations; the sink has room from the start if {@code room}. */
    public SubmissionLog(int positions, boolean room) {
        this.byPosition = new AtomicReferenceArray<>(positions);
        this.room = room;
    }

    /** The driver frees room (a completion): from now on {@link #hasRoom} answers true. */
    public void freeRoom() {
        room = true;
    }

    /** The sink's {@code hasRoom}: counts the answers "no room". */
    public boolean hasRoom() {
        boolean r = room;
        if (!r) {
            noRoom.incrementAndGet();
        }
        return r;
    }

    /** The sink's {@code submit}: records the operation, overlaps, order and the submitting thread. */
    public void submit(Op op, long position) {
        if (inside.incrementAndGet() != 1) {
            overlaps.incrementAndGet();
        }
        int before = submitted.getAndIncrement();
        if (position != before) {
            outOfOrder.incrementAndGet();
        }
        if (position >= 0 && position < byPosition.length() && !byPosition.compareAndSet((int) position, null, op)) {
            outOfOrder.incrementAndGet(); // a position submitted twice
        }
        if (op.appender != Thread.currentThread()) {
            foreign.incrementAndGet();
        }
        Thread.onSpinWait(); // a little time inside the driver call, for an overlap to show
        inside.decrementAndGet();
    }

    /** The number of operations submitted. */
    public int submitted() {
        return submitted.get();
    }

    /** Submissions that began while another was inside {@link #submit}. */
    public int overlaps() {
        return overlaps.get();
    }

    /**
     * Order violations: a submission whose position was not the count submitted before it, a
     * position submitted twice, or an operation submitted at a position other than its own
     * ({@code expected[p]} is the operation whose append returned {@code p}; null entries are not checked).
     */
    public int orderViolations(Op... expected) {
        int v = outOfOrder.get();
        for (int p = 0; p < expected.length && p < byPosition.length(); p++) {
            Op at = byPosition.get(p);
            if (at != null && expected[p] != null && at != expected[p]) {
                v++;
            }
        }
        return v;
    }

    /** Operations submitted by a thread other than the one that appended them. */
    public int foreign() {
        return foreign.get();
    }

    /** How many times the sink answered that it had no room. */
    public int noRoom() {
        return noRoom.get();
    }
}
