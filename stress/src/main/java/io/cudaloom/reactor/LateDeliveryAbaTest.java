package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.SlotTable.HeapFlagArray;
import io.cudaloom.protocol.SlotTable.RetiredBatch;
import io.cudaloom.protocol.SlotTable;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * The ticket comparison alone (the generation in the ticket plus {@link Waiter#isDelivered}):
 * as {@link AwaitAbaTest}, but the timed-out waiter moves on to its next await at once even when
 * its withdraw lost the race, i.e. with the scanner's delivery of the abandoned registration still
 * in flight. The reactor's await does wait in that case, so in the shipped code this guard is
 * defence in depth; dropping the wait here makes the late delivery land during or after the next
 * await's reset, claim and publish of the <em>same slot</em>, where only the ticket's generation
 * tells the two registrations apart.
 *
 * <p>r1 = first await withdrawn (0) or lost to the scanner (1); r2 = the next await's own check
 * saw a completion (must be 0; -1 = no slot); r3 = the same check after the arbiter's final scan
 * (9: no next registration and the slot not recycled);
 * r4 = whose ticket the record holds at the end (0 none, 1 the abandoned one: the late delivery
 * landed after the reset and was ignored, 2 the next await's: forbidden).
 *
 * <p>Broken twin: {@code BrokenLateDeliveryAbaTest} (test sources) runs it on a table whose
 * tickets carry no generation.
 */
@JCStressTest
@Description("ABA guard (ticket generation): a late delivery for an abandoned registration of the "
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
public class LateDeliveryAbaTest {
    static final int CLAIM_RETRIES = 1 << 16;

    final HeapFlagArray flags = new HeapFlagArray(1);
    final SlotTable<Completion> table = new SlotTable<>(1, flags);
    final RetiredBatch<Completion> batch = new RetiredBatch<>(1);
    final Waiter waiter = new Waiter();
    final long first;
    long next = SlotTable.NO_SLOT;
    volatile boolean scannerDone;

    public LateDeliveryAbaTest() {
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
