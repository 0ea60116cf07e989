package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BrokenClearAfterDrainDrainerPermits;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.I_Result;

/**
 * {@link io.cudaloom.stress.jcstress.DrainerPermitsRelistTest} run on {@link BrokenClearAfterDrainDrainerPermits} (the
 * holder clears a lane's flag after running its drain), generated at build time from
 * {@code stress/src/mutations/drainer-permits-clear-after-drain.patch}: the same actors, state and outcome grading,
 * only the class differs. jcstress must report FORBIDDEN outcomes here ({@code BrokenVariantsCaughtTest} asserts it):
 * one caller's drain has read the appends, the other appends, finds the stream still listed and leaves, then the holder
 * clears the flag and finds the list empty (r1 = 1). Every sequential order passes ({@code OutcomeSpecTest}).
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: drainer permits: a caller that finds its stream still listed has its append drained.")
@Outcome(id = "2", expect = ACCEPTABLE, desc = "The stream's last drain saw both appends.")
@Outcome(expect = FORBIDDEN, desc = "An append left undrained: its caller found the stream listed, and the holder cleared the flag after the drain.")
@State
public class BrokenDrainerPermitsRelistTest {
    final BrokenClearAfterDrainDrainerPermits permits = new BrokenClearAfterDrainDrainerPermits(1);
    volatile int appendedX;
    volatile int appendedY;
    volatile int seen = -1;
    final BrokenClearAfterDrainDrainerPermits.Lane stream = permits.lane(() -> seen = appendedX + appendedY);

    @Actor
    public void callerX() {
        appendedX = 1;
        stream.drain();
    }

    @Actor
    public void callerY() {
        appendedY = 1;
        stream.drain();
    }

    @Arbiter
    public void arbiter(I_Result r) {
        r.r1 = seen;
    }
}
