package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.SlotTable.OffHeapFlagArray;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.reactor.metrics.Counter;
import io.cudaloom.reactor.metrics.LatencyRecorder;
import io.cudaloom.reactor.metrics.SharedCounters;
import io.cudaloom.spi.FlagMemory;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * {@link BlockingWaitTimeoutTest} on {@link BrokenTimeoutBlockingWait}: the real {@link BlockingWait}
 * with its timed park returning "timed out" after a failed withdrawal too, generated at build time
 * from {@code stress/src/mutations/blocking-wait-leaves-delivery-behind.patch}. jcstress must report
 * the FORBIDDEN outcome: the scanner took the payload, the withdrawal failed, and the await returned
 * "timed out" (not counted abandoned) with the delivery still in flight. The constants, the stream
 * and the scanner's park seam are the real test's; the actors are its, on the broken wait.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: a timed-out await returns after a failed withdrawal, leaving "
        + "the delivery in flight behind it.")
@Outcome(id = {"0, 1, 0, 0", "0, 1, 0, 1"}, expect = ACCEPTABLE,
        desc = "Timed out and withdrew; the late flag (if it landed) retired an empty slot.")
@Outcome(id = "1, 0, 0, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "The scanner took the payload first: the withdrawal failed, the await returned the delivery.")
@Outcome(id = "0, 0, [-0-9]+, [-0-9]+", expect = FORBIDDEN,
        desc = "Timed out without withdrawing: the await returned with its delivery still in flight.")
@Outcome(id = "[-0-9]+, [-0-9]+, 1, [-0-9]+", expect = FORBIDDEN,
        desc = "ABA: the next await completed, with the first registration's late flag.")
@Outcome(expect = FORBIDDEN, desc = "Any other outcome.")
@State
public class BrokenBlockingWaitTimeoutTest {
    final OffHeapFlagArray flags = OffHeapFlagArray.allocate(1);
    final SlotTable<Completion> table = new SlotTable<>(1, flags);
    final LifecycleState state = new LifecycleState("jcstress");
    final SharedCounters counters = new SharedCounters();
    final Registrar registrar = new Registrar(state, () -> { }, table, new FlagMemory(flags, () -> { }), counters,
            true);
    final BrokenTimeoutBlockingWait wait = new BrokenTimeoutBlockingWait(new BrokenTimeoutBlockingWait.Parts(state,
            new BrokenTimeoutBlockingWait.Checks(state, counters, "jcstress", () -> BlockingWaitTimeoutTest.NOT_THE_WAITER), table,
            registrar, new PreWake(BlockingWaitTimeoutTest.CONFIG, () -> { }), BlockingWaitTimeoutTest.CONFIG, counters,
            new LatencyRecorder(0), "jcstress", BlockingWaitTimeoutTest.BLOCKER,
            Runnable::run));
    final Scanner scanner = new Scanner(ScannerParkGateTest.OPEN, registrar, table, BlockingWaitTimeoutTest.CONFIG,
            new DeviceFaults(), new PreWake(BlockingWaitTimeoutTest.CONFIG, () -> { }), BlockingWaitTimeoutTest.BLOCKER);
    final BlockingWaitTimeoutTest.FakeStream fake = new BlockingWaitTimeoutTest.FakeStream();

    @Actor
    public void waiter(IIII_Result r) {
        try {
            r.r1 = wait.await(fake.stream, 1, false, true, BlockingWaitTimeoutTest.TIMEOUT_NANOS) ? 1 : 0;
            r.r2 = (int) counters.snapshot(table, scanner, BlockingWaitTimeoutTest.NOT_THE_WAITER, 0, 0)
                    .get(Counter.ABANDONED);
            r.r3 = wait.await(fake.stream, 2, false, true, BlockingWaitTimeoutTest.TIMEOUT_NANOS) ? 1 : 0;
        } catch (InterruptedException e) {
            throw new AssertionError("uninterruptible awaits", e);
        }
    }

    @Actor
    public void deviceAndScanner(IIII_Result r) {
        r.r4 = BlockingWaitTimeoutTest.landAndScan(fake, flags, table, scanner);
    }
}
