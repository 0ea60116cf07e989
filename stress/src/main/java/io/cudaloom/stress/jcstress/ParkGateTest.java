package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BackoffIdleStrategy;
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
 * idle-to-active (as {@code Registrar.tryArm} does). The scanner runs the reactor's loop, as
 * core's {@code Scanner} does: scan; if it retired something, {@code idle.reset(now)} and scan
 * again; else {@code idle.idle(!table.isIdle(), now, NO_DEADLINE)} with the real
 * {@link BackoffIdleStrategy}, which parks untimed if nothing is armed and otherwise keeps
 * watching (spin / timed park, never a lost wake-up; the spin window is 0 here, so every such
 * decision is a timed park through the seam). Its parks go through {@link ModelParker}, the
 * {@link ParkModel} of LockSupport's binary permit: an unpark that comes before the park is kept
 * and makes the park return at once; nothing ever blocks.
 *
 * <p>The invariant: at the end B is armed, so the scanner must not be asleep with no unpark
 * pending. r1 = how the scanner's loop ended (0 = saw an armed slot and kept watching,
 * 1 = decided to park and would block; -1 and -2, model errors: loop bound hit, unexpected step); r2 = final {@link ParkModel} state (0 running, 1 permit
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
    final ModelParker parker = new ModelParker(scannerThread);
    // No linger (the production default): the park decision comes at once.
    final BackoffIdleStrategy idle = new BackoffIdleStrategy(0L, 0L, 20_000L, 1_000_000L, parker, this);
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
                idle.reset(System.nanoTime());
                continue; // retired something: scan again before considering a park
            }
            // the park gate: the armed count, not this pass's bits, checked right before the park
            BackoffIdleStrategy.Step step = idle.idle(!table.isIdle(), System.nanoTime(),
                    BackoffIdleStrategy.NO_DEADLINE);
            int parked = parker.takeLast();
            if (step == BackoffIdleStrategy.Step.PARK && parked == ModelParker.WOULD_BLOCK) {
                r.r1 = 1;
                return; // would block here until an unpark
            }
            if (step == BackoffIdleStrategy.Step.PARK && parked == ModelParker.PERMIT_CONSUMED) {
                continue; // the permit was pending: park returned at once
            }
            if (step == BackoffIdleStrategy.Step.TIMED_PARK && parked == ModelParker.TIMED) {
                r.r1 = 0; // something is armed: keep watching (timed parks end by themselves)
                return;
            }
            r.r1 = -2; // a step the strategy should not take here (e.g. a spin with a 0 spin window)
            return;
        }
        r.r1 = -1; // loop bound hit: a model error, graded FORBIDDEN
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r2 = scannerThread.state();
    }
}
