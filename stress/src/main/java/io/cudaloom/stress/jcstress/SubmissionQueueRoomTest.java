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
 * The completion that frees room hands the drain on ({@link SubmissionQueue#drain}): a caller
 * {@link SubmissionQueue#append}s one operation while the sink has no room, so its drain stops at
 * it and leaves it queued; a completion frees room in the driver, then calls
 * {@link SubmissionQueue#drain}. The operation must be submitted, exactly once: either the
 * completion's drain submits it, or its increment of the drain counter lands while the caller is
 * still draining and the caller's next pass (which then sees the room) does. The sink records into
 * a {@link SubmissionLog}.
 *
 * <p>r1 = operations submitted; r2 = who submitted it (1 = the appending caller, 2 = the
 * completion's drain, 0 = nobody); r3 = 1 if a pass found no room before the submission, else 0;
 * r4 = overlapping submissions plus order violations.
 */
@JCStressTest
@Description("Submission queue: an operation queued for want of room is submitted once a completion frees room and drains.")
@Outcome(id = "1, 1, 0, 0", expect = ACCEPTABLE,
        desc = "Room already free when the caller drained: it submitted its own operation.")
@Outcome(id = "1, 2, 1, 0", expect = ACCEPTABLE,
        desc = "The caller found no room and left the operation queued; the completion's drain submitted it.")
@Outcome(id = "1, 1, 1, 0", expect = ACCEPTABLE_INTERESTING,
        desc = "The caller found no room, the completion's increment landed while it drained: its next pass saw the room and submitted.")
@Outcome(id = "1, 2, 0, 0", expect = ACCEPTABLE_INTERESTING,
        desc = "The completion's drain found the operation stored (its caller not yet draining) and submitted it.")
@Outcome(id = "0, .*", expect = FORBIDDEN,
        desc = "Never submitted: stranded when the caller's drain left as the completion freed room (lost wake-up).")
@Outcome(expect = FORBIDDEN, desc = "Anything else: submitted twice, overlapping, or out of order.")
@State
public class SubmissionQueueRoomTest {
    final SubmissionLog log = new SubmissionLog(8, false);
    final SubmissionQueue<Op> queue = new SubmissionQueue<>(8, new SubmissionQueue.Sink<>() {
        @Override
        public boolean hasRoom(Op op) {
            return log.hasRoom();
        }

        @Override
        public void submit(Op op, long position) {
            submitter = op.appender == Thread.currentThread() ? 1 : 2;
            log.submit(op, position);
        }
    });
    final Op a = new Op("A");
    volatile int submitter;

    @Actor
    public void caller() {
        queue.append(a.appendedByMe());
    }

    @Actor
    public void completion() {
        log.freeRoom();
        queue.drain();
    }

    @Arbiter
    public void arbiter(IIII_Result r) {
        r.r1 = log.submitted();
        r.r2 = submitter;
        r.r3 = log.noRoom() > 0 ? 1 : 0;
        r.r4 = log.overlaps() + log.orderViolations(a);
    }
}
