package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * docs/SEMANTICS.md, "Semantics", its bullets on awaiting and giving up:
 * <blockquote>{@code await()} / {@code await(Duration)} / {@code await(long, TimeUnit)} /
 * {@code awaitUninterruptibly()} follow {@code java.util.concurrent}: interruptible, timed ones
 * return whether the work completed; spurious unparks never return early; they work on platform
 * threads too.</blockquote>
 * {@link #awaitIsInterruptibleAndClearsTheInterruptStatus},
 * {@link #timedAwaitsReturnWhetherTheWorkCompletedAndNeverGiveUpEarly},
 * {@link #awaitUninterruptiblyIgnoresInterruptsAndKeepsTheStatus},
 * {@link #spuriousUnparksNeverReturnEarly} (each on a virtual and a platform thread).
 * <blockquote>A waiter that gives up (timeout, interrupt) withdraws its registration; the slot stays
 * armed until the device write lands, and its late completion can never complete a later await
 * (tickets carry per-slot generations).</blockquote>
 * {@link #aWaiterThatGivesUpWithdrawsAndItsLateCompletionNeverCompletesALaterAwait}.
 *
 * <p>A section of the semantics suite, run by every backend and strategy ({@link SemanticsSuite}).
 */
abstract class AwaitSemantics extends SemanticsSuite {
    // ---- await conventions ----------------------------------------------------------------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void awaitIsInterruptibleAndClearsTheInterruptStatus(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        List<Pending> waiters = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            waiters.add(start(kind, "interruptible await", () -> {
                try {
                    stream.event().await();
                    return "returned";
                } catch (InterruptedException e) {
                    return Thread.currentThread().isInterrupted() ? "InterruptedException, status set" : "InterruptedException";
                }
            }));
        }
        awaitParked(device, 2, waiters);
        waiters.forEach(w -> w.thread.interrupt());
        for (Pending w : waiters) {
            assertEquals("InterruptedException", w.result(), w + ": ended by the interrupt, status cleared");
        }
        ReactorStats s = device.reactor().stats();
        assertEquals(2, s.abandoned(), "both withdrew: " + s);
        assertEquals(0, s.completions(), s.toString());
        assertRegisteredThrough(b, s, 2);
        if (usesSlots(b)) {
            assertEquals(2, s.armedNow(), "the device writes are still in flight: the slots stay armed: " + s);
        }

        // Interrupted before it starts: every interruptible form throws at once and registers nothing.
        List<Callable<?>> forms = List.of(
                () -> { stream.event().await(); return null; },
                () -> stream.event().await(LONG),
                () -> stream.event().await(30, TimeUnit.SECONDS),
                () -> { stream.await(); return null; });
        for (Callable<?> form : forms) {
            Thread.currentThread().interrupt();
            assertThrows(InterruptedException.class, form::call);
            assertFalse(Thread.interrupted(), "the status is cleared, as java.util.concurrent does");
        }
        assertEquals(2, registered(device), "an await interrupted before it starts registers nothing");

        gate.open();
        assertNothingLeaked(device); // the withdrawn slots are recycled once their writes land
        assertEquals(2, device.reactor().stats().abandoned());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void timedAwaitsReturnWhetherTheWorkCompletedAndNeverGiveUpEarly(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        GpuEvent event = stream.event();
        assertFalse(event.await(Duration.ZERO), "zero timeout on busy work");
        assertFalse(event.await(0, TimeUnit.NANOSECONDS), "zero timeout on busy work");
        assertEquals(0, registered(device), "a zero timeout registers nothing");

        long timeoutNanos = Duration.ofMillis(50).toNanos();
        CountDownLatch timedOut = new CountDownLatch(2);
        List<Pending> waiters = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            boolean durationForm = kind == Kind.VIRTUAL; // each thread kind uses both forms, crossed
            waiters.add(start(kind, "timed await", () -> {
                long t0 = System.nanoTime();
                boolean first = durationForm ? event.await(Duration.ofNanos(timeoutNanos))
                        : event.await(timeoutNanos, TimeUnit.NANOSECONDS);
                long waited = System.nanoTime() - t0;
                timedOut.countDown();
                boolean second = durationForm ? event.await(LONG.toSeconds(), TimeUnit.SECONDS) : event.await(LONG);
                return first + (waited >= timeoutNanos ? " after the full timeout" : " after only " + waited + " ns")
                        + ", then " + second;
            }));
        }
        assertTrue(timedOut.await(LONG.toSeconds(), TimeUnit.SECONDS));
        awaitParked(device, 4, waiters); // two timed out, two waiting again
        ReactorStats s = device.reactor().stats();
        assertEquals(2, s.abandoned(), "the timed-out awaits withdrew: " + s);
        assertEquals(0, s.completions(), s.toString());
        assertRegisteredThrough(b, s, 4);

        gate.open();
        for (Pending w : waiters) {
            assertEquals("false after the full timeout, then true", w.result(), w.toString());
        }
        assertTrue(event.isDone());
        assertTrue(event.await(Duration.ZERO), "a completed event returns true at once");
        s = device.reactor().stats();
        assertEquals(2, s.completions(), "the two waiting awaits completed: " + s);
        assertEquals(2, s.abandoned(), s.toString());
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void awaitUninterruptiblyIgnoresInterruptsAndKeepsTheStatus(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        List<Pending> waiters = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            waiters.add(start(kind, "uninterruptible await", () -> {
                stream.event().awaitUninterruptibly();
                return Thread.currentThread().isInterrupted() ? "returned, status kept" : "returned, status lost";
            }));
        }
        awaitParked(device, 2, waiters);
        waiters.forEach(w -> w.thread.interrupt());
        stays("interrupts end no awaitUninterruptibly", () -> noneEnded(waiters));
        awaitParked(device, 2, waiters); // parked again, not spinning on the interrupt status
        assertEquals(0, device.reactor().stats().abandoned(), "nothing withdrawn");

        gate.open();
        for (Pending w : waiters) {
            assertEquals("returned, status kept", w.result(), w.toString());
        }
        ReactorStats s = device.reactor().stats();
        assertEquals(2, s.completions(), s.toString());
        assertRegisteredThrough(b, s, 2);
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void spuriousUnparksNeverReturnEarly(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        List<Pending> waiters = List.of(
                start(Kind.VIRTUAL, "untimed await", () -> {
                    stream.event().await();
                    return "returned";
                }),
                start(Kind.PLATFORM, "timed await", () -> stream.event().await(LONG)));
        awaitParked(device, 2, waiters);
        for (int i = 0; i < 1_000; i++) {
            for (Pending w : waiters) {
                LockSupport.unpark(w.thread);
            }
        }
        stays("spurious unparks end no await", () -> noneEnded(waiters));
        ReactorStats s = device.reactor().stats();
        assertEquals(2, registered(device), "no await gave up and registered again: " + s);
        assertEquals(0, s.abandoned(), s.toString());

        gate.open();
        assertEquals("returned", waiters.get(0).result());
        assertEquals(Boolean.TRUE, waiters.get(1).result(), "the timed await reports completion");
        assertEquals(2, device.reactor().stats().completions());
        assertNothingLeaked(device);
    }

    // ---- a waiter that gives up withdraws; its late completion completes nothing later ----------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aWaiterThatGivesUpWithdrawsAndItsLateCompletionNeverCompletesALaterAwait(BackendFixture b)
            throws Exception {
        GpuDevice device = b.open();
        GpuStream abandonedA = b.newStream(device), laterA = b.newStream(device);
        GpuStream abandonedB = b.newStream(device), laterB = b.newStream(device);
        BackendFixture.Gate lateA = b.hold(abandonedA), lateB = b.hold(abandonedB);
        BackendFixture.Gate gateA = b.hold(laterA), gateB = b.hold(laterB);

        // B gives up by interrupt (a platform thread), A by timeout (a virtual thread); each then
        // awaits other work on the same thread, so with the same per-thread completion record.
        CountDownLatch gaveUp = new CountDownLatch(1);
        Pending byInterrupt = start(Kind.PLATFORM, "gives up by interrupt", () -> {
            String first;
            try {
                abandonedB.event().await();
                first = "returned";
            } catch (InterruptedException e) {
                first = "interrupted";
            }
            gaveUp.countDown();
            laterB.event().await();
            return first + ", then returned";
        });
        awaitParked(device, 1, List.of(byInterrupt));
        byInterrupt.thread.interrupt();
        assertTrue(gaveUp.await(LONG.toSeconds(), TimeUnit.SECONDS));
        Pending byTimeout = start(Kind.VIRTUAL, "gives up by timeout", () -> {
            boolean first = abandonedA.event().await(Duration.ofMillis(20));
            laterA.event().await();
            return (first ? "completed" : "timed out") + ", then returned";
        });
        List<Pending> both = List.of(byInterrupt, byTimeout);
        awaitParked(device, 4, both);
        ReactorStats s = device.reactor().stats();
        assertEquals(2, s.abandoned(), "both withdrew: " + s);
        assertRegisteredThrough(b, s, 4);
        if (usesSlots(b)) {
            assertEquals(4, s.armedNow(), "a withdrawn slot stays armed until its device write lands: " + s);
        }

        lateA.open(); // the late completions of the abandoned awaits now land
        lateB.open();
        if (usesSlots(b)) {
            awaitUntil("the late writes landed and their slots retired",
                    () -> device.reactor().stats().armedNow() == 2);
        }
        stays("a late completion completes no later await of the same thread", () -> noneEnded(both));

        gateA.open();
        gateB.open();
        assertEquals("interrupted, then returned", byInterrupt.result());
        assertEquals("timed out, then returned", byTimeout.result());
        s = device.reactor().stats();
        assertEquals(2, s.completions(), s.toString());
        assertEquals(2, s.abandoned(), s.toString());
        assertNothingLeaked(device);
    }
}
