package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.HeapFlagArray;
import io.cudaloom.protocol.RetiredBatch;
import io.cudaloom.protocol.SlotTable;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * Park gate / no lost wake-up. Slot A is armed and has landed; a registrant arms slot B, whose
 * work is long (its flag stays 0), and wakes the scanner only if {@code publish} reported
 * idle-to-active (as {@code CompletionReactor.arm} does). The scanner runs the reactor's loop:
 * scan; if it retired something, scan again; if nothing is armed ({@code isIdle()}), park; else
 * keep watching (spin / timed park, which is never a lost wake-up). Park and unpark are the
 * {@link ParkModel} of LockSupport's binary permit: an unpark that comes before the park is kept
 * and makes the park return at once.
 *
 * <p>The invariant: at the end B is armed, so the scanner must not be asleep with no unpark
 * pending. r1 = how the scanner's loop ended (0 = saw an armed slot and kept watching,
 * 1 = decided to park and would block); r2 = final {@link ParkModel} state (0 running, 1 permit
 * pending, 2 parked with nothing pending, 3 parked then woken); r3 = B's idle-to-active report.
 */
@JCStressTest
@Description("Park gate: a registration racing the scanner's decision to park never leaves an armed "
        + "slot with a parked scanner and no pending unpark (LockSupport permit modelled).")
@Outcome(id = "0, 0, 0", expect = ACCEPTABLE,
        desc = "B counted while A still was (no wake needed); scanner saw B armed and kept watching.")
@Outcome(id = "0, 1, 1", expect = ACCEPTABLE,
        desc = "B was idle-to-active and unparked; scanner saw B armed first; permit left for later.")
@Outcome(id = "0, 0, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "Scanner saw idle and parked, but B's unpark had come first: the permit made park "
                + "return at once, and the next pass saw B.")
@Outcome(id = "1, 3, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "Scanner saw idle and parked; B's idle-to-active unpark woke it.")
@Outcome(id = "1, 2, .*", expect = FORBIDDEN,
        desc = "Lost wake-up: scanner asleep with no unpark pending while B is armed.")
@Outcome(expect = FORBIDDEN, desc = "Any other outcome.")
@State
public class ParkGateTest {
    /** Bound on the scanner's passes in one trial (the loop needs at most 3 here). */
    static final int MAX_PASSES = 4;

    final HeapFlagArray flags = new HeapFlagArray(2);
    final SlotTable<Payload> table = new SlotTable<>(2, flags);
    final RetiredBatch<Payload> batch = new RetiredBatch<>(2);
    final ParkModel scannerThread = new ParkModel();
    final long b;

    public ParkGateTest() {
        long a = table.claim();
        table.resetFlag(a);
        table.publish(a, Payload.published());
        flags.setRelease(SlotTable.slotOf(a), 1);
        b = table.claim();
        table.resetFlag(b); // B's device write is enqueued behind long work: it never lands here
    }

    @Actor
    public void registrant(III_Result r) {
        boolean idleToActive = table.publish(b, Payload.published());
        if (idleToActive) {
            scannerThread.unpark();
        }
        r.r3 = idleToActive ? 1 : 0;
    }

    @Actor
    public void scanner(III_Result r) {
        for (int pass = 0; pass < MAX_PASSES; pass++) {
            table.scanOnce(batch);
            if (!batch.isEmpty()) {
                batch.clear();
                continue; // retired something: scan again before considering a park
            }
            if (table.isIdle()) { // the park gate: the armed count, not this pass's bits
                if (scannerThread.park()) {
                    r.r1 = 1;
                    return; // would block here until an unpark
                }
                continue; // the permit was pending: park returned at once
            }
            r.r1 = 0; // something is armed: keep watching (spin, then timed parks)
            return;
        }
        r.r1 = -1; // loop bound hit: a model error, graded FORBIDDEN
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r2 = scannerThread.state();
    }
}
