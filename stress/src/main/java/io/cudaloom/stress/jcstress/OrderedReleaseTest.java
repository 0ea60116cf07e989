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
 * A stream-ordered free ({@link OrderedRelease}): memory used on two streams, A and B, is released
 * exactly once, and only after the work on both is complete. The closer sets the release up as the
 * closing thread does: for each stream, {@link OrderedRelease#expect}, then register
 * {@link OrderedRelease#arrive} as the stream's completion callback (which runs at once, on the
 * closer, if the work is already complete), then its own arrival, {@link OrderedRelease#armed}.
 * The device completes A's work, then B's, running each stream's callback if one is registered.
 * The streams are {@link StreamWorkModel}s (a completion flag and a one-shot callback, race-free);
 * the release reads both flags when it runs.
 *
 * <p>r1 = how many times the release ran; r2 = how many of those ran while A's work was not
 * complete; r3 = the same for B; r4 = which registrations ran their callback at once (1 = A's,
 * 2 = B's, 3 = both). The interesting case is A complete at registration and B pending (r4 = 1):
 * A's arrival comes before B is expected, and only the arming party keeps it from releasing.
 *
 * <p>Two actors, so the 2-CPU CI runs it; {@link OrderedReleaseThreeActorTest} races A's and B's
 * completions on threads of their own (3 CPUs or more). Its broken twin,
 * {@code BrokenOrderedReleaseTest} (test sources), runs these actors on a copy of the class with
 * no arming party (the count starts at 0); jcstress must report FORBIDDEN outcomes there.
 */
@JCStressTest
@Description("Ordered release: memory used on streams A and B is released once, after both streams' work is complete.")
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
public class OrderedReleaseTest {
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
