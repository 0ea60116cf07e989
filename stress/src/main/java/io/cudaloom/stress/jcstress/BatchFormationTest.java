package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BatchFormation;
import java.util.List;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIIII_Result;

/**
 * Batch formation's drain ({@link BatchFormation}, its ordering 2): two callers each
 * {@link BatchFormation#arrive} with one request (r1, r2) on a formation of one lane that is always
 * free, nothing in flight, so every dispatch closes a batch at once. Whoever's increment of the wip
 * counter takes it from 0 dispatches; the other leaves at once if a dispatch is in progress. Both
 * requests must be launched, each exactly once: none stranded when the dispatcher goes idle as the
 * other arrives (its pass found the queue empty, and the other's increment came while it was
 * leaving), none in two batches; one dispatcher at a time; and {@link BatchFormation#waiting} back
 * to 0. The lanes record into a {@link BatchLaunchLog} (a launch leaves the lane free: the batch is
 * done at once).
 *
 * <p>r1 = launches of r1; r2 = launches of r2; r3 = batches; r4 = requests launched by the other
 * caller's thread (combining observed); r5 = violations: overlapping launches (two dispatchers at
 * once), malformed batches, plus 1 if {@code waiting()} is not 0 at the end.
 *
 * <p>Its take-or-leave counterpart is {@link BatchLeaveTest}.
 */
@JCStressTest
@Description("Batch formation: two requests arriving at once are each launched exactly once, by one dispatcher at a time.")
@Outcome(id = "1, 1, 2, 0, 0", expect = ACCEPTABLE,
        desc = "Each caller dispatched its own request in a batch of its own.")
@Outcome(id = "1, 1, 1, 1, 0", expect = ACCEPTABLE_INTERESTING,
        desc = "Combined in one batch: the dispatcher found the other's request queued and took it with its own.")
@Outcome(id = "1, 1, 2, 1, 0", expect = ACCEPTABLE_INTERESTING,
        desc = "Two batches by one dispatcher: the other arrived while it dispatched, left at once, and its increment sent the dispatcher round again.")
@Outcome(id = {"0, .*", "\\d+, 0, .*"}, expect = FORBIDDEN,
        desc = "A request never launched: stranded when the dispatcher went idle as the other arrived (lost wake-up).")
@Outcome(id = "1, 1, \\d+, \\d+, [1-9]\\d*", expect = FORBIDDEN,
        desc = "Two dispatchers launching at once, a malformed batch, or waiting() not back to 0.")
@Outcome(expect = FORBIDDEN, desc = "Anything else: a request launched twice (in two batches).")
@State
public class BatchFormationTest {
    static final int MAX_BATCH = 8;

    final BatchFormation.Request r1 = new BatchFormation.Request(0) {};
    final BatchFormation.Request r2 = new BatchFormation.Request(0) {};
    final BatchLaunchLog log = new BatchLaunchLog(MAX_BATCH, false, r1, r2);
    final BatchFormation<BatchFormation.Request> formation = new BatchFormation<>(new BatchFormation.Lanes<>() {
        @Override
        public int freeLane() {
            return log.freeLane();
        }

        @Override
        public int inFlight() {
            return log.inFlight();
        }

        @Override
        public void launch(int lane, List<BatchFormation.Request> batch) {
            log.launch(lane, batch);
        }
    }, MAX_BATCH, 1_000_000L, () -> 0L);

    @Actor
    public void caller1() {
        formation.arrive(log.arrivingByMe(r1));
    }

    @Actor
    public void caller2() {
        formation.arrive(log.arrivingByMe(r2));
    }

    @Arbiter
    public void arbiter(IIIII_Result r) {
        r.r1 = log.launched(r1);
        r.r2 = log.launched(r2);
        r.r3 = log.batches();
        r.r4 = log.foreign();
        r.r5 = log.overlaps() + log.malformed() + (formation.waiting() != 0 ? 1 : 0);
    }
}
