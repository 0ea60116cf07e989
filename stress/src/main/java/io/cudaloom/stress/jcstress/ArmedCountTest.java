package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
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
 * {@code nArmed} ordering (SlotTable orderings 2 and 3): publishes racing a scanner that retires
 * each slot the moment it sees its bit. Every slot's device write has already landed (short
 * kernels: claim, reset, enqueue, the flag becomes 1, then publish), and the registrant publishes
 * {@value #SLOTS} slots one after another while the scanner scans pass after pass (as it does while
 * other work is armed, or in its spin phase), so every publish is a chance for the scanner to
 * retire a slot between its bit and its count. Because {@code publish} counts the slot before it
 * sets the bit, the scanner's decrement always follows that slot's increment: the count the
 * scanner reads after a retirement is never negative, and the first publish, into an idle table,
 * always reports idle-to-active.
 *
 * <p>r1 = the first publish reported idle-to-active (1) or not (0); r2 = slots the racing scanner
 * retired (it stops once it has all, or after {@value #SCAN_PASSES} passes); r3 = the lowest armed
 * count it read after a pass that retired something ({@value #NO_READING} if none did); r4 = armed
 * count at the end, after the arbiter's final scan.
 *
 * <p>Its broken twin, {@code BrokenArmedCountTest} (test sources), runs these actors on a copy of
 * the table that counts after setting the bit; jcstress must report FORBIDDEN outcomes there.
 */
@JCStressTest
@Description("nArmed: publishes racing a scanner that retires each slot at once; the count never goes "
        + "negative and the first publish into an idle table reports idle-to-active.")
@Outcome(id = {"1, [1-4], [0-3], 0", "1, 0, 9, 0"}, expect = ACCEPTABLE,
        desc = "Count never below 0, first publish idle-to-active, count back to 0 at the end.")
@Outcome(id = "[01], [0-4], -[0-9]+, [-0-9]+", expect = FORBIDDEN,
        desc = "Count went negative: the scanner counted a slot out before its publish counted it in (ordering 2).")
@Outcome(id = "0, .*", expect = FORBIDDEN,
        desc = "First publish did not report idle-to-active: a parked scanner would not be woken (ordering 3).")
@Outcome(expect = FORBIDDEN, desc = "Any other outcome (e.g. count not back to 0).")
@State
public class ArmedCountTest {
    static final int SLOTS = 4;
    static final int SCAN_PASSES = 64;
    static final int NO_READING = 9;

    final HeapFlagArray flags = new HeapFlagArray(SLOTS);
    final SlotTable<Payload> table = new SlotTable<>(SLOTS, flags);
    final RetiredBatch<Payload> batch = new RetiredBatch<>(SLOTS);
    final long[] tickets = new long[SLOTS];

    public ArmedCountTest() {
        for (int i = 0; i < SLOTS; i++) {
            tickets[i] = table.claim();
            table.resetFlag(tickets[i]);
            flags.setRelease(SlotTable.slotOf(tickets[i]), 1); // device write landed before publish
        }
    }

    @Actor
    public void registrant(IIII_Result r) {
        r.r1 = table.publish(tickets[0], Payload.published()) ? 1 : 0;
        for (int i = 1; i < SLOTS; i++) {
            table.publish(tickets[i], Payload.published());
        }
    }

    @Actor
    public void scanner(IIII_Result r) {
        int retired = 0;
        int lowest = NO_READING;
        for (int pass = 0; pass < SCAN_PASSES && retired < SLOTS; pass++) {
            table.scanOnce(batch);
            if (!batch.isEmpty()) {
                retired += batch.size();
                batch.clear();
                lowest = Math.min(lowest, (int) table.armedCount());
            }
        }
        r.r2 = retired;
        r.r3 = lowest;
    }

    @Arbiter
    public void arbiter(IIII_Result r) {
        table.scanOnce(batch);
        batch.clear();
        r.r4 = (int) table.armedCount();
    }
}
