package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.LifetimeGuard;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * A native handle's lifetime ({@link LifetimeGuard}, which every CUDA stream and context call
 * goes through): a call racing the handle's release is either admitted before it, and then the
 * release waits for it (runs after its exit and sees what it did), or refused; never admitted and
 * then finding the handle released, and the release runs exactly once. The "handle" is two plain
 * fields, so what the call did reaches the release only through the guard's own ordering.
 *
 * <p>r1 = the call was admitted (1) or refused (0); r2 = the admitted call found the handle
 * released (1: a driver call on a destroyed stream); r3 = the release saw the call's use of the
 * handle (1) or not (0); r4 = how many times the release ran.
 *
 * <p>Its broken twin, {@code BrokenLifetimeGuardTest} (test sources), runs these actors on a copy
 * of the guard whose {@code enter} checks the closing bit and then increments, in two steps (the
 * "closed? then call the driver" pattern this guard replaced); jcstress must report FORBIDDEN
 * outcomes there.
 */
@JCStressTest
@Description("Lifetime guard: a call racing the release is admitted before it (the release follows its exit) or refused; "
        + "the release runs once.")
@Outcome(id = "1, 0, 1, 1", expect = ACCEPTABLE, desc = "Admitted before the close; released after its exit, seeing its use.")
@Outcome(id = "0, 0, 0, 1", expect = ACCEPTABLE_INTERESTING, desc = "Refused: the close came first; released once.")
@Outcome(id = "1, 1, .*", expect = FORBIDDEN, desc = "Admitted, then found the handle released: a call on a destroyed handle.")
@Outcome(id = "1, 0, 0, .*", expect = FORBIDDEN, desc = "Released while the admitted call was inside (or before it).")
@Outcome(expect = FORBIDDEN, desc = "Anything else (the release run twice or never).")
@State
public class LifetimeGuardTest {
    final LifetimeGuard guard = new LifetimeGuard();
    /** The handle's state: written by the call (a use) and by the release, both plain. */
    int used;
    int released;
    int admitted;
    int sawReleased;
    int releaseSawUse;
    final AtomicInteger releases = new AtomicInteger();

    @Actor
    public void call() {
        if (guard.enter()) {
            admitted = 1;
            sawReleased = released;
            used = 1;
            guard.exit();
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
