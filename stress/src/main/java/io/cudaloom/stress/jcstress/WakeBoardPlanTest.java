package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.WakeBoard;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * Pre-wakes ({@link WakeBoard}, the Dekker pair of its class comment): the consumer (the scanner)
 * plans a timed park until 1,000 while a sleeper posts a request to be woken at 100. Either the
 * consumer's read of the board sees the request (its park is cut to it) or the sleeper's read of
 * the plan sees the plan (the sleeper's caller unparks the consumer), or both. Neither would let
 * the consumer sleep 900 past the request with nobody to wake it: the sleeper is then woken by its
 * own, later, timer.
 *
 * <p>r1 = the consumer's park was cut to the request (1) or not (0); r2 = the post told its caller
 * to wake the consumer (1) or not (0).
 */
@JCStressTest
@Description("Pre-wake: a request posted while the scanner plans a timed park is never slept past.")
@Outcome(id = "1, 0", expect = ACCEPTABLE, desc = "Posted first: the planned park is cut to the request.")
@Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "Planned first: the post wakes the consumer.")
@Outcome(id = "1, 1", expect = ACCEPTABLE_INTERESTING, desc = "Both saw each other: one spurious wake-up.")
@Outcome(id = "0, 0", expect = FORBIDDEN, desc = "Neither saw the other: the consumer sleeps past the request.")
@State
public class WakeBoardPlanTest {
    static final long NOW = 0L;
    static final long PLANNED_PARK = 1_000L;
    static final long REQUEST_AT = 100L;

    static final class Sleeper implements WakeBoard.Sleeper {
        @Override
        public long wakeAtNanos() {
            return REQUEST_AT;
        }
    }

    final WakeBoard<Sleeper> board = new WakeBoard<>(2);
    final Sleeper sleeper = new Sleeper();
    int cut;
    int wake;

    @Actor
    public void consumer() {
        cut = board.planPark(NOW, PLANNED_PARK) <= REQUEST_AT - NOW ? 1 : 0;
    }

    @Actor
    public void sleeper() {
        int r = board.post(sleeper, 0L);
        if (r == WakeBoard.NOT_POSTED) {
            throw new AssertionError("a board of two cells was full");
        }
        wake = (r & WakeBoard.WAKE_CONSUMER) != 0 ? 1 : 0;
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = cut;
        r.r2 = wake;
    }
}
