package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.SubmissionRoom;
import io.cudaloom.stress.jcstress.SubmissionLog.Op;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * The room returned by a completion ({@link SubmissionRoom#proofRaised}): a stream with room for one
 * entry has one in flight (submitted in the constructor, not yet proven complete); a caller appends a
 * second, whose drain finds no room and stops (calling the driver's {@code stalled()}); meanwhile the
 * completion of the first raises the proof to 1 and drains if anything is queued. The second entry
 * must be submitted, exactly once, in position order: either the caller's room check sees the raised
 * proof, or the completion's read of the queue sees the append and drains (SubmissionRoom's ordering
 * of the hand-over). The sink records into a {@link SubmissionLog}.
 *
 * <p>r1 = entries submitted (the first included); r2 = who submitted the second (1 = its caller, 2 =
 * the completion, 0 = nobody); r3 = 1 if a drain found no room, else 0; r4 = overlapping submissions
 * plus order violations.
 */
@JCStressTest
@Description("Submission room: an entry that found no room is submitted once the completion that frees room raises the proof.")
@Outcome(id = "2, 1, 0, 0", expect = ACCEPTABLE,
        desc = "The proof was raised before the caller's room check: it submitted its own entry.")
@Outcome(id = "2, 2, 1, 0", expect = ACCEPTABLE,
        desc = "The caller found no room and left the entry queued; the completion saw it queued and drained it.")
@Outcome(id = "2, 1, 1, 0", expect = ACCEPTABLE_INTERESTING,
        desc = "The caller found no room; the completion's drain request came while it drained: its next pass saw the room.")
@Outcome(id = "2, 2, 0, 0", expect = ACCEPTABLE_INTERESTING,
        desc = "The completion drained the entry stored before the caller's own drain began.")
@Outcome(id = "1, .*", expect = FORBIDDEN,
        desc = "Never submitted: stranded when the caller found no room and the completion found nothing queued.")
@Outcome(expect = FORBIDDEN, desc = "Anything else: submitted twice, overlapping, or out of order.")
@State
public class SubmissionRoomTest {
    final SubmissionLog log = new SubmissionLog(8, true);
    final AtomicLong proven = new AtomicLong();
    final AtomicInteger stalls = new AtomicInteger();
    volatile int submitter;
    final Op first = new Op("first");
    final Op second = new Op("second");
    final SubmissionRoom<Op> room = new SubmissionRoom<>(8, 1, 1, proven::get, new SubmissionRoom.Driver<>() {
        @Override
        public boolean isWork(Op op) {
            return true;
        }

        @Override
        public void submit(Op op, long position) {
            if (op == second) {
                submitter = op.appender == Thread.currentThread() ? 1 : 2;
            }
            log.submit(op, position);
        }

        @Override
        public boolean discarding() {
            return false;
        }

        @Override
        public void stalled() {
            stalls.incrementAndGet();
        }
    });

    public SubmissionRoomTest() {
        room.queue().append(first.appendedByMe()); // in flight: drained 1, proven 0, the room is full
        first.appender = null;
    }

    @Actor
    public void caller() {
        room.queue().append(second.appendedByMe());
    }

    @Actor
    public void completion() {
        room.proofRaised(this::raise, 1, room.queue()::drain);
    }

    private void raise(long count) {
        long seen;
        while ((seen = proven.get()) < count) {
            if (proven.compareAndSet(seen, count)) {
                return;
            }
        }
    }

    @Arbiter
    public void arbiter(IIII_Result r) {
        r.r1 = log.submitted();
        r.r2 = submitter;
        r.r3 = stalls.get() > 0 ? 1 : 0;
        r.r4 = log.overlaps() + log.orderViolations(first, second);
    }
}
