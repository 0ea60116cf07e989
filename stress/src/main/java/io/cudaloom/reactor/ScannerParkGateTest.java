package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.ReactorConfig;
import io.cudaloom.protocol.SlotTable.OffHeapFlagArray;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.reactor.metrics.SharedCounters;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.stress.jcstress.ParkModel;
import java.time.Duration;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * Park gate / no lost wake-up, on the reactor's own {@link Scanner} and the runner that makes its
 * parks: real turns of {@link Scanner.Runner#turn} (the scan, the deliveries, the idle step whose
 * park gate reads the armed count, and the park the runner then makes) over a real
 * {@link SlotTable} and a real {@link Registrar}, not a model of the loop. Slot A is armed and has
 * landed; a registrant arms slot B, whose work is long (its flag stays 0), and wakes the scanner
 * only if {@code publish} reported idle-to-active (what {@code Registrar.tryArm} does after its
 * publish; the rest of tryArm enqueues a device write, which needs a stream).
 *
 * <p>The scanner actor runs what the scanner thread runs: {@link Scanner.Runner#start}, then
 * {@link Scanner.Runner#turn} until the runner parks. Its parks go through its park seam
 * ({@link Scanner.Parker}): the untimed (boxed) park is {@link ParkModel}'s, a linearizable model
 * of LockSupport's binary permit (an unpark that came first is kept and makes the park return at
 * once; nothing blocks: the model records whether the thread would); timed parks are recorded:
 * a timed park ends by itself, so it is never a lost wake-up. (The box of the untimed park would
 * end a lost wake-up after 1 s and count it; the test still forbids one.) No spin and no linger,
 * so every decision is a park.
 *
 * <p>The invariant: at the end B is armed, so the scanner must not be asleep with no unpark
 * pending. r1 = how the loop ended (0 = kept watching with a timed park, 1 = parked untimed and
 * would block; -1 = loop bound hit, a model error); r2 = the final {@link ParkModel} state (0
 * running, 1 permit pending, 2 parked with nothing pending, 3 parked then woken); r3 = B's
 * idle-to-active report. The broken twin ({@code BrokenParkGateScannerTest}) runs the same on a
 * scanner whose park gate reads this pass's scan instead of the armed count.
 */
@JCStressTest
@Description("Park gate on the real Scanner: a registration racing the scanner's decision to park never "
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
public class ScannerParkGateTest {
    /**
     * Bound on the scanner's passes in one trial. A's retirement teaches the idle strategy a gap
     * of about one pass, which it then spins through before its first timed park: a few passes,
     * a few microseconds; the bound only catches a loop that never decides.
     */
    static final int MAX_PASSES = 1 << 16;
    /** No spin, no linger (the default), and no fault probe or quarantine check within a trial. */
    static final ReactorConfig CONFIG = ReactorConfig.builder().scannerSpin(Duration.ZERO)
            .scannerLinger(Duration.ZERO).faultProbeInterval(Duration.ofSeconds(10)).build();
    static final Completion NOTHING = (ticket, failure) -> { };
    /** The parks' blocker (the reactor's is the facade). */
    static final Object BLOCKER = new Object();

    final OffHeapFlagArray flags = OffHeapFlagArray.allocate(2);
    final SlotTable<Completion> table = new SlotTable<>(2, flags);
    final ParkModel scannerThread = new ParkModel();
    final SeamRecorder seam = new SeamRecorder(scannerThread);
    final Registrar registrar = new Registrar(new LifecycleState("jcstress"), scannerThread::unpark, table,
            new FlagMemory(flags, () -> { }), new SharedCounters(), true);
    final Scanner scanner = new Scanner(OPEN, registrar, table, CONFIG, new DeviceFaults(),
            new PreWake(CONFIG, () -> { }), BLOCKER);
    final Scanner.Runner runner = scanner.runner(seam, Scanner.UNTIMED_PARK_BOX_NANOS);
    final long b;

    public ScannerParkGateTest() {
        long a = table.claim();
        table.resetFlag(a);
        table.publish(a, NOTHING);
        flags.setRelease(SlotTable.slotOf(a), 1);
        b = table.claim();
        table.resetFlag(b); // B's device write is enqueued behind long work: it never lands here
    }

    @Actor
    public void registrant(III_Result r) {
        boolean idleToActive = table.publish(b, NOTHING);
        if (idleToActive) {
            scannerThread.unpark(); // Registrar.tryArm: the wake-up on the idle-to-active transition
        }
        r.r3 = idleToActive ? 1 : 0;
    }

    @Actor
    public void scanner(III_Result r) {
        r.r1 = runScanner(runner, seam);
    }

    /**
     * The scanner actor of this test and its broken twin: turns of the real runner until it
     * parks. Returns r1: 1 parked untimed and would block, 0 made a timed park (something is
     * armed: it keeps watching, and a timed park ends by itself), -1 loop bound hit (a model
     * error, graded FORBIDDEN). An untimed park whose permit was pending returned at once: the
     * next turn (the runner resumed the strategy, as after any wake-up).
     */
    static int runScanner(Scanner.Runner runner, SeamRecorder seam) {
        if (!runner.start()) {
            return -1;
        }
        for (int pass = 0; pass < MAX_PASSES; pass++) {
            seam.timed = false;
            seam.untimed = SeamRecorder.NONE;
            runner.turn();
            if (seam.untimed == SeamRecorder.WOULD_BLOCK) {
                return 1; // would block here until an unpark
            }
            if (seam.untimed == SeamRecorder.PERMIT_TAKEN) {
                continue; // the permit was pending: the park returned at once
            }
            if (seam.timed) {
                return 0;
            }
            // retired A, or spun through the gap A's retirement taught: the next turn
        }
        return -1;
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r2 = scannerThread.state();
    }

    /** The reactor as the scanner sees it: open for the whole trial. */
    static final Scanner.Owner OPEN = new Scanner.Owner() {
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

    /** The runner's park seam: the untimed park is the model's, timed ones are recorded. */
    static final class SeamRecorder implements Scanner.Parker {
        static final int NONE = 0;
        static final int PERMIT_TAKEN = 1;
        static final int WOULD_BLOCK = 2;

        private final ParkModel thread;
        boolean timed; // the scanner actor's own: one thread
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
}
