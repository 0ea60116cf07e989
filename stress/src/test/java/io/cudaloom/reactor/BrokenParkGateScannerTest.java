package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.SlotTable.OffHeapFlagArray;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.reactor.metrics.SharedCounters;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.stress.jcstress.ParkModel;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * {@link ScannerParkGateTest} on {@link BrokenParkGateScanner}: the real {@link Scanner} with its
 * park gate reading whether this pass's scan saw an active bit instead of the armed count,
 * generated at build time from {@code stress/src/mutations/scanner-park-gate-reads-bits.patch}.
 * jcstress must report the FORBIDDEN lost wake-up: B counted while A was still armed (so no
 * idle-to-active unpark), its bit not yet visible to the pass that decides to park. The
 * constants are the real test's; the actors and the park seam are its, on the broken scanner.
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: park gate on this pass's bits: a registration racing the scanner's decision to park never "
        + "leaves an armed slot with a parked scanner and no pending unpark (LockSupport permit modelled).")
@Outcome(id = "0, 0, 0", expect = ACCEPTABLE,
        desc = "B counted while A still was (no wake needed); the scanner saw B armed and kept watching.")
@Outcome(id = "0, 1, 1", expect = ACCEPTABLE,
        desc = "B was idle-to-active and unparked; the scanner saw B armed first; the permit is left for later.")
@Outcome(id = "0, 0, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "The scanner saw idle and parked, but B's unpark had come first: the permit made the park "
                + "return at once, and the next pass saw B.")
@Outcome(id = "1, 3, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "The scanner saw idle and parked; B's idle-to-active unpark woke it.")
@Outcome(id = "1, 2, .*", expect = FORBIDDEN,
        desc = "Lost wake-up: the scanner asleep with no unpark pending while B is armed.")
@Outcome(expect = FORBIDDEN, desc = "Any other outcome.")
@State
public class BrokenParkGateScannerTest {
    final OffHeapFlagArray flags = OffHeapFlagArray.allocate(2);
    final SlotTable<Completion> table = new SlotTable<>(2, flags);
    final ParkModel scannerThread = new ParkModel();
    final SeamRecorder seam = new SeamRecorder(scannerThread);
    final Registrar registrar = new Registrar(new LifecycleState("jcstress"), scannerThread::unpark, table,
            new FlagMemory(flags, () -> { }), new SharedCounters(), true);
    final BrokenParkGateScanner scanner = new BrokenParkGateScanner(OPEN, registrar, table, ScannerParkGateTest.CONFIG,
            new DeviceFaults(), new PreWake(ScannerParkGateTest.CONFIG, () -> { }), ScannerParkGateTest.BLOCKER);
    final BrokenParkGateScanner.Runner runner = scanner.runner(seam, BrokenParkGateScanner.UNTIMED_PARK_BOX_NANOS);
    final long b;

    public BrokenParkGateScannerTest() {
        long a = table.claim();
        table.resetFlag(a);
        table.publish(a, ScannerParkGateTest.NOTHING);
        flags.setRelease(SlotTable.slotOf(a), 1);
        b = table.claim();
        table.resetFlag(b); // B's device write is enqueued behind long work: it never lands here
    }

    @Actor
    public void registrant(III_Result r) {
        boolean idleToActive = table.publish(b, ScannerParkGateTest.NOTHING);
        if (idleToActive) {
            scannerThread.unpark(); // Registrar.tryArm: the wake-up on the idle-to-active transition
        }
        r.r3 = idleToActive ? 1 : 0;
    }

    @Actor
    public void scanner(III_Result r) {
        // ScannerParkGateTest.runScanner, on the broken scanner's runner
        if (!runner.start()) {
            r.r1 = -1;
            return;
        }
        for (int pass = 0; pass < ScannerParkGateTest.MAX_PASSES; pass++) {
            seam.timed = false;
            seam.untimed = SeamRecorder.NONE;
            runner.turn();
            if (seam.untimed == SeamRecorder.WOULD_BLOCK) {
                r.r1 = 1;
                return; // would block here until an unpark
            }
            if (seam.untimed == SeamRecorder.PERMIT_TAKEN) {
                continue; // the permit was pending: the park returned at once
            }
            if (seam.timed) {
                r.r1 = 0; // something is armed: keep watching (timed parks end by themselves)
                return;
            }
        }
        r.r1 = -1; // loop bound hit: a model error, graded FORBIDDEN
    }

    /** {@link ScannerParkGateTest.SeamRecorder}, as the broken scanner's park seam. */
    static final class SeamRecorder implements BrokenParkGateScanner.Parker {
        static final int NONE = ScannerParkGateTest.SeamRecorder.NONE;
        static final int PERMIT_TAKEN = ScannerParkGateTest.SeamRecorder.PERMIT_TAKEN;
        static final int WOULD_BLOCK = ScannerParkGateTest.SeamRecorder.WOULD_BLOCK;

        private final ParkModel thread;
        boolean timed;
        int untimed;

        SeamRecorder(ParkModel thread) {
            this.thread = thread;
        }

        @Override
        public void parkNanos(Object blocker, long nanos) {
            timed = true;
        }

        @Override
        public void parkBoxed(Object blocker, long boxNanos) {
            untimed = thread.park() ? WOULD_BLOCK : PERMIT_TAKEN;
        }
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r2 = scannerThread.state();
    }

    /** The reactor as the scanner sees it: open for the whole trial. */
    static final BrokenParkGateScanner.Owner OPEN = new BrokenParkGateScanner.Owner() {
        @Override
        public boolean isClosed() {
            return false;
        }

        @Override
        public boolean closeAfterScannerError(Error error) {
            throw new AssertionError("the scanner failed", error);
        }

        @Override
        public void finishClose() {
            throw new AssertionError("not closed");
        }
    };
}
