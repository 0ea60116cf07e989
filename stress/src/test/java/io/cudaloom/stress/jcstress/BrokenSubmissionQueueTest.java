package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BrokenLeavingSubmissionQueue;
import io.cudaloom.stress.jcstress.SubmissionLog.Op;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * {@link SubmissionQueueTest} run on {@link BrokenLeavingSubmissionQueue} (its drain reads the
 * counter and then leaves in a second step: {@code if (wip.get() == missed) { wip.set(0); return; }}
 * instead of one subtraction), generated at build time from
 * {@code stress/src/mutations/submission-queue-leaves-in-two-steps.patch}: the same actors, state
 * and outcome grading, only the queue class differs. jcstress must report FORBIDDEN outcomes here
 * ({@code BrokenVariantsCaughtTest} asserts it): the drainer's pass reads the other caller's slot
 * empty, the other stores its operation and increments the counter between the drainer's get and
 * its set, so it finds the counter not 0 and leaves, the set erases its increment and the drainer
 * leaves too: the operation is never submitted (r1 = 1). Every sequential order passes
 * ({@code OutcomeSpecTest}): the bug needs that interleaving.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: submission queue: two appends to a fresh queue are both submitted, one thread at a time, in position order.")
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
public class BrokenSubmissionQueueTest {
    final SubmissionLog log = new SubmissionLog(8, true);
    final BrokenLeavingSubmissionQueue<Op> queue = new BrokenLeavingSubmissionQueue<>(8, new BrokenLeavingSubmissionQueue.Sink<>() {
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
