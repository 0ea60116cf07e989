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
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * Take or leave ({@link BatchFormation}, its ordering 3): a request r has arrived
 * ({@link BatchFormation#arrive}, in the state's set-up) while the formation's one lane is busy
 * (one batch in flight, and r's {@code maxDelay} far off), so it waits. Then the lane comes free:
 * its batch is done, the lane is marked free and {@link BatchFormation#drain} runs, and the
 * dispatcher closes a batch with r (nothing is in flight); at the same time r's caller gives up,
 * {@link BatchFormation.Request#leave}. Exactly one side wins: r is launched and its leave returns
 * false, or its leave returns true and it is never launched; {@link BatchFormation#waiting} is
 * decremented by the winner only, back to 0. The lanes record into a {@link BatchLaunchLog}.
 *
 * <p>r arrives before the actors run, not in the lane's actor: a caller leaves only a request it
 * made arrive (GpuBatcher leaves after its {@code arrive} returned, on the same thread). A leave
 * that came first would find no formation to count it in, and the later arrival would leave
 * {@code waiting()} at 1 for good; that is outside the contract, not a race of the protocol.
 *
 * <p>r1 = launches of r; r2 = 1 if its leave returned true, else 0; r3 = {@code waiting()} at the
 * end; r4 = batches the dispatcher decided to close (it was given the free lane) and launched
 * nothing, plus malformed batches and overlapping launches.
 *
 * <p>Its broken twin, {@code BrokenBatchLeaveTest} (test sources), runs these actors on a copy of
 * the formation whose {@code Request.take()} checks the state, then sets it (two steps, not one
 * compare-and-set); jcstress must report FORBIDDEN outcomes there. {@link BatchFormationTest}
 * checks the drain.
 */
@JCStressTest
@Description("Batch formation: a waiting request is either taken into a batch or leaves, never both, never neither.")
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
public class BatchLeaveTest {
    static final int MAX_BATCH = 8;

    final BatchFormation.Request r = new BatchFormation.Request(0) {};
    final BatchLaunchLog log = new BatchLaunchLog(MAX_BATCH, true, r);
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
    }, MAX_BATCH, 1_000_000_000L, () -> 0L);
    volatile int left;

    public BatchLeaveTest() {
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
