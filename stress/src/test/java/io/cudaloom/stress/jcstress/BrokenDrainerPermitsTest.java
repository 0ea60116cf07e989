package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BrokenNoLookDrainerPermits;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * {@link io.cudaloom.stress.jcstress.DrainerPermitsTest} run on {@link BrokenNoLookDrainerPermits} (a
 * drain takes one pass over the listed lanes and gives its permit back without looking at the list
 * again), generated at build time from {@code stress/src/mutations/drainer-permits-no-look-after-release.patch}:
 * the same actors, state and outcome grading, only the class differs. jcstress must report FORBIDDEN
 * outcomes here ({@code BrokenVariantsCaughtTest} asserts it): the holder drains its stream, finds
 * the list empty, and before it gives the permit back the other actor lists its stream, finds the
 * permit taken and leaves; the holder then returns without looking again (r = -1 for that stream).
 * Every sequential order passes ({@code OutcomeSpecTest}): the bug needs that interleaving.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: drainer permits: a stream left to the permit's holder is drained by it.")
@Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "Both streams drained after their appends.")
@Outcome(id = {"-1, .*", ".*, -1"}, expect = FORBIDDEN,
        desc = "A stream left listed with nobody to drain it: its lister found the permit taken, the holder did not look again.")
@Outcome(expect = FORBIDDEN, desc = "A drain that did not see its stream's append (anything else).")
@State
public class BrokenDrainerPermitsTest {
    final BrokenNoLookDrainerPermits permits = new BrokenNoLookDrainerPermits(1);
    volatile int appendedA;
    volatile int appendedB;
    volatile int seenA = -1;
    volatile int seenB = -1;
    final BrokenNoLookDrainerPermits.Lane a = permits.lane(() -> seenA = appendedA);
    final BrokenNoLookDrainerPermits.Lane b = permits.lane(() -> seenB = appendedB);

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
