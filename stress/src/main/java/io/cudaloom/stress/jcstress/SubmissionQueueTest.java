package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.SubmissionQueue;
import io.cudaloom.stress.jcstress.SubmissionLog.Op;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * Submission by combining ({@link SubmissionQueue}): two callers each {@link SubmissionQueue#append}
 * one operation (A and B) to a fresh queue whose sink always has room. Whoever's increment of the
 * drain counter takes it from 0 drains; the other leaves at once if a drain is in progress. No
 * operation may be stranded when the drainer leaves as the other appends (the classic lost wake-up
 * of combining: the drainer's pass found the other's slot empty, and the other's increment came
 * while the drainer was leaving), at most one thread may be inside the sink's submit at a time, and
 * the operations must reach it in position order, each at the position its append returned. The
 * sink records into a {@link SubmissionLog}.
 *
 * <p>r1 = operations submitted; r2 = submissions that overlapped another; r3 = order violations
 * (a position out of sequence, or an operation at a position not its own); r4 = operations
 * submitted by the other caller's thread (combining observed).
 *
 * <p>Its broken twin, {@code BrokenSubmissionQueueTest} (test sources), runs these actors on a
 * copy of the queue whose drain reads the counter and then leaves in a second step (a get, then a
 * set to 0, instead of one subtraction); jcstress must report FORBIDDEN outcomes there.
 * {@link SubmissionQueueRoomTest} checks the other wake-up, a completion that frees room.
 */
@JCStressTest
@Description("Submission queue: two appends to a fresh queue are both submitted, one thread at a time, in position order.")
@Outcome(id = "2, 0, 0, 0", expect = ACCEPTABLE,
        desc = "Both submitted, in position order, one at a time; each by the thread that appended it.")
@Outcome(id = "2, 0, 0, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "Combined: one drainer submitted the other's operation too (the other appended while it drained, and left at once).")
@Outcome(id = "[01], .*", expect = FORBIDDEN,
        desc = "An operation never submitted: stranded when the drainer left as the other appended (lost wake-up).")
@Outcome(id = "\\d+, [1-9]\\d*, .*", expect = FORBIDDEN, desc = "Two threads inside the sink's submit at once.")
@Outcome(id = "\\d+, 0, [1-9]\\d*, .*", expect = FORBIDDEN,
        desc = "Out of position order, or an operation submitted at a position not its own.")
@Outcome(expect = FORBIDDEN, desc = "Anything else: an operation submitted twice, or each by the other's thread.")
@State
public class SubmissionQueueTest {
    final SubmissionLog log = new SubmissionLog(8, true);
    final SubmissionQueue<Op> queue = new SubmissionQueue<>(8, new SubmissionQueue.Sink<>() {
        @Override
        public boolean hasRoom(Op op) {
            return log.hasRoom();
        }

        @Override
        public void submit(Op op, long position) {
            log.submit(op, position);
        }
    });
    final Op a = new Op("A");
    final Op b = new Op("B");
    long posA;
    long posB;

    @Actor
    public void callerA() {
        posA = queue.append(a.appendedByMe());
    }

    @Actor
    public void callerB() {
        posB = queue.append(b.appendedByMe());
    }

    @Arbiter
    public void arbiter(IIII_Result r) {
        Op[] expected = new Op[2];
        if (posA >= 0 && posA < 2) {
            expected[(int) posA] = a;
        }
        if (posB >= 0 && posB < 2) {
            expected[(int) posB] = b;
        }
        r.r1 = log.submitted();
        r.r2 = log.overlaps();
        r.r3 = log.orderViolations(expected) + (posA == posB ? 1 : 0);
        r.r4 = log.foreign();
    }
}
