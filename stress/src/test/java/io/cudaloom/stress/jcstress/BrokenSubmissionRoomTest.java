package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BrokenEarlyReadSubmissionRoom;
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
 * {@link SubmissionRoomTest} run on {@link BrokenEarlyReadSubmissionRoom} (its {@code proofRaised}
 * reads the queue before it raises the proof), generated at build time from
 * {@code stress/src/mutations/room-reads-queue-before-raise.patch}: the same actors, state and
 * outcome grading, only the room class differs. jcstress must report FORBIDDEN outcomes here
 * ({@code BrokenVariantsCaughtTest} asserts it): the completion reads the queue empty, the caller
 * appends and finds no room (the proof not yet raised) and leaves, the completion raises the proof
 * and, having seen nothing queued, does not drain: the second entry is never submitted (r1 = 1).
 * Every sequential order passes ({@code OutcomeSpecTest}): the bug needs that interleaving.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: submission room: an entry that found no room is submitted once the completion that frees room raises the proof.")
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
public class BrokenSubmissionRoomTest {
    final SubmissionLog log = new SubmissionLog(8, true);
    final AtomicLong proven = new AtomicLong();
    final AtomicInteger stalls = new AtomicInteger();
    volatile int submitter;
    final Op first = new Op("first");
    final Op second = new Op("second");
    final BrokenEarlyReadSubmissionRoom<Op> room = new BrokenEarlyReadSubmissionRoom<>(8, 1, 1, proven::get,
            new BrokenEarlyReadSubmissionRoom.Driver<>() {
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

    public BrokenSubmissionRoomTest() {
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
