package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BrokenCheckThenTakeBatchFormation;
import java.util.List;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * {@link BatchLeaveTest} run on {@link BrokenCheckThenTakeBatchFormation} (its
 * {@code Request.take()} checks the state, then sets it: {@code if (state.get() == WAITING)
 * { state.set(TAKEN); return true; }} instead of one compare-and-set), generated at build time from
 * {@code stress/src/mutations/batch-formation-check-then-take.patch}: the same actors, state and
 * outcome grading, only the formation class differs. jcstress must report FORBIDDEN outcomes here
 * ({@code BrokenVariantsCaughtTest} asserts it): the dispatcher reads r waiting, the caller's
 * {@code leave()} takes it from waiting to left (and returns true), and the dispatcher's set then
 * marks it taken and launches it: r both left and was launched (r1 = 1, r2 = 1), and
 * {@code waiting()} was decremented twice (-1). Every sequential order passes
 * ({@code OutcomeSpecTest}): the bug needs that interleaving.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: batch formation: a waiting request is either taken into a batch or leaves, never both, never neither.")
@Outcome(id = "1, 0, 0, 0", expect = ACCEPTABLE,
        desc = "Taken: the dispatcher's compare-and-set came first; launched once, the leave returned false.")
@Outcome(id = "0, 1, 0, 0", expect = ACCEPTABLE,
        desc = "Left before the dispatcher looked at it: never launched, the leave returned true.")
@Outcome(id = "0, 1, 0, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "The dispatcher saw it waiting and closed a batch, but the leave won the compare-and-set: nothing launched.")
@Outcome(id = "1, 1, .*", expect = FORBIDDEN, desc = "Both: it left (leave() true) and was launched too.")
@Outcome(id = "0, 0, .*", expect = FORBIDDEN, desc = "Neither: never launched and the leave failed (stranded).")
@Outcome(id = "[01], [01], -?[1-9]\\d*, .*", expect = FORBIDDEN, desc = "waiting() not back to 0.")
@Outcome(expect = FORBIDDEN, desc = "Anything else: launched twice, a malformed batch, two dispatchers at once.")
@State
public class BrokenBatchLeaveTest {
    static final int MAX_BATCH = 8;

    final BrokenCheckThenTakeBatchFormation.Request r = new BrokenCheckThenTakeBatchFormation.Request(0) {};
    final BatchLaunchLog log = new BatchLaunchLog(MAX_BATCH, true, r);
    final BrokenCheckThenTakeBatchFormation<BrokenCheckThenTakeBatchFormation.Request> formation =
            new BrokenCheckThenTakeBatchFormation<>(new BrokenCheckThenTakeBatchFormation.Lanes<>() {
                @Override
                public int freeLane() {
                    return log.freeLane();
                }

                @Override
                public int inFlight() {
                    return log.inFlight();
                }

                @Override
                public void launch(int lane, List<BrokenCheckThenTakeBatchFormation.Request> batch) {
                    log.launch(lane, batch);
                }
            }, MAX_BATCH, 1_000_000_000L, () -> 0L);
    volatile int left;

    public BrokenBatchLeaveTest() {
        formation.arrive(r); // the lane is busy: r waits
    }

    @Actor
    public void laneComesFree() {
        log.freeTheLane();
        formation.drain();
    }

    @Actor
    public void callerLeaves() {
        left = r.leave() ? 1 : 0;
    }

    @Arbiter
    public void arbiter(IIII_Result res) {
        res.r1 = log.launched(r);
        res.r2 = left;
        res.r3 = formation.waiting();
        res.r4 = log.grants() - log.batches() + log.malformed() + log.overlaps();
    }
}
