package io.cudaloom.reactor;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.ReactorConfig;
import io.cudaloom.TestAccess;
import io.cudaloom.protocol.SlotTable.OffHeapFlagArray;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.reactor.metrics.LatencyRecorder;
import io.cudaloom.reactor.metrics.SharedCounters;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamState;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The reactor's parts built alone, with no device, no facade and no public stream: the real
 * {@link BlockingWait} registers through the real {@link Registrar} on a real {@link SlotTable},
 * on a fake stream ({@link FakeStream}: a real {@link ReactorStream} over a fake backend) whose "device" is this test, and the real {@link Scanner}'s
 * {@link Scanner#step}, driven by this thread, delivers it. What {@code ClassCycleTest} says of the
 * structure, run: each part takes only what it uses.
 */
class PartsStandAloneTest {
    /** No waiter spin, no coalescing: the waiter parks on its own slot, and only the scanner can wake it. */
    private static final ReactorConfig CONFIG = ReactorConfig.builder().capacity(4).coalesce(false)
            .waiterSpin(Duration.ZERO).build();

    @Test
    void aBlockingWaitOnAFakeStreamIsDeliveredByTheScannerStep() throws Exception {
        OffHeapFlagArray flags = OffHeapFlagArray.allocate(4);
        SlotTable<Completion> table = new SlotTable<>(4, flags);
        LifecycleState state = new LifecycleState("parts");
        SharedCounters counters = new SharedCounters();
        AtomicInteger wakeUps = new AtomicInteger();
        Registrar registrar = new Registrar(state, wakeUps::incrementAndGet, table,
                new FlagMemory(flags, () -> { }), counters, true);
        Thread self = Thread.currentThread(); // this thread is the scanner
        BlockingWait.Checks checks = new BlockingWait.Checks(state, counters, "parts", () -> self);
        Object blocker = new Object();
        BlockingWait wait = new BlockingWait(new BlockingWait.Parts(state, checks, table, registrar,
                new PreWake(CONFIG, () -> { }), CONFIG, counters,
                new LatencyRecorder(CONFIG.slowAwaitFactor()), "parts", blocker, Runnable::run));
        Scanner scanner = new Scanner(OPEN, registrar, table, CONFIG, new DeviceFaults(), new PreWake(CONFIG, () -> { }), blocker);

        FakeStream fake = new FakeStream(CONFIG, 1); // one kernel "launched", still running
        ReactorStream stream = fake.stream;
        AtomicBoolean completed = new AtomicBoolean();
        Thread waiter = Thread.ofVirtual().start(() -> {
            try {
                completed.set(wait.await(stream, 1, false, true, TimeUnit.SECONDS.toNanos(30)));
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> fake.flagSlot.get() >= 0
                && TestAccess.parkedOn(waiter, blocker));
        assertEquals(1, table.armedCount(), "premise: the waiter armed one slot and parked on it");
        assertEquals(1, wakeUps.get(), "premise: the idle-to-active arm woke the scanner once");
        assertTrue(waiter.isAlive() && !completed.get(), "premise: nothing delivered yet");

        flags.setRelease(fake.flagSlot.get(), 1); // the device's write lands
        scanner.resume();
        await().atMost(Duration.ofSeconds(10)).until(() -> {
            scanner.doWork();
            return !waiter.isAlive();
        });
        assertTrue(completed.get(), "the await returned completed, not timed out");
        assertEquals(0, table.armedCount(), "the scanner retired the slot");
        assertTrue(stream.isKnownComplete(1), "a completed await proves its work done");
    }

    /** A lifecycle that is always open (the parts' tests drive the scanner themselves). */
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
}
