package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BrokenClearsAfterDrainHandOff;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * {@link DrainHandOffTest} run on {@link BrokenClearsAfterDrainHandOff} (its {@code run()} drains,
 * then clears the pending mark), generated at build time from
 * {@code stress/src/mutations/handoff-clears-after-drain.patch}: the same actors, state and outcome
 * grading, only the hand-off class differs. jcstress must report FORBIDDEN outcomes here
 * ({@code BrokenVariantsCaughtTest} asserts it): the pending task's drain reads the write not yet
 * made, the requester writes and finds the mark still set and hands nothing over, then the task
 * clears the mark: the request is lost (r1 = 0, r2 = 0). Every sequential order passes
 * ({@code OutcomeSpecTest}): the bug needs that interleaving.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: drain hand-off: a request that finds a task pending is drained by that task.")
@Outcome(id = "0, 1", expect = ACCEPTABLE,
        desc = "The request found the task pending and handed nothing over; the pending task's drain saw its write.")
@Outcome(id = "1, 0", expect = ACCEPTABLE,
        desc = "The pending task ran (cleared, drained) before the request, which then handed a new task over.")
@Outcome(id = "1, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "The request came after the pending task's clear and before its drain: a new task handed over, and the pending drain saw the write too.")
@Outcome(id = "0, 0", expect = FORBIDDEN,
        desc = "Lost request: nothing handed over, and the pending task's drain did not see the write.")
@Outcome(expect = FORBIDDEN, desc = "Anything else.")
@State
public class BrokenDrainHandOffTest {
    final AtomicInteger appended = new AtomicInteger();
    volatile int seenByPendingDrain = -1;
    volatile Runnable pendingTask;
    volatile Runnable newTask;
    volatile boolean returned;
    final BrokenClearsAfterDrainHandOff handOff = new BrokenClearsAfterDrainHandOff(() -> seenByPendingDrain = appended.get());

    public BrokenDrainHandOffTest() {
        if (!handOff.request(task -> pendingTask = task) || pendingTask == null) {
            throw new IllegalStateException("the set-up's request handed no task over");
        }
    }

    @Actor
    public void requester() {
        appended.set(1);
        returned = handOff.request(task -> newTask = task);
    }

    @Actor
    public void runner() {
        pendingTask.run();
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = newTask != null ? (returned ? 1 : 2) : (returned ? 3 : 0);
        r.r2 = seenByPendingDrain;
    }
}
