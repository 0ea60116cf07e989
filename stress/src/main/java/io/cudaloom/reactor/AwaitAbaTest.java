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
 * Await's own completion check, the steps of {@code BlockingWait.await} written out, with the real
 * {@link SlotTable} and the real per-thread {@link Waiter} record (this test lives in package
 * {@code io.cudaloom.reactor} because Waiter is package-private). A model on purpose: its broken
 * twin ({@code BrokenAwaitAbaTest}) runs it on a mutated copy of the table, which the reactor's own
 * {@code BlockingWait} cannot take (it takes the final {@code SlotTable}). The real
 * {@code BlockingWait} on the real table and scanner is {@link BlockingWaitTimeoutTest}.
 *
 * <p>The thread's first await is armed on the table's only slot and its kernel is still running;
 * it times out and withdraws ({@code cancel}). If the scanner has already taken the payload the
 * withdraw fails and the await waits for that imminent delivery, as the reactor does. Then the
 * thread's next await resets the record, claims a slot (the same slot, once the late flag has
 * landed and the scanner recycled it; the waiter retries as if it came a little later), resets the
 * flag, publishes, and checks its own completion. Its kernel never completes here, so neither that
 * check nor a final check after every scan may see a completion.
 *
 * <p>Guards under test: the abandoned slot stays armed until its late flag write lands (cancel
 * only withdraws the payload), so the late write can never land in the next registration's flag;
 * and the waiter does not leave an await with a delivery in flight. The ticket comparison is a
 * third guard, tested alone by {@link LateDeliveryAbaTest}.
 *
 * <p>r1 = first await withdrawn (0) or delivered (1, the scanner won); r2 = the next await's own
 * check saw a completion (1) / did not (0) / got no slot (-1); r3 = the same check after the
 * arbiter's final scan (9: no next registration and the slot not recycled); r4 = whose ticket
 * the record holds at the end (0 none, 1 the abandoned one, 2 the next await's).
 */
@JCStressTest
@Description("ABA guard (await as the reactor runs it): a late completion of a slot abandoned by a "
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
public class AwaitAbaTest {
    static final int CLAIM_RETRIES = 1 << 16;

    final HeapFlagArray flags = new HeapFlagArray(1);
    final SlotTable<Completion> table = new SlotTable<>(1, flags);
    final RetiredBatch<Completion> batch = new RetiredBatch<>(1);
    final Waiter waiter = new Waiter();
    final long first;
    long next = SlotTable.NO_SLOT; // waiter actor, then arbiter
    volatile boolean scannerDone;

    public AwaitAbaTest() {
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
