package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BrokenNoArmingOrderedRelease;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * {@link OrderedReleaseTest} run on {@link BrokenNoArmingOrderedRelease} (no arming party: the
 * count starts at 0 and {@code armed()} does not arrive), generated at build time from
 * {@code stress/src/mutations/ordered-release-no-arming.patch}: the same actors, state and outcome
 * grading, only the release class differs. jcstress must report FORBIDDEN outcomes here
 * ({@code BrokenVariantsCaughtTest} asserts it): A's arrival, at once when the device completed A's
 * work before the closer registered on A, or from A's completion before the closer's second
 * {@code expect()}, takes the count from 1 to 0 before B is expected, so the memory is released
 * while B's work may still be pending (r3 = 1), and B's arrival releases it a second time. When
 * both were complete before the closer it is released twice (also in a sequential order, which
 * {@code OutcomeSpecTest} expects).
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: ordered release: memory used on streams A and B is released once, after both streams' work is complete.")
@Outcome(id = "1, 0, 0, 0", expect = ACCEPTABLE,
        desc = "Both pending at registration; released once, by the last arrival, after both completed.")
@Outcome(id = "1, 0, 0, 3", expect = ACCEPTABLE,
        desc = "Both complete at registration (arrived at once); the closer's armed() released.")
@Outcome(id = {"1, 0, 0, 1", "1, 0, 0, 2"}, expect = ACCEPTABLE_INTERESTING,
        desc = "One stream arrived at once at registration, the other was pending: the arming party held the release until it completed.")
@Outcome(id = "0, .*", expect = FORBIDDEN, desc = "Never released: the memory leaks.")
@Outcome(id = "\\d+, [1-9]\\d*, .*", expect = FORBIDDEN, desc = "Released while A's work was not complete.")
@Outcome(id = "\\d+, 0, [1-9]\\d*, .*", expect = FORBIDDEN,
        desc = "Released while B's work was not complete (an early arrival released before B was expected).")
@Outcome(expect = FORBIDDEN, desc = "Anything else: released more than once.")
@State
public class BrokenOrderedReleaseTest {
    final StreamWorkModel a = new StreamWorkModel();
    final StreamWorkModel b = new StreamWorkModel();
    final AtomicInteger releases = new AtomicInteger();
    final AtomicInteger releasedWhileAPending = new AtomicInteger();
    final AtomicInteger releasedWhileBPending = new AtomicInteger();
    final BrokenNoArmingOrderedRelease release = new BrokenNoArmingOrderedRelease(this::free);
    /** Written by the closer only: which registrations ran their callback at once. */
    int atOnce;

    private void free() {
        if (!a.isComplete()) {
            releasedWhileAPending.incrementAndGet();
        }
        if (!b.isComplete()) {
            releasedWhileBPending.incrementAndGet();
        }
        releases.incrementAndGet();
    }

    @Actor
    public void closer() {
        int once = 0;
        release.expect();
        if (a.register(release::arrive)) {
            once |= 1;
        }
        release.expect();
        if (b.register(release::arrive)) {
            once |= 2;
        }
        release.armed();
        atOnce = once;
    }

    @Actor
    public void device() {
        a.complete();
        b.complete();
    }

    @Arbiter
    public void arbiter(IIII_Result r) {
        r.r1 = releases.get();
        r.r2 = releasedWhileAPending.get();
        r.r3 = releasedWhileBPending.get();
        r.r4 = atOnce;
    }
}
