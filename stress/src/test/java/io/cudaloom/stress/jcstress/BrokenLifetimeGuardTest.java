package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BrokenCheckThenEnterLifetimeGuard;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * {@link LifetimeGuardTest} run on {@link BrokenCheckThenEnterLifetimeGuard} (its {@code enter}
 * checks the closing bit, then increments, in two steps), generated at build time from
 * {@code stress/src/mutations/guard-check-then-enter.patch}: the same actors, state and outcome
 * grading, only the guard class differs. jcstress must report FORBIDDEN outcomes here
 * ({@code BrokenVariantsCaughtTest} asserts it): the call passes the check, the closer sees no call
 * inside and releases, then the call is admitted and uses the released handle, and its exit runs
 * the release a second time.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: lifetime guard: a call racing the release is admitted before it (the release follows its exit) or refused; "
        + "the release runs once.")
@Outcome(id = "1, 0, 1, 1", expect = ACCEPTABLE, desc = "Admitted before the close; released after its exit, seeing its use.")
@Outcome(id = "0, 0, 0, 1", expect = ACCEPTABLE_INTERESTING, desc = "Refused: the close came first; released once.")
@Outcome(id = "1, 1, .*", expect = FORBIDDEN, desc = "Admitted, then found the handle released: a call on a destroyed handle.")
@Outcome(id = "1, 0, 0, .*", expect = FORBIDDEN, desc = "Released while the admitted call was inside (or before it).")
@Outcome(expect = FORBIDDEN, desc = "Anything else (the release run twice or never).")
@State
public class BrokenLifetimeGuardTest {
    final BrokenCheckThenEnterLifetimeGuard guard = new BrokenCheckThenEnterLifetimeGuard();
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
