package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BrokenNoGenerationSlotTable;
import io.cudaloom.protocol.BrokenNoGenerationSlotTable.HeapFlagArray;
import io.cudaloom.protocol.BrokenNoGenerationSlotTable.RetiredBatch;
import io.cudaloom.protocol.SlotTable;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * {@link LateDeliveryAbaTest} run on {@link BrokenNoGenerationSlotTable} (tickets without
 * generation): the same actors, state and grading, only the table class differs. jcstress must
 * report FORBIDDEN outcomes here: when the scanner wins the withdraw race and its delivery of the
 * abandoned registration lands after the next await's reset, the two registrations of slot 0 have
 * equal tickets and the next await takes that delivery for its own completion.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: ABA guard (ticket generation): a late delivery for an abandoned registration of the "
        + "same slot is never taken for the completion of the thread's next await.")
@Outcome(id = "0, 0, 0, 0", expect = ACCEPTABLE,
        desc = "Withdrawn; nothing was delivered.")
@Outcome(id = "1, 0, 0, 0", expect = ACCEPTABLE,
        desc = "Scanner won; its delivery landed before the next await reset the record.")
@Outcome(id = "1, 0, 0, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "Scanner won; its late delivery landed after the reset and was rejected by the ticket check.")
@Outcome(id = {"0, -1, 0, 0", "1, -1, 0, 0", "1, -1, 0, 1"}, expect = ACCEPTABLE,
        desc = "The next await found no free slot yet (it would fall back to a host callback); "
                + "the slot was recycled later.")
@Outcome(id = {"[-0-9]+, 1, [-0-9]+, [-0-9]+", "[-0-9]+, [-0-9]+, 1, [-0-9]+", "[-0-9]+, [-0-9]+, [-0-9]+, 2"},
        expect = FORBIDDEN,
        desc = "ABA: the next await observed the abandoned registration's delivery as its own.")
@Outcome(expect = FORBIDDEN, desc = "Any other outcome (e.g. the slot was never recycled).")
@State
public class BrokenLateDeliveryAbaTest {
    static final int CLAIM_RETRIES = 1 << 16;

    final HeapFlagArray flags = new HeapFlagArray(1);
    final BrokenNoGenerationSlotTable<Completion> table = new BrokenNoGenerationSlotTable<>(1, flags);
    final RetiredBatch<Completion> batch = new RetiredBatch<>(1);
    final Waiter waiter = new Waiter();
    final long first;
    long next = SlotTable.NO_SLOT;
    volatile boolean scannerDone;

    public BrokenLateDeliveryAbaTest() {
        waiter.reset();
        first = table.claim();
        table.resetFlag(first);
        table.publish(first, waiter);
    }

    @Actor
    public void waiterThread(IIII_Result r) {
        r.r1 = table.cancel(first, waiter) ? 0 : 1; // and moves on regardless
        waiter.reset();
        long t = table.claim();
        for (int i = 0; t == SlotTable.NO_SLOT && i < CLAIM_RETRIES && !scannerDone; i++) {
            Thread.onSpinWait();
            t = table.claim();
        }
        if (t == SlotTable.NO_SLOT) {
            t = table.claim();
        }
        if (t == SlotTable.NO_SLOT) {
            r.r2 = -1;
            return;
        }
        table.resetFlag(t);
        table.publish(t, waiter);
        next = t;
        r.r2 = waiter.isDelivered(t) ? 1 : 0;
    }

    @Actor
    public void lateCompletionAndScanner() {
        flags.setRelease(SlotTable.slotOf(first), 1);
        scanAndDeliver();
        scannerDone = true;
    }

    @Arbiter
    public void arbiter(IIII_Result r) {
        scanAndDeliver();
        boolean nextDone = next != SlotTable.NO_SLOT && waiter.isDelivered(next);
        // With no next registration, the abandoned slot must be back on the free list by now.
        boolean leaked = next == SlotTable.NO_SLOT && table.freeCount() != 1;
        r.r3 = nextDone ? 1 : leaked ? 9 : 0;
        r.r4 = nextDone ? 2 : waiter.isDelivered(first) ? 1 : 0;
    }

    private void scanAndDeliver() {
        table.scanOnce(batch);
        for (int i = 0; i < batch.size(); i++) {
            Completion c = batch.payload(i);
            if (c != null) {
                c.complete(batch.ticket(i), null);
            }
        }
        batch.clear();
    }
}
