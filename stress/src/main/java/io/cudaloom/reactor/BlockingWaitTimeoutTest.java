package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.ReactorConfig;
import io.cudaloom.protocol.IdleStrategy;
import io.cudaloom.protocol.SlotTable.OffHeapFlagArray;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.reactor.metrics.Counter;
import io.cudaloom.reactor.metrics.LatencyRecorder;
import io.cudaloom.reactor.metrics.SharedCounters;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamState;
import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * A timed-out blocking await, run by the reactor's own {@link BlockingWait}: it registers through
 * the real {@link Registrar} on the real {@link SlotTable} (one slot), its stream is a real
 * {@link ReactorStream} over a fake backend whose device is the other actor, and the real {@link Scanner#step}
 * delivers. No model of the await: the code under test is the code the reactor runs.
 *
 * <p>The waiter actor's first await has a deadline that has passed by the time it has registered,
 * so it withdraws at once (the park loop of {@link BlockingWait#acquire}), racing the device actor,
 * which lands that registration's flag and runs the scanner's steps. Either the withdrawal wins
 * (counted abandoned; the late flag then retires an empty slot) or the scanner has taken the
 * payload, and then the await must wait for the delivery in flight and return it: an await that
 * returns "timed out" without having withdrawn has left a delivery behind it. Then the thread's
 * next await (the same {@link Waiter} record, reset; the same slot once recycled, else a host
 * callback that never runs) must not complete: its work never does, so only the first
 * registration's late flag could make it.
 *
 * <p>r1 = the first await's result (1 completed, 0 timed out); r2 = it was counted abandoned (1)
 * or not (0); r3 = the second await's result; r4 = the device landed the first flag (1) or gave up
 * waiting for the registration (0, possible when the actors run one after the other).
 * {@code BrokenBlockingWaitTimeoutTest} (test sources) runs the same on a BlockingWait that returns
 * "timed out" after a failed withdrawal, generated from
 * {@code stress/src/mutations/blocking-wait-leaves-delivery-behind.patch}.
 */
@JCStressTest
@Description("Real BlockingWait: a timed-out await either withdraws its registration or returns the delivery "
        + "already in flight, and the thread's next await never completes with the first one's late flag.")
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
public class BlockingWaitTimeoutTest {
    /** No waiter spin (it would see the flag itself), no coalescing, no scanner spin or linger, no fault probe. */
    static final ReactorConfig CONFIG = ReactorConfig.builder().coalesce(false).waiterSpin(Duration.ZERO)
            .scannerSpin(Duration.ZERO).scannerLinger(Duration.ZERO).faultProbeInterval(Duration.ofSeconds(10)).build();
    /** A deadline 1 ns away: past once the await has registered, so it withdraws without parking. */
    static final long TIMEOUT_NANOS = 1;
    /** How long the device waits for the first registration's flag write before giving up. */
    static final int MAX_WAIT_SPINS = 1 << 18;
    /** Bound on the scanner's steps after the landing; retiring the one slot takes a few passes. */
    static final long MAX_SCAN_NANOS = 10_000_000_000L;
    /** The parks' blocker (the reactor's is the facade). */
    static final Object BLOCKER = new Object();
    /** The registration check's "scanner thread": never the waiter (an await on the scanner is refused). */
    static final Thread NOT_THE_WAITER = new Thread(() -> { });
    final OffHeapFlagArray flags = OffHeapFlagArray.allocate(1);
    final SlotTable<Completion> table = new SlotTable<>(1, flags);
    final LifecycleState state = new LifecycleState("jcstress");
    final SharedCounters counters = new SharedCounters();
    final Registrar registrar = new Registrar(state, () -> { }, table, new FlagMemory(flags, () -> { }), counters,
            true);
    final BlockingWait wait = new BlockingWait(new BlockingWait.Parts(state, new BlockingWait.Checks(state, counters,
            "jcstress", () -> NOT_THE_WAITER), table, registrar, new PreWake(CONFIG, () -> { }), CONFIG, counters,
            new LatencyRecorder(0), "jcstress", BLOCKER, Runnable::run));
    final Scanner scanner = new Scanner(ScannerParkGateTest.OPEN, registrar, table, CONFIG, new DeviceFaults(),
            new PreWake(CONFIG, () -> { }), BLOCKER); // its steps only: no park is made (a timed park would only wait)
    final FakeStream fake = new FakeStream();

    @Actor
    public void waiter(IIII_Result r) {
        try {
            r.r1 = wait.await(fake.stream, 1, false, true, TIMEOUT_NANOS) ? 1 : 0;
            r.r2 = (int) counters.snapshot(table, scanner, NOT_THE_WAITER, 0, 0).get(Counter.ABANDONED);
            r.r3 = wait.await(fake.stream, 2, false, true, TIMEOUT_NANOS) ? 1 : 0;
        } catch (InterruptedException e) {
            throw new AssertionError("uninterruptible awaits", e);
        }
    }

    @Actor
    public void deviceAndScanner(IIII_Result r) {
        r.r4 = landAndScan(fake, flags, table, scanner);
    }

    /**
     * The device and scanner actor of this test and its broken twin: waits for the first
     * registration's flag write, lands it, then runs the scanner's steps until that registration
     * has retired: its slot is back on the free list, or the next await has claimed it again and
     * reset its flag, or has armed it, or the scanner is idle. Returns r4: 1 landed, 0 no
     * registration came (the actors ran one after the other), -1 the slot never retired within
     * {@link #MAX_SCAN_NANOS} (graded FORBIDDEN). Bounded by time, not passes: the waiter may be
     * descheduled in the middle of its next registration, with a fallback outstanding that keeps
     * the scanner from going idle.
     */
    static int landAndScan(FakeStream stream, OffHeapFlagArray flags, SlotTable<Completion> table, Scanner scanner) {
        int slot = -1;
        for (int i = 0; i < MAX_WAIT_SPINS && (slot = stream.firstFlag.get()) < 0; i++) {
            Thread.onSpinWait();
        }
        if (slot < 0) {
            return 0; // the registration did not come (the actors ran one after the other)
        }
        flags.setRelease(slot, 1); // the first await's kernel completes: the device writes its flag
        scanner.resume();
        long deadline = System.nanoTime() + MAX_SCAN_NANOS;
        while (System.nanoTime() - deadline < 0) {
            if (scanner.step() == IdleStrategy.PARK || table.freeCount() == 1 || flags.getAcquire(slot) == 0
                    || stream.flagWrites.get() >= 2) {
                return 1;
            }
        }
        return -1; // the slot never retired: graded FORBIDDEN
    }


    /**
     * A stream with two launches that never complete by themselves, its flag writes recorded for the
     * device actor: a fake backend and reactor under the real {@link DirectSubmission} ({@link #stream}).
     */
    static final class FakeStream implements StreamBackend, ReactorStream.Reactor {
        final AtomicInteger firstFlag = new AtomicInteger(-1);
        final AtomicInteger flagWrites = new AtomicInteger();
        private final Thread noScanner = new Thread(() -> { });
        /** The reactor's object for this stream: what the wait is handed. */
        final DirectSubmission stream = new DirectSubmission(CONFIG, this, new DeviceFaults(), this, "jcstress stream");

        FakeStream() {
            stream.noteExternalSubmission(); // two launches, running for good
            stream.noteExternalSubmission();
        }

        @Override
        public StreamState queryState() {
            return StreamState.BUSY;
        }

        @Override
        public boolean enqueueFlagWrite(FlagMemory memory, int slot) {
            firstFlag.compareAndSet(-1, slot);
            flagWrites.incrementAndGet();
            return true;
        }

        @Override
        public boolean enqueueHostCallback(Runnable callback) {
            return true; // the work behind it never completes here: the callback never runs
        }

        @Override
        public boolean flagWritesSettled() {
            return true;
        }

        @Override
        public void shutdown() {}

        @Override
        public void track(ReactorStream s, Completion tracker) {
            throw new UnsupportedOperationException("no tracker here");
        }

        @Override
        public Registration register(ReactorStream s, Consumer<@Nullable RuntimeException> onDone) {
            throw new UnsupportedOperationException("no drain here");
        }

        @Override
        public boolean isClosed() {
            return false;
        }

        @Override
        public Executor callbackExecutor() {
            return Runnable::run;
        }

        @Override
        public Thread scannerThread() {
            return noScanner;
        }

        @Override
        public void countAdmissionWait(long nanos) {}

        @Override
        public String deviceName() {
            return "jcstress";
        }
    }
}
