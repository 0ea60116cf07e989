package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.SharedLifetimeGuard;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * A shared handle's lifetime ({@link SharedLifetimeGuard}, which a CUDA module's launches and
 * memory's copies go through), its ordering 1: a call that found the guard open and collided on
 * its base, and so enters through the cells (publishing them), racing the close, which closes the
 * base and then closes the cells it reads. The call is either admitted before the release, and then
 * the release waits for it (runs after its exit and sees what it did), or refused; never admitted
 * and then finding the handle released, and the release runs exactly once. The "handle" is plain
 * fields, so what the call did reaches the release only through the guard's own ordering.
 *
 * <p>r1 = the call was admitted (1) or refused (0); r2 = the admitted call found the handle
 * released (1: a driver call on an unloaded module, a copy from freed memory); r3 = the release saw
 * the call's use of the handle (1) or not (0); r4 = how many times the release ran.
 *
 * <p>Its broken twin, {@code BrokenSharedLifetimeGuardTest} (test sources), runs these actors on a
 * copy of the guard whose call on a cell does not read the base again after entering the cell
 * ({@code stress/src/mutations/shared-guard-cell-skips-base.patch}): a call that published the cells
 * after the closer read none then uses the released handle. jcstress must report FORBIDDEN outcomes
 * there.
 */
@JCStressTest
@Description("Shared lifetime guard: a call entering through the cells while the guard closes is admitted before the release "
        + "(which follows its exit) or refused; the release runs once.")
@Outcome(id = "1, 0, 1, 1", expect = ACCEPTABLE, desc = "Admitted before the close; released after its exit, seeing its use.")
@Outcome(id = "0, 0, 0, 1", expect = ACCEPTABLE_INTERESTING, desc = "Refused: the close came first; released once.")
@Outcome(id = "1, 1, .*", expect = FORBIDDEN, desc = "Admitted, then found the handle released: a call on a released handle.")
@Outcome(id = "1, 0, 0, .*", expect = FORBIDDEN, desc = "Released while the admitted call was inside (or before it).")
@Outcome(expect = FORBIDDEN, desc = "Anything else (the release run twice or never).")
@State
public class SharedLifetimeGuardTest {
    final SharedLifetimeGuard guard = new SharedLifetimeGuard();
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
        if (token != SharedLifetimeGuard.REFUSED) {
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
