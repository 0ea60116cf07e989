package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntSupplier;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * docs/SEMANTICS.md, "Semantics", its bullet on a stream's close:
 * <blockquote>A stream's {@code close()} takes no more work and makes no more events, but an event
 * taken before it can still be awaited, by every form, for the work it stands for (it completes, or
 * fails with {@code GpuFaultException}, or with {@code ReactorClosedException} if the device closes
 * first), served by the one registration the close leaves with the reactor while that work is in
 * flight.</blockquote>
 * {@link #anEventTakenBeforeTheStreamsCloseCompletesOnceItsWorkIsDone} (the await conventions, every
 * form, one registration, no new event),
 * {@link #workWrittenBeforeTheStreamsCloseIsVisibleAfterAnAwaitOnTheClosedStream},
 * {@link #aFaultAfterTheStreamsCloseFailsItsEventsWithTheNamedError},
 * {@link #closingTheDeviceFailsTheEventsOfAClosedStreamWithReactorClosedException},
 * {@link #anIdleStreamsCloseLeavesItsEventsDoneAtOnce}. The drain's corners that no backend-independent
 * test reaches are {@link ClosedStreamDrainTest}'s.
 *
 * <p>A section of the semantics suite, run by every backend and strategy ({@link SemanticsSuite}).
 */
abstract class StreamCloseSemantics extends SemanticsSuite {
    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void anEventTakenBeforeTheStreamsCloseCompletesOnceItsWorkIsDone(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        GpuEvent event = stream.event();
        long t0 = System.nanoTime();
        stream.close();
        long closeNanos = System.nanoTime() - t0;
        assertTrue(closeNanos < CLOSE_BOUND.toNanos(), "close() waited " + closeNanos / 1_000_000
                + " ms: it must return without waiting for the GPU work");
        stream.close(); // idempotent
        assertTrue(stream.isClosed());
        IllegalStateException noEvent = assertThrows(IllegalStateException.class, stream::event);
        assertEquals("stream " + stream + " is closed", noEvent.getMessage(), "no new event after the close");
        assertFalse(noEvent instanceof ReactorClosedException, "the device is open");
        assertThrows(IllegalStateException.class, stream::await, "nor a wait for all of the stream's work");
        assertFalse(event.await(Duration.ZERO), "zero timeout on held work");
        assertFalse(event.await(-1, TimeUnit.SECONDS), "negative timeout on held work");

        long timeoutNanos = Duration.ofMillis(50).toNanos();
        CountDownLatch timedOut = new CountDownLatch(1);
        List<Pending> returning = List.of(
                start(Kind.VIRTUAL, "await on a closed stream", () -> {
                    event.await();
                    return "returned";
                }),
                start(Kind.PLATFORM, "await on a closed stream", () -> {
                    event.await();
                    return "returned";
                }),
                start(Kind.VIRTUAL, "timed await on a closed stream", () -> {
                    long t = System.nanoTime();
                    boolean first = event.await(Duration.ofNanos(timeoutNanos));
                    long waited = System.nanoTime() - t;
                    timedOut.countDown();
                    boolean second = event.await(Long.MAX_VALUE, TimeUnit.DAYS); // saturates
                    return first + (waited >= timeoutNanos ? " after the full timeout" : " after only " + waited
                            + " ns") + ", then " + second;
                }));
        Pending uninterruptible = start(Kind.PLATFORM, "uninterruptible await on a closed stream", () -> {
            event.awaitUninterruptibly();
            return Thread.currentThread().isInterrupted() ? "returned, status kept" : "returned, status lost";
        });
        Pending interruptible = start(Kind.VIRTUAL, "interrupted await on a closed stream", () -> {
            try {
                event.await();
                return "returned";
            } catch (InterruptedException e) {
                return Thread.currentThread().isInterrupted() ? "InterruptedException, status set" : "InterruptedException";
            }
        });
        CompletableFuture<?> future = event.toCompletableFuture();
        Set<Thread> dependentRanOn = ConcurrentHashMap.newKeySet();
        CompletableFuture<?> dependent = future.thenRun(() -> dependentRanOn.add(Thread.currentThread()));
        AtomicReference<Thread> callbackRanOn = new AtomicReference<>();
        AtomicReference<RuntimeException> callbackError = new AtomicReference<>();
        CountDownLatch callbackRan = new CountDownLatch(1);
        event.onComplete(Runnable::run, () -> {
            callbackRanOn.set(Thread.currentThread());
            callbackRan.countDown();
        }, e -> {
            callbackError.set(e);
            callbackRan.countDown();
        });
        AtomicInteger cancelledRan = new AtomicInteger();
        Subscription cancelled = event.subscribe(Runnable::run, e -> cancelledRan.incrementAndGet());
        assertTrue(cancelled.cancel(), "withdrawn before the delivery");
        CompletableFuture<?> cancelledFuture = event.toCompletableFuture(Runnable::run);
        assertTrue(cancelledFuture.cancel(false));

        assertTrue(timedOut.await(LONG.toSeconds(), TimeUnit.SECONDS));
        List<Pending> all = new ArrayList<>(returning);
        all.add(uninterruptible);
        all.add(interruptible);
        awaitParkedOnDrain(all);
        interruptible.thread.interrupt();
        uninterruptible.thread.interrupt();
        assertEquals("InterruptedException", interruptible.result(), "ended by the interrupt, status cleared");
        all.remove(interruptible);
        stays("nothing completes while the work is held", () -> noneEnded(all) && !future.isDone()
                && callbackRan.getCount() == 1);
        awaitParkedOnDrain(all); // the uninterruptible one parked again, not spinning on the status
        ReactorStats s = device.reactor().stats();
        assertRegisteredThrough(b, s, 1); // the close's own registration serves them all
        assertEquals(0, s.abandoned(), "the withdrawals were the drain's, not the reactor's: " + s);

        gate.open();
        for (Pending w : returning.subList(0, 2)) {
            assertEquals("returned", w.result(), w.toString());
        }
        assertEquals("false after the full timeout, then true", returning.get(2).result());
        assertEquals("returned, status kept", uninterruptible.result());
        // Not future.get() first: a thread waiting in get() may run the dependents itself.
        awaitUntil("the dependent stage ran", () -> !dependentRanOn.isEmpty());
        future.get(LONG.toSeconds(), TimeUnit.SECONDS);
        dependent.get(LONG.toSeconds(), TimeUnit.SECONDS);
        assertTrue(callbackRan.await(LONG.toSeconds(), TimeUnit.SECONDS));
        assertNull(callbackError.get(), "onDone ran, not onError");
        assertTrue(event.isDone());
        assertTrue(event.await(Duration.ZERO));
        for (Thread t : dependentRanOn) {
            assertTrue(t.isVirtual() && t.getName().startsWith("cuda-loom-callback-"),
                    "a future's dependents run on the reactor's callback threads, not on " + t);
        }
        if (usesSlots(b)) {
            assertSame(device.reactor().scannerThread(), callbackRanOn.get(),
                    "a direct executor runs onComplete on the scanner that retired the close's slot");
        }
        assertEquals(0, cancelledRan.get(), "a cancelled subscription never runs");
        s = device.reactor().stats();
        assertEquals(1, s.completions(), "the close's registration: " + s);
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void workWrittenBeforeTheStreamsCloseIsVisibleAfterAnAwaitOnTheClosedStream(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        IntSupplier behindTheGate = b.write(stream, 42);
        GpuEvent event = stream.event();
        stream.close();
        Pending parked = start(Kind.VIRTUAL, "parked until the closed stream's write is done", () -> {
            event.await();
            return behindTheGate.getAsInt();
        });
        CompletableFuture<Integer> viaFuture = event.toCompletableFuture().thenApply(ignored -> behindTheGate.getAsInt());
        awaitParkedOnDrain(List.of(parked));
        gate.open();
        assertEquals(42, parked.result(), "the device's write is visible after an await on the closed stream");
        assertEquals(42, viaFuture.get(LONG.toSeconds(), TimeUnit.SECONDS), "and in the future's dependent");
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aFaultAfterTheStreamsCloseFailsItsEventsWithTheNamedError(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Fault fault = b.fault(stream);
        GpuEvent event = stream.event();
        stream.close();
        List<Pending> waiters = List.of(
                start(Kind.VIRTUAL, "await on a closed stream that faults", () -> {
                    event.await();
                    return "returned";
                }),
                start(Kind.PLATFORM, "timed await on a closed stream that faults", () -> event.await(LONG)));
        CompletableFuture<?> future = event.toCompletableFuture();
        AtomicReference<RuntimeException> callbackError = new AtomicReference<>();
        CountDownLatch callbackRan = new CountDownLatch(1);
        event.onComplete(Runnable::run, callbackRan::countDown, e -> {
            callbackError.set(e);
            callbackRan.countDown();
        });
        awaitParkedOnDrain(waiters);

        fault.trigger();
        for (Pending w : waiters) {
            GpuFaultException e = assertInstanceOf(GpuFaultException.class, w.failure(), w.toString());
            assertTrue(e.getMessage().contains(fault.errorName()), "names the error: " + e.getMessage());
        }
        ExecutionException viaFuture = assertThrows(ExecutionException.class,
                () -> future.get(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(GpuFaultException.class, viaFuture.getCause());
        assertTrue(callbackRan.await(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(GpuFaultException.class, callbackError.get(), "onError got the fault, onDone did not run");
        GpuFaultException later = assertThrows(GpuFaultException.class, event::await, "a later await fails at once");
        assertTrue(later.getMessage().contains(fault.errorName()), later.getMessage());
        assertFalse(event.isDone());
        assertEquals(1, device.reactor().stats().faults(), "the close's registration failed with the fault");
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void closingTheDeviceFailsTheEventsOfAClosedStreamWithReactorClosedException(BackendFixture b)
            throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        GpuEvent event = stream.event();
        stream.close();
        List<Pending> waiters = List.of(
                start(Kind.VIRTUAL, "await on a closed stream", () -> {
                    event.await();
                    return "returned";
                }),
                start(Kind.PLATFORM, "timed await on a closed stream", () -> event.await(LONG)));
        CompletableFuture<?> future = event.toCompletableFuture();
        awaitParkedOnDrain(waiters);

        device.close();
        for (Pending w : waiters) {
            ReactorClosedException e = assertInstanceOf(ReactorClosedException.class, w.failure(), w.toString());
            assertTrue(e.getMessage().contains(device.name()), e.getMessage());
        }
        ExecutionException viaFuture = assertThrows(ExecutionException.class,
                () -> future.get(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(ReactorClosedException.class, viaFuture.getCause());
        assertThrows(ReactorClosedException.class, event::await, "a later await: the device's closure first");
        CompletableFuture<?> late = event.toCompletableFuture(Runnable::run);
        assertInstanceOf(ReactorClosedException.class, late.exceptionNow(), "reported through the future at once");

        gate.open();
        awaitUntil("the flags freed once nothing can land", () -> device.reactor().isMemoryReleased());
        long writes = b.writesAfterRelease(device);
        assertTrue(writes == 0 || writes == -1, writes + " flag writes landed in freed memory");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void anIdleStreamsCloseLeavesItsEventsDoneAtOnce(BackendFixture b) throws Exception {
        if (!b.reportsIdle()) {
            b.unsupported("its streams report themselves busy even with nothing in flight, so the close registers"
                    + " and its events complete only once the scanner delivers that registration");
        }
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        GpuEvent event = stream.event();
        GpuEvent other = stream.event();
        stream.close();
        assertTrue(event.await(Duration.ZERO), "zero timeout: done");
        CompletableFuture<?> future = other.toCompletableFuture(Runnable::run);
        assertTrue(future.isDone() && !future.isCompletedExceptionally(), "completed before it was returned");
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        other.onComplete(Runnable::run, () -> ranOn.set(Thread.currentThread()), e -> fail(e));
        assertSame(Thread.currentThread(), ranOn.get(), "ran at once, on the caller");
        other.await();
        ReactorStats s = device.reactor().stats();
        assertEquals(0, s.registrations() + s.fallbacks() + s.coalesced(), "nothing registered: " + s);
        assertThrows(IllegalStateException.class, stream::event);
    }
}
