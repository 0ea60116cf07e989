package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BrokenCellSkipsBaseSharedLifetimeGuard;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * {@link SharedLifetimeGuardTest} run on {@link BrokenCellSkipsBaseSharedLifetimeGuard} (a call on a
 * cell does not read the base again after entering the cell), generated at build time from
 * {@code stress/src/mutations/shared-guard-cell-skips-base.patch}: the same actors, state and
 * outcome grading, only the guard class differs. jcstress must report FORBIDDEN outcomes here
 * ({@code BrokenVariantsCaughtTest} asserts it): the call finds the base open, the closer closes
 * the base, reads no cells, and releases; the call then publishes the cells, enters one, and uses
 * the released handle.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: shared lifetime guard: a call entering through the cells while the guard closes is admitted before the release "
        + "(which follows its exit) or refused; the release runs once.")
@Outcome(id = "1, 0, 1, 1", expect = ACCEPTABLE, desc = "Admitted before the close; released after its exit, seeing its use.")
@Outcome(id = "0, 0, 0, 1", expect = ACCEPTABLE_INTERESTING, desc = "Refused: the close came first; released once.")
@Outcome(id = "1, 1, .*", expect = FORBIDDEN, desc = "Admitted, then found the handle released: a call on a released handle.")
@Outcome(id = "1, 0, 0, .*", expect = FORBIDDEN, desc = "Released while the admitted call was inside (or before it).")
@Outcome(expect = FORBIDDEN, desc = "Anything else (the release run twice or never).")
@State
public class BrokenSharedLifetimeGuardTest {
    final BrokenCellSkipsBaseSharedLifetimeGuard guard = new BrokenCellSkipsBaseSharedLifetimeGuard();
    /** The handle's state: written by the call (a use) and by the release, both plain. */
    int used;
    int released;
    int admitted;
    int sawReleased;
    int releaseSawUse;
    final AtomicInteger releases = new AtomicInteger();

    @Actor
    public void call() {
        int token = guard.enterThroughCells();
        if (token != BrokenCellSkipsBaseSharedLifetimeGuard.REFUSED) {
            admitted = 1;
            sawReleased = released;
            used = 1;
            guard.exit(token);
        }
    }

    @Actor
    public void close() {
        guard.close(() -> {
            releaseSawUse = used;
            released = 1;
            releases.incrementAndGet();
        });
    }

    @Arbiter
    public void arbiter(IIII_Result r) {
        r.r1 = admitted;
        r.r2 = sawReleased;
        r.r3 = releaseSawUse;
        r.r4 = releases.get();
    }
}
