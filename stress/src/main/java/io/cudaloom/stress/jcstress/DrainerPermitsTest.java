package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.DrainerPermits;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * The device-wide cap on drainers ({@link DrainerPermits}), with one permit and two streams: each
 * actor appends to its own stream (a volatile write its drain must see) and asks for its stream's
 * drain. When one finds the permit taken by the other, it leaves its stream to the holder, whose look
 * at the list after giving the permit back (DrainerPermits' ordering) must find it: every stream's
 * last drain sees its append. A lane's drain records what it saw of its stream's append (1 = seen,
 * 0 = drained without seeing it, -1 = never drained).
 *
 * <p>r1, r2: what the last drain of stream A, of stream B, saw.
 */
@JCStressTest
@Description("Drainer permits: a stream left to the permit's holder is drained by it.")
@Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "Both streams drained after their appends.")
@Outcome(id = {"-1, .*", ".*, -1"}, expect = FORBIDDEN,
        desc = "A stream left listed with nobody to drain it: its lister found the permit taken, the holder did not look again.")
@Outcome(expect = FORBIDDEN, desc = "A drain that did not see its stream's append (anything else).")
@State
public class DrainerPermitsTest {
    final DrainerPermits permits = new DrainerPermits(1);
    volatile int appendedA;
    volatile int appendedB;
    volatile int seenA = -1;
    volatile int seenB = -1;
    final DrainerPermits.Lane a = permits.lane(() -> seenA = appendedA);
    final DrainerPermits.Lane b = permits.lane(() -> seenB = appendedB);

    @Actor
    public void streamA() {
        appendedA = 1;
        a.drain();
    }

    @Actor
    public void streamB() {
        appendedB = 1;
        b.drain();
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = seenA;
        r.r2 = seenB;
    }
}
