package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * {@link WaitGroupJoinTest} run on {@link BrokenWaitGroup.Group} (delivery reads the member stack and
 * installs the delivered sentinel in two steps): jcstress must report the FORBIDDEN "joined but
 * never delivered" outcome. Original documentation follows.
 *
 * <p>Coalescing ({@link Waiter.Group}): a waiter joining a group races the scanner delivering it. The
 * join must either land before the delivery's swap (and then be delivered, exactly once) or see
 * the delivered sentinel (and then the waiter treats the covered work as done). A join that
 * succeeds but is never delivered would leave the waiter parked forever.
 *
 * <p>r1 = join returned true (1) or saw the group delivered (0); r2 = deliveries the member got;
 * r3 = the failure the joiner would read after a refused join is the delivered one (1) or
 * not applicable (0).
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: coalescing: a join racing the group's delivery is delivered exactly once or refused.")
@Outcome(id = "1, 1, 0", expect = ACCEPTABLE, desc = "Joined before the delivery; delivered once.")
@Outcome(id = "0, 0, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "The delivery came first: the join was refused and the delivered outcome is visible.")
@Outcome(id = "1, 0, 0", expect = FORBIDDEN, desc = "Joined but never delivered: the waiter hangs.")
@Outcome(expect = FORBIDDEN, desc = "Anything else (a double delivery, an invisible outcome).")
@State
public class BrokenWaitGroupJoinTest {
    static final RuntimeException DONE_WITH_ERROR = new RuntimeException("delivered");

    final BrokenWaitGroup.Group group = new BrokenWaitGroup.Group(0L);
    final AtomicInteger deliveries = new AtomicInteger();
    final BrokenWaitGroup.Member member = new BrokenWaitGroup.Member(
            (long ticket, @Nullable RuntimeException failure) -> deliveries.incrementAndGet(), 1L);
    int joined;
    int sawOutcome;

    @Actor
    public void joiner() {
        if (group.join(member)) {
            joined = 1;
        } else {
            sawOutcome = group.deliveredFailure() == DONE_WITH_ERROR ? 1 : 0;
        }
    }

    @Actor
    public void scanner() {
        group.complete(0L, DONE_WITH_ERROR);
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r1 = joined;
        r.r2 = deliveries.get();
        r.r3 = sawOutcome;
    }
}
