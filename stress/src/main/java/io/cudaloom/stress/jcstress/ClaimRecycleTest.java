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
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * Claim / recycle on two CPUs: two claimers and the recycling scanner, where the second claimer is
 * also the scanner (the consumer role may be played by any one thread). Slot 0 is retiring, slot 1
 * free. Actor 1 claims once; actor 2 claims, runs a scan pass (retiring slot 0 and pushing it back
 * on the free list), and claims again. The free list (a stamped Treiber stack, ordering 7) must
 * never hand one slot to two owners nor lose one. The 3-thread form is
 * {@link ClaimRecycleThreeActorTest} (machines with 3+ CPUs).
 *
 * <p>r1 = actor 1's slot, r2 = actor 2's first slot, r3 = actor 2's slot after the recycle
 * (-1 = pool exhausted); r4 = slots the arbiter can still claim (+100 if one of them was owned
 * already, +200 if the free list is not empty after the drain).
 */
@JCStressTest
@Description("Claim/recycle: two claimers and the recycling scanner never hand one slot to two owners.")
@Outcome(id = "1, -1, 0, 0", expect = ACCEPTABLE, desc = "Actor 1 took slot 1 first; actor 2 got the recycled slot 0.")
@Outcome(id = "-1, 1, 0, 0", expect = ACCEPTABLE,
        desc = "Actor 2 took slot 1; actor 1 found the pool empty (before the recycle).")
@Outcome(id = "0, 1, -1, 0", expect = ACCEPTABLE_INTERESTING,
        desc = "Actor 2 took slot 1; actor 1 took the recycled slot 0 before actor 2's second claim.")
@Outcome(expect = FORBIDDEN, desc = "A slot owned twice, lost, or a claim failing while a slot was free.")
@State
public class ClaimRecycleTest extends TwoSlotsOneRetiring {

    @Actor
    public void claimer(IIII_Result r) {
        r.r1 = claimSlot();
    }

    @Actor
    public void claimerAndScanner(IIII_Result r) {
        r.r2 = claimSlot();
        scanAndRecycle();
        r.r3 = claimSlot();
    }

    @Arbiter
    public void arbiter(IIII_Result r) {
        r.r4 = drain(r.r1, r.r2, r.r3);
    }
}
