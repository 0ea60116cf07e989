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
import org.openjdk.jcstress.infra.results.I_Result;

/**
 * The device-wide cap on drainers ({@link DrainerPermits}), two callers of one stream, one permit:
 * each appends (a volatile write its stream's drain must see), then asks for the stream's drain. A
 * caller whose compare-and-set finds the stream still listed adds nothing and, finding the permit
 * taken, leaves; the holder clears the stream's flag before it runs the stream's drain
 * (DrainerPermits' class comment), so that drain follows the caller's append, or the caller's
 * compare-and-set follows the clear and lists the stream again. The stream's last drain must see
 * both appends.
 *
 * <p>r1: how many appends the stream's last drain saw (2 = both).
 */
@JCStressTest
@Description("Drainer permits: a caller that finds its stream still listed has its append drained.")
@Outcome(id = "2", expect = ACCEPTABLE, desc = "The stream's last drain saw both appends.")
@Outcome(expect = FORBIDDEN, desc = "An append left undrained: its caller found the stream listed, and the holder cleared the flag after the drain.")
@State
public class DrainerPermitsRelistTest {
    final DrainerPermits permits = new DrainerPermits(1);
    volatile int appendedX;
    volatile int appendedY;
    volatile int seen = -1;
    final DrainerPermits.Lane stream = permits.lane(() -> seen = appendedX + appendedY);

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
