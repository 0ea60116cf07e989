package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.OrderedRelease;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * {@link OrderedReleaseTest} with three actors: the closer, A's completion and B's completion each
 * on a thread of their own, so the two streams' work completes in either order or at once, against
 * the closer's registrations ({@link OrderedRelease#expect}, register
 * {@link OrderedRelease#arrive}, ..., {@link OrderedRelease#armed}). Same state and outcome
 * grading (r1 = releases; r2, r3 = releases while A's, B's work was not complete; r4 = which
 * registrations ran their callback at once: 1 = A's, 2 = B's, 3 = both). jcstress schedules a test
 * only when the machine has at least as many CPUs as actors, so this one runs on machines with 3
 * or more CPUs (the GPU host) and is skipped by the 2-CPU CI, which runs {@link OrderedReleaseTest}
 * (one device actor completing A, then B) and its broken twin.
 */
@JCStressTest
@Description("Ordered release, closer / A completes / B completes on three threads: memory used on streams A and B is released once, after both streams' work is complete.")
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
public class OrderedReleaseThreeActorTest {
    final StreamWorkModel a = new StreamWorkModel();
    final StreamWorkModel b = new StreamWorkModel();
    final AtomicInteger releases = new AtomicInteger();
    final AtomicInteger releasedWhileAPending = new AtomicInteger();
    final AtomicInteger releasedWhileBPending = new AtomicInteger();
    final OrderedRelease release = new OrderedRelease(this::free);
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
    public void streamA() {
        a.complete();
    }

    @Actor
    public void streamB() {
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
