package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.DrainHandOff;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * The drain hand-off ({@link DrainHandOff}): one task is pending (a request made in the constructor
 * handed it to an executor that only captured it; it has not run). A requester makes a volatile
 * write the drain must see ({@code appended.set(1)}: an entry enqueued, a proof raised), then
 * {@link DrainHandOff#request request}s a drain from an executor that only records the task it is
 * given; meanwhile the executor's thread runs the pending task, whose drain records what it saw. No
 * request may be lost: either the request hands a new task over (whose drain, run later, would see
 * the write), or the pending task's drain sees the write (the request found the mark set, and the
 * task's clear, and so its drain, come after that read: DrainHandOff's ordering).
 *
 * <p>r1 = 1 if the request handed a new task over (the executor recorded one and {@code request}
 * returned true), 0 if not (neither), 2 or 3 if the two disagree; r2 = what the pending task's
 * drain saw of the write (1 = seen, 0 = not).
 */
@JCStressTest
@Description("Drain hand-off: a request that finds a task pending is drained by that task.")
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
public class DrainHandOffTest {
    final AtomicInteger appended = new AtomicInteger();
    volatile int seenByPendingDrain = -1;
    volatile Runnable pendingTask;
    volatile Runnable newTask;
    volatile boolean returned;
    final DrainHandOff handOff = new DrainHandOff(() -> seenByPendingDrain = appended.get());

    public DrainHandOffTest() {
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
