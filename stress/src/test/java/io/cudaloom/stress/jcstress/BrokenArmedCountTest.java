package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.BrokenCountAfterBitSlotTable;
import io.cudaloom.protocol.BrokenCountAfterBitSlotTable.HeapFlagArray;
import io.cudaloom.protocol.BrokenCountAfterBitSlotTable.RetiredBatch;
import io.cudaloom.protocol.SlotTable;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * {@link ArmedCountTest} run on {@link BrokenCountAfterBitSlotTable} (publish sets the bit before
 * counting): the same actors, state and outcome grading, only the table class differs. jcstress
 * must report FORBIDDEN outcomes here ({@code BrokenVariantsCaughtTest} asserts it): the scanner
 * retires a slot between its bit and its increment and reads a negative count, or the first
 * publish then sees -1 instead of 0 and does not report idle-to-active.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: nArmed: publishes racing a scanner that retires each slot at once; the count never goes "
        + "negative and the first publish into an idle table reports idle-to-active.")
@Outcome(id = {"1, [1-4], [0-3], 0", "1, 0, 9, 0"}, expect = ACCEPTABLE,
        desc = "Count never below 0, first publish idle-to-active, count back to 0 at the end.")
@Outcome(id = "[01], [0-4], -[0-9]+, [-0-9]+", expect = FORBIDDEN,
        desc = "Count went negative: the scanner counted a slot out before its publish counted it in (ordering 2).")
@Outcome(id = "0, .*", expect = FORBIDDEN,
        desc = "First publish did not report idle-to-active: a parked scanner would not be woken (ordering 3).")
@Outcome(expect = FORBIDDEN, desc = "Any other outcome (e.g. count not back to 0).")
@State
public class BrokenArmedCountTest {
    static final int SLOTS = 4;
    static final int SCAN_PASSES = 64;
    static final int NO_READING = 9;

    final HeapFlagArray flags = new HeapFlagArray(SLOTS);
    final BrokenCountAfterBitSlotTable<Payload> table = new BrokenCountAfterBitSlotTable<>(SLOTS, flags);
    final RetiredBatch<Payload> batch = new RetiredBatch<>(SLOTS);
    final long[] tickets = new long[SLOTS];

    public BrokenArmedCountTest() {
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
