package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BrokenEagerRecycleSlotTable;
import io.cudaloom.protocol.BrokenEagerRecycleSlotTable.HeapFlagArray;
import io.cudaloom.protocol.BrokenEagerRecycleSlotTable.RetiredBatch;
import io.cudaloom.protocol.SlotTable;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * {@link AwaitAbaTest} run on {@link BrokenEagerRecycleSlotTable} (a withdrawn slot is freed at
 * once instead of staying armed until its flag lands): the same actors, state and grading, only
 * the table class differs. jcstress must report FORBIDDEN outcomes here: the next await re-arms
 * the slot, the abandoned kernel's flag write lands after its reset, and the scanner retires the
 * slot under the next await's ticket, which the ticket check cannot tell apart.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: ABA guard (await as the reactor runs it): a late completion of a slot abandoned by a "
        + "timed-out waiter is never observed as the completion of the thread's next await.")
@Outcome(id = "0, 0, 0, 0", expect = ACCEPTABLE,
        desc = "Withdrawn; the late completion retired an empty slot; next await not completed.")
@Outcome(id = "1, 0, 0, 0", expect = ACCEPTABLE_INTERESTING,
        desc = "The scanner won the withdraw race; the await took that delivery before moving on.")
@Outcome(id = {"0, -1, 0, 0", "1, -1, 0, 0"}, expect = ACCEPTABLE,
        desc = "The next await found no free slot yet (it would fall back to a host callback); "
                + "the slot was recycled later.")
@Outcome(id = {"[-0-9]+, 1, [-0-9]+, [-0-9]+", "[-0-9]+, [-0-9]+, 1, [-0-9]+", "[-0-9]+, [-0-9]+, [-0-9]+, 2"},
        expect = FORBIDDEN,
        desc = "ABA: the next await observed a completion that belongs to the abandoned one.")
@Outcome(expect = FORBIDDEN, desc = "Any other outcome (e.g. the slot was never recycled).")
@State
public class BrokenAwaitAbaTest {
    static final int CLAIM_RETRIES = 1 << 16;

    final HeapFlagArray flags = new HeapFlagArray(1);
    final BrokenEagerRecycleSlotTable<Completion> table = new BrokenEagerRecycleSlotTable<>(1, flags);
    final RetiredBatch<Completion> batch = new RetiredBatch<>(1);
    final Waiter waiter = new Waiter();
    final long first;
    long next = SlotTable.NO_SLOT; // waiter actor, then arbiter
    volatile boolean scannerDone;

    public BrokenAwaitAbaTest() {
        waiter.reset();
        first = table.claim();
        table.resetFlag(first);
        table.publish(first, waiter); // first await armed; its kernel is still running
    }

    @Actor
    public void waiterThread(IIII_Result r) {
        // First await times out and withdraws.
        if (table.cancel(first, waiter)) {
            r.r1 = 0;
        } else {
            r.r1 = 1; // lost the race: the delivery is imminent; the reactor parks until it lands
            while (!waiter.isDelivered(first)) {
                Thread.onSpinWait();
            }
        }
        // The thread's next await.
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
        flags.setRelease(SlotTable.slotOf(first), 1); // the abandoned kernel finally completes
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
