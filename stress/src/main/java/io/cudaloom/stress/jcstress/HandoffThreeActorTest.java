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
 * Payload hand-off with three actors: registrant, device and scanner all race. jcstress schedules
 * a test only when the machine has at least as many CPUs as actors, so this one runs on machines
 * with 3 or more CPUs (the GPU host) and is skipped by the 2-CPU CI, which runs the two 2-actor
 * decompositions {@link HandoffTest} and {@link HandoffBitOnlyTest} instead.
 */
@JCStressTest
@Description("Payload hand-off, registrant / device / scanner on three threads: delivered exactly "
        + "once with the published value; slot recycled, count back to 0.")
@Outcome(id = "1, 7, 1, 0, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "The racing scan saw bit and flag and delivered the published payload.")
@Outcome(id = "0, -1, 1, 0, 1", expect = ACCEPTABLE,
        desc = "The racing scan missed the bit or the flag; the final scan delivered it.")
@Outcome(expect = FORBIDDEN,
        desc = "Stale or missing payload, lost or double delivery, wrong ticket, count or free list wrong.")
@State
public class HandoffThreeActorTest extends OneSlot {

    @Actor
    public void registrant() {
        publish();
    }

    @Actor
    public void device() {
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
