package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.ReactorConfig;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJ_Result;

/**
 * {@link AdmissionProofTest} run on {@link BrokenDirectSubmission} (the proof is read, then written, in two steps): jcstress must report a FORBIDDEN outcome. Original documentation follows.
 *
 * <p>Admission (DirectSubmission): two proofs recorded at once (the scanner retiring one slot, a
 * waiter returning from another) must return each covered entry's permit exactly once and leave
 * the highest proof: 5 permits for proofs 5 and 3, whatever the order. More would let the stream
 * exceed its bound (the driver's queue fills again); fewer would leak permits until the stream
 * stalls.
 *
 * <p>r1 = permits returned; r2 = the proof recorded.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: admission: concurrent proofs return each entry's permit exactly once and keep the highest.")
@Outcome(id = "5, 5", expect = ACCEPTABLE, desc = "Five permits back, proof 5.")
@Outcome(expect = FORBIDDEN, desc = "Permits returned twice or lost, or the proof went backwards.")
@State
public class BrokenAdmissionProofTest {
    static final ReactorConfig CONFIG = ReactorConfig.builder().admissionLimit(8).build();
    final BrokenDirectSubmission record = new BrokenDirectSubmission(CONFIG, AdmissionProofTest.QUIET, new DeviceFaults(),
            AdmissionProofTest.QUIET, "jcstress stream");

    @Actor
    public void scanner() {
        record.completedThrough(5);
    }

    @Actor
    public void waiter() {
        record.completedThrough(3);
    }

    @Arbiter
    public void arbiter(JJ_Result r) {
        r.r1 = record.freePermits() - 8;
        r.r2 = record.completedThrough();
    }
}
