package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * Claim / recycle with three threads: two claimers and a dedicated scanner that retires and
 * recycles slot 0 (slot 1 free at the start). Runs only where jcstress can schedule 3 actors
 * (3+ CPUs); the 2-CPU CI runs {@link ClaimRecycleTest}.
 *
 * <p>r1, r2 = the claimers' slots (-1 = pool exhausted); r3 = slots the arbiter can still claim
 * (+100 if one of them was owned already, +200 if the free list is not empty after the drain).
 */
@JCStressTest
@Description("Claim/recycle, 3 threads: two claimers and a recycling scanner never hand one slot to two owners.")
@Outcome(id = {"1, -1, 1", "-1, 1, 1"}, expect = ACCEPTABLE,
        desc = "One claimer took slot 1, the other found the pool empty; slot 0 recycled afterwards.")
@Outcome(id = {"1, 0, 0", "0, 1, 0"}, expect = ACCEPTABLE_INTERESTING,
        desc = "Both claimed: one took slot 1, the other the recycled slot 0.")
@Outcome(expect = FORBIDDEN, desc = "A slot owned twice, lost, or a claim failing while a slot was free.")
@State
public class ClaimRecycleThreeActorTest extends TwoSlotsOneRetiring {

    @Actor
    public void claimer1(III_Result r) {
        r.r1 = claimSlot();
    }

    @Actor
    public void claimer2(III_Result r) {
        r.r2 = claimSlot();
    }

    @Actor
    public void scanner() {
        scanAndRecycle();
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r3 = drain(r.r1, r.r2);
    }
}
