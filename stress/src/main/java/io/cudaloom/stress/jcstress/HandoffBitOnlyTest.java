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
 * Payload hand-off with the device write on the scanner's side (the work finished long ago and
 * the flag is already 1 whenever the scanner looks): the bit alone must carry the payload.
 * Isolates ordering 1 (payload before bit) from the flag's own release/acquire.
 */
@JCStressTest
@Description("Payload hand-off, flag already written when the scanner looks: a scanner that sees "
        + "the active bit must see the payload and its contents; delivered exactly once.")
@Outcome(id = "1, 7, 1, 0, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "The racing scan saw the bit and delivered the published payload.")
@Outcome(id = "0, -1, 1, 0, 1", expect = ACCEPTABLE,
        desc = "The racing scan ran before the bit was set; the final scan delivered it.")
@Outcome(id = "1, 0, .*", expect = FORBIDDEN,
        desc = "Stale payload contents behind a visible bit (ordering 1 broken).")
@Outcome(id = "1, -2, .*", expect = FORBIDDEN,
        desc = "Bit visible but payload store not (ordering 1 broken).")
@Outcome(expect = FORBIDDEN,
        desc = "Lost or double delivery, wrong ticket, count not back to 0, or slot not recycled.")
@State
public class HandoffBitOnlyTest extends OneSlot {

    @Actor
    public void registrant() {
        publish();
    }

    @Actor
    public void deviceThenScanner(IIIII_Result r) {
        deviceWritesFlag();
        racingScan(r);
    }

    @Arbiter
    public void arbiter(IIIII_Result r) {
        finalScan(r);
    }
}
