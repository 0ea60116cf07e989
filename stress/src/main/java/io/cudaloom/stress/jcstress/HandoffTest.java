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
import org.openjdk.jcstress.infra.results.IIIII_Result;

/**
 * Payload hand-off, the common order: the registrant publishes, then its work finishes and the
 * device writes the flag; the scanner races both.
 *
 * <p>What it can detect where: the forbidden outcomes here (stale or missing payload behind a
 * visible bit or flag) need a store-store or load-load reordering. x86 (TSO) never reorders those
 * in hardware, so on x86 a release/acquire weakened to opaque or plain is caught only when the JIT
 * itself reorders the accesses (jcstress's C2 stress configurations try); on ARM or POWER the
 * hardware reorders too. That is why the broken variants kept in the test sources are
 * interleaving bugs, which x86 shows reliably. A lost or double delivery is an interleaving
 * outcome and is caught anywhere.
 */
@JCStressTest
@Description("Payload hand-off (registrant: publish then device flag write; scanner races both): "
        + "the payload is delivered exactly once, with the published value, and the slot is recycled.")
@Outcome(id = "1, 7, 1, 0, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "The racing scan saw bit and flag and delivered the published payload.")
@Outcome(id = "0, -1, 1, 0, 1", expect = ACCEPTABLE,
        desc = "The racing scan saw no bit, or the flag still 0; the final scan delivered it.")
@Outcome(id = "1, 0, .*", expect = FORBIDDEN,
        desc = "Stale payload: the scanner read the payload without the registrant's writes (ordering 1).")
@Outcome(id = "1, -2, .*", expect = FORBIDDEN,
        desc = "Retired without its payload: the payload store was not visible behind the bit.")
@Outcome(expect = FORBIDDEN,
        desc = "Lost or double delivery, wrong ticket, count not back to 0, or slot not recycled.")
@State
public class HandoffTest extends OneSlot {

    @Actor
    public void registrantThenDevice() {
        publish();
        deviceWritesFlag();
    }

    @Actor
    public void scanner(IIIII_Result r) {
        racingScan(r);
    }

    @Arbiter
    public void arbiter(IIIII_Result r) {
        finalScan(r);
    }
}
