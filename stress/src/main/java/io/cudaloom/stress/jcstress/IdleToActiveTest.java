package io.cudaloom.stress.jcstress;

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
 * The idle-to-active report of {@code publish} is exact while another slot retires (ordering 3).
 * Slot A is armed and its flag has landed; the registrant publishes slot B (also landed) while the
 * scanner retires. Publish of B reports idle-to-active exactly when A's retirement was counted out
 * before B was counted in, so:
 * <ul>
 *   <li>a scan that retired both A and B saw B's bit, which B set after counting itself while A was
 *       still counted: B cannot have reported idle-to-active;
 *   <li>the count the scanner reads after its pass is never negative, and is 0 at the end.
 * </ul>
 * r1 = B reported idle-to-active; r2 = slots the racing scan retired; r3 = armed count the scanner
 * read after its pass; r4 = armed count at the end.
 */
@JCStressTest
@Description("idle-to-active is exact while another slot is being retired; count never negative.")
@Outcome(id = "0, 2, 0, 0", expect = ACCEPTABLE,
        desc = "Scan saw both bits: B was counted while A still was; not idle-to-active.")
@Outcome(id = "0, 1, 1, 0", expect = ACCEPTABLE,
        desc = "Scan saw only A; B was counted before A's retirement was counted out.")
@Outcome(id = "1, 1, 0, 0", expect = ACCEPTABLE_INTERESTING,
        desc = "Scan retired A and counted it out before B counted in: B is idle-to-active (must wake).")
@Outcome(id = "1, 1, 1, 0", expect = ACCEPTABLE_INTERESTING,
        desc = "As above, and B's increment landed before the scanner read the count.")
@Outcome(id = "1, 2, .*", expect = FORBIDDEN,
        desc = "Idle-to-active reported although the scan saw B's bit while A was still counted.")
@Outcome(id = ".*, -1, .*", expect = FORBIDDEN, desc = "Count went negative.")
@Outcome(expect = FORBIDDEN, desc = "Any other outcome.")
@State
public class IdleToActiveTest {
    final HeapFlagArray flags = new HeapFlagArray(2);
    final SlotTable<Payload> table = new SlotTable<>(2, flags);
    final RetiredBatch<Payload> batch = new RetiredBatch<>(2);
    final long b;

    public IdleToActiveTest() {
        long a = table.claim();
        table.resetFlag(a);
        table.publish(a, Payload.published());
        flags.setRelease(SlotTable.slotOf(a), 1);
        b = table.claim();
        table.resetFlag(b);
        flags.setRelease(SlotTable.slotOf(b), 1);
    }

    @Actor
    public void registrant(IIII_Result r) {
        r.r1 = table.publish(b, Payload.published()) ? 1 : 0;
    }

    @Actor
    public void scanner(IIII_Result r) {
        table.scanOnce(batch);
        r.r2 = batch.size();
        r.r3 = (int) table.armedCount();
        batch.clear();
    }

    @Arbiter
    public void arbiter(IIII_Result r) {
        table.scanOnce(batch);
        batch.clear();
        r.r4 = (int) table.armedCount();
    }
}
