package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * docs/SEMANTICS.md, "Semantics", its bullets on the two ends other than completion, a fault and the
 * device's close:
 * <blockquote>A device fault (e.g. an illegal address in a kernel) wakes the stream's waiters with a
 * {@code GpuFaultException} naming the CUDA error, within a few milliseconds of the driver reporting
 * it.</blockquote>
 * {@link #aDeviceFaultWakesTheStreamsWaitersWithTheNamedErrorWithinOneSecond}, which also checks the
 * recycling half of "a faulted stream's slots are quarantined until no write into them can land,
 * then recycled, also when nothing else happens on the device" (the quarantine itself is
 * {@link ReactorContractRegressionTest}'s: only the instant device can keep a dead stream's write
 * pending).
 * <blockquote>{@code close()} wakes every waiter with {@code ReactorClosedException} and frees the
 * pinned flags only once no device write into them can still land.</blockquote>
 * {@link #closeWakesEveryWaiterAndFreesTheFlagsOnlyOnceNoWriteCanLand},
 * {@link #closeWithNothingInFlightFreesTheFlagsAtOnce}. Both bullets' outcomes are checked for the
 * non-blocking forms too (a future, {@code onComplete}).
 *
 * <p>A section of the semantics suite, run by every backend and strategy ({@link SemanticsSuite}).
 */
abstract class FaultAndCloseSemantics extends SemanticsSuite {
    /** docs/SEMANTICS.md's "within a few milliseconds", with room for a loaded two-core CI machine. */
    static final Duration FAULT_WAKE_BOUND = Duration.ofSeconds(1);

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aDeviceFaultWakesTheStreamsWaitersWithTheNamedErrorWithinOneSecond(BackendFixture b) throws Exception {
        GpuDevice device = b.open(); // the default fault probe: at most once per millisecond
        GpuStream faulty = b.newStream(device);
        GpuStream healthy = b.newStream(device);
        BackendFixture.Fault fault = b.fault(faulty);
        BackendFixture.Gate healthyGate = b.hold(healthy);
        final int n = 8;
        List<Pending> waiters = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            waiters.add(start(Kind.values()[i % 2], "waiter " + i, () -> {
                faulty.event().await();
                return "returned";
            }));
        }
        CompletableFuture<?> future = faulty.event().toCompletableFuture();
        AtomicReference<RuntimeException> callbackError = new AtomicReference<>();
        CountDownLatch callbackRan = new CountDownLatch(1);
        faulty.event().onComplete(Runnable::run, callbackRan::countDown, e -> {
            callbackError.set(e);
            callbackRan.countDown();
        });
        Pending bystander = start(Kind.VIRTUAL, "waiter on a healthy stream", () -> {
            healthy.event().await();
            return "returned";
        });
        List<Pending> parked = new ArrayList<>(waiters);
        parked.add(bystander);
        awaitParked(device, n + 3, parked);

        long faultAt = System.nanoTime();
        fault.trigger();
        long worstWake = 0;
        for (Pending w : waiters) {
            GpuFaultException e = assertInstanceOf(GpuFaultException.class, w.failure(), w.toString());
            assertTrue(e.getMessage().contains(fault.errorName()), "names the error: " + e.getMessage());
            worstWake = Math.max(worstWake, w.endedAt - faultAt);
        }
        assertTrue(worstWake < FAULT_WAKE_BOUND.toNanos(), "the last waiter woke " + worstWake / 1_000_000
                + " ms after the fault, more than " + FAULT_WAKE_BOUND.toMillis() + " ms");
        ExecutionException viaFuture = assertThrows(ExecutionException.class,
                () -> future.get(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(GpuFaultException.class, viaFuture.getCause());
        assertTrue(viaFuture.getCause().getMessage().contains(fault.errorName()), viaFuture.getCause().getMessage());
        assertTrue(callbackRan.await(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(GpuFaultException.class, callbackError.get(), "onError got the fault, onDone did not run");
        assertEquals(n + 2, device.reactor().stats().faults(), "every registration failed with the fault");

        GpuFaultException later = assertThrows(GpuFaultException.class, () -> faulty.event().await(),
                "a later await fails at once");
        assertTrue(later.getMessage().contains(fault.errorName()), later.getMessage());
        assertFalse(bystander.ended(), "the healthy stream's waiter is not touched by the fault");
        healthyGate.open();
        assertEquals("returned", bystander.result());
        // With nothing else happening on the device, the dead stream's slots come back once no
        // write into them can land (the quarantine bullet of docs/SEMANTICS.md).
        assertNothingLeaked(device);
    }


    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void closeWakesEveryWaiterAndFreesTheFlagsOnlyOnceNoWriteCanLand(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        final int n = 6;
        List<Pending> waiters = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            boolean timed = i % 3 == 2;
            waiters.add(start(Kind.values()[i % 2], (timed ? "timed " : "") + "waiter " + i, () -> {
                if (timed) {
                    return stream.event().await(LONG);
                }
                stream.event().await();
                return "returned";
            }));
        }
        CompletableFuture<?> future = stream.event().toCompletableFuture();
        AtomicReference<RuntimeException> callbackError = new AtomicReference<>();
        CountDownLatch callbackRan = new CountDownLatch(1);
        stream.event().onComplete(Runnable::run, callbackRan::countDown, e -> {
            callbackError.set(e);
            callbackRan.countDown();
        });
        awaitParked(device, n + 2, waiters);

        long t0 = System.nanoTime();
        device.close();
        long closeNanos = System.nanoTime() - t0;
        assertTrue(closeNanos < CLOSE_BOUND.toNanos(), "close() waited " + closeNanos / 1_000_000
                + " ms: it must return without waiting for the GPU work");
        for (Pending w : waiters) {
            assertInstanceOf(ReactorClosedException.class, w.failure(), w.toString());
        }
        ExecutionException viaFuture = assertThrows(ExecutionException.class,
                () -> future.get(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(ReactorClosedException.class, viaFuture.getCause());
        assertTrue(callbackRan.await(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(ReactorClosedException.class, callbackError.get(), "onError got the closure");
        assertTrue(device.reactor().isClosed());
        assertFalse(device.reactor().scannerThread().isAlive(), "the scanner stopped");
        assertThrows(ReactorClosedException.class, stream::event, "no new event after close");

        if (usesSlots(b)) {
            stays("the flags are kept while the device's writes can still land",
                    () -> !device.reactor().isMemoryReleased());
            gate.open();
            awaitUntil("the flags freed once the writes landed", () -> device.reactor().isMemoryReleased());
        } else {
            // No flag write was ever enqueued: nothing can land, so nothing holds the flags.
            awaitUntil("the flags freed though the work still runs", () -> device.reactor().isMemoryReleased());
            gate.open();
        }
        long late = b.writesAfterRelease(device);
        assertTrue(late == 0 || late == -1, late + " flag writes landed in freed memory");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void closeWithNothingInFlightFreesTheFlagsAtOnce(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        GpuEvent takenBefore = stream.event();
        device.close();
        assertTrue(device.reactor().isMemoryReleased(), "nothing in flight: freed by close() itself");
        device.close(); // idempotent
        assertThrows(ReactorClosedException.class, takenBefore::await);
        CompletableFuture<?> future = takenBefore.toCompletableFuture(Runnable::run);
        assertTrue(future.isCompletedExceptionally(), "reported through the future, not thrown");
        assertInstanceOf(ReactorClosedException.class, future.exceptionNow());
        assertTrue(b.writesAfterRelease(device) <= 0);
    }
}
