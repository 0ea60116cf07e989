package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static io.cudaloom.ReactorTestSupport.gate;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.*;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The non-blocking forms ({@link GpuEvent#toCompletableFuture}, {@link GpuEvent#onComplete}): the
 * same closed-stream semantics as await, failures reported instead of thrown, cancellation withdrawing
 * the registration, and callbacks that throw harming neither the stream nor the scanner.
 */
class NonBlockingRegistrationTest {
    private static final Duration LONG = Duration.ofSeconds(30);

    @RegisterExtension
    final OpenedDevices devices = new OpenedDevices();


    /** Runs each task on the calling thread and counts it. */
    private static final class CountingExecutor implements Executor {
        final AtomicInteger tasks = new AtomicInteger();

        @Override
        public void execute(Runnable task) {
            tasks.incrementAndGet();
            task.run();
        }
    }

    // ---- closed stream, closed reactor ---------------------------------------------------------

    @Test
    void anEventTakenBeforeTheStreamsCloseIsServedByTheNonBlockingFormsAsByAwait() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream busy = device.newStream();
        CountDownLatch gate = gate(busy);
        SimulatedStream idle = device.newStream();
        GpuEvent busyEvent = busy.event(); // taken while open
        GpuEvent idleEvent = idle.event();
        busy.close();
        idle.close();
        ReactorStats s = device.reactor().stats();
        assertEquals(1, s.registrations(), "the busy stream's close left one registration, the idle one's none: " + s);

        // The idle stream's work was done when it closed: every form completes at once.
        CountingExecutor executor = new CountingExecutor();
        CompletableFuture<?> idleFuture = idleEvent.toCompletableFuture(executor);
        assertTrue(idleFuture.isDone() && !idleFuture.isCompletedExceptionally(), "completed before it was returned");
        AtomicInteger idleDone = new AtomicInteger();
        idleEvent.onComplete(executor, idleDone::incrementAndGet, e -> fail(e));
        assertEquals(1, idleDone.get(), "ran at once");
        assertTrue(idleEvent.await(Duration.ZERO));

        // The busy stream's: nothing completes while its work is held, then everything does.
        CompletableFuture<?> future = busyEvent.toCompletableFuture(executor);
        AtomicInteger done = new AtomicInteger();
        AtomicReference<RuntimeException> error = new AtomicReference<>();
        busyEvent.onComplete(executor, done::incrementAndGet, error::set);
        assertFalse(future.isDone(), "the work is held");
        assertEquals(0, done.get());
        assertFalse(busyEvent.await(Duration.ZERO));
        assertEquals(1, device.reactor().stats().registrations(), "served by the close's registration");
        gate.countDown();
        future.get(LONG.toSeconds(), TimeUnit.SECONDS);
        await().atMost(LONG).until(() -> done.get() == 1);
        assertNull(error.get());
        assertTrue(busyEvent.await(Duration.ZERO));
        assertTrue(busyEvent.isDone());

        for (GpuStream closed : List.of(busy, idle)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, closed::event);
            assertEquals("stream " + closed + " is closed", e.getMessage(), "no new event after the close");
            assertFalse(e instanceof ReactorClosedException, "the reactor is open");
        }
        assertNothingLeaked(device);
    }

    @Test
    void aFallbackIsCountedOnlyOnceItsHostCallbackWasEnqueued() {
        InstantDevice device = devices.track(InstantDevice.refusing());
        GpuStream stream = device.newStream();
        GpuEvent event = stream.event();
        IllegalStateException awaited = assertThrows(IllegalStateException.class, stream::await);
        assertTrue(awaited.getMessage().contains("refused both"), awaited.getMessage());
        IllegalStateException future = assertThrows(IllegalStateException.class, event::toCompletableFuture);
        assertTrue(future.getMessage().contains("refused both"), future.getMessage());
        ReactorStats s = device.reactor().stats();
        assertEquals(0, s.fallbacks(), "two refused host callbacks are no fallbacks: " + s);
        assertEquals(0, s.registrations(), s.toString());
        assertNothingLeaked(device);

        // The same reactor counts a host callback that was taken.
        device.acceptHostCallbacks = true;
        CompletableFuture<?> accepted = event.toCompletableFuture(new CountingExecutor());
        assertTrue(accepted.isDone(), "this test stream runs a host callback at once");
        assertEquals(1, device.reactor().stats().fallbacks());
    }

    @Test
    void onAClosedReactorTheNonBlockingFormsReportTheClosureInsteadOfThrowing() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        GpuEvent event = stream.event();
        device.close(); // closes the stream too: the reactor's closure is what is reported

        for (CompletableFuture<?> future : List.of(event.toCompletableFuture(),
                event.toCompletableFuture(new CountingExecutor()))) {
            assertTrue(future.isCompletedExceptionally(), "completed at once");
            ReactorClosedException e = assertInstanceOf(ReactorClosedException.class, future.exceptionNow());
            assertTrue(e.getMessage().contains(device.name()), e.getMessage());
        }

        CountingExecutor executor = new CountingExecutor();
        AtomicReference<RuntimeException> error = new AtomicReference<>();
        AtomicInteger done = new AtomicInteger();
        event.onComplete(executor, done::incrementAndGet, error::set);
        assertEquals(1, executor.tasks.get(), "onError ran on the given executor");
        assertInstanceOf(ReactorClosedException.class, error.get());
        assertEquals(0, done.get());

        // Bad arguments still throw at once.
        assertThrows(NullPointerException.class, () -> event.toCompletableFuture(null));
        assertThrows(NullPointerException.class, () -> event.onComplete(null, () -> {}, e -> {}));
        assertThrows(NullPointerException.class, () -> event.onComplete(executor, null, e -> {}));
        assertThrows(NullPointerException.class, () -> event.onComplete(executor, () -> {}, null));
        assertEquals(1, executor.tasks.get());
        gate.countDown();
        await().atMost(LONG).until(() -> device.reactor().isMemoryReleased());
    }

    // ---- cancellation --------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(value = CompletionStrategy.class, names = {"REACTOR", "HOST_CALLBACK"})
    void cancellingTheFutureWithdrawsItsRegistration(CompletionStrategy strategy) throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create(ReactorConfig.builder().strategy(strategy).build()));
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        GpuEvent event = stream.event();
        CountingExecutor executor = new CountingExecutor();
        CompletableFuture<?> cancelled = event.toCompletableFuture(executor);
        ReactorStats registered = device.reactor().stats();
        if (strategy == CompletionStrategy.REACTOR) {
            assertEquals(1, registered.armedNow(), registered.toString());
        } else {
            assertEquals(1, registered.fallbacks(), registered.toString());
        }

        assertTrue(cancelled.cancel(false)); // what a cancelled coroutine's await() does
        ReactorStats withdrawn = device.reactor().stats();
        assertEquals(1, withdrawn.abandoned(), withdrawn.toString());
        if (strategy == CompletionStrategy.REACTOR) {
            assertEquals(1, withdrawn.armedNow(), "the device write is still in flight: the slot stays armed");
        }

        gate.countDown();
        assertNothingLeaked(device);
        // A later registration on the same stream, completed through the same path, orders the
        // withdrawn one's (non-)delivery before it: the scanner delivers pass after pass (the
        // withdrawn slot was retired, nArmed back at 0, before this one was armed), and the stream
        // runs host callbacks in order.
        CountDownLatch gate2 = gate(stream);
        CountDownLatch ranToEnd = new CountDownLatch(1);
        CompletableFuture<?> later = stream.event().toCompletableFuture(task -> {
            executor.execute(task);
            ranToEnd.countDown(); // after the future's completion and its dependents
        });
        gate2.countDown();
        later.get(30, TimeUnit.SECONDS);
        assertTrue(ranToEnd.await(30, TimeUnit.SECONDS));

        assertEquals(1, executor.tasks.get(), "only the later registration's callback ran");
        assertTrue(event.isDone(), "its work is done (isDone() reports the work), though the withdrawn registration"
                + " delivered nothing");
        ReactorStats after = device.reactor().stats();
        assertEquals(1, after.abandoned(), "a future completed by the reactor withdraws nothing: " + after);
        assertEquals(registered.completions() + 1, after.completions(), after.toString());
        assertNothingLeaked(device);
    }

    // ---- callbacks that throw ------------------------------------------------------------------

    /** Executes nothing: as a shut-down executor does. */
    private static final Executor REJECTING = task -> {
        throw new RejectedExecutionException("test executor is shut down");
    };

    /**
     * Runs {@code test} with a device on the HOST_CALLBACK strategy (fast fault probes) and a
     * default uncaught-exception handler collecting what the library's threads report. Awaitility's
     * own catching of uncaught exceptions is turned off in these tests: here they are the observable.
     */
    private void withReportedExceptions(TestBody test) throws Exception {
        List<Throwable> reported = new CopyOnWriteArrayList<>();
        Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((thread, e) -> reported.add(e));
        try {
            test.run(devices.track(SimulatedDevice.create(ReactorConfig.builder()
                    .strategy(CompletionStrategy.HOST_CALLBACK).faultProbeInterval(Duration.ofMillis(1)).build())),
                    reported);
        } finally {
            Thread.setDefaultUncaughtExceptionHandler(previous);
        }
    }

    private interface TestBody {
        void run(SimulatedDevice device, List<Throwable> reported) throws Exception;
    }

    @Test
    void aCallbackThrowingOnTheStreamsThreadIsReportedNotTakenForAStreamFault() throws Exception {
        withReportedExceptions((device, reported) -> {
            SimulatedStream stream = device.newStream();
            CountDownLatch gate = gate(stream);
            stream.event().onComplete(REJECTING, () -> {}, e -> {}); // a host callback: HOST_CALLBACK
            gate.countDown();
            await().dontCatchUncaughtExceptions().atMost(LONG).until(() -> reported.size() == 1);
            assertInstanceOf(RejectedExecutionException.class, reported.get(0));
            stream.launchKernel(Duration.ZERO); // the stream did not fault
            stream.await();
            assertEquals(1, reported.size(), "nothing else went wrong: " + reported);
        });
    }

    @Test
    void aCallbackThrowingOnTheScannerIsReportedAndTheScannerGoesOn() throws Exception {
        withReportedExceptions((device, reported) -> {
            SimulatedStream faulty = device.newStream();
            CountDownLatch faultGate = gate(faulty);
            faulty.injectFault("simulated illegal address");
            faulty.event().onComplete(REJECTING, () -> {}, e -> {});
            faultGate.countDown(); // the scanner's fault probe fails the registration now
            await().dontCatchUncaughtExceptions().atMost(LONG).until(() -> reported.size() == 1);
            assertInstanceOf(RejectedExecutionException.class, reported.get(0));
            assertTrue(device.reactor().scannerThread().isAlive(), "the scanner survived");

            // ... and still probes: a second faulted stream's waiter is woken.
            SimulatedStream faulty2 = device.newStream();
            CountDownLatch faultGate2 = gate(faulty2);
            faulty2.injectFault("second simulated fault");
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread waiter = Thread.ofVirtual().start(() -> {
                try {
                    faulty2.await();
                } catch (Throwable e) {
                    thrown.set(e);
                }
            });
            await().dontCatchUncaughtExceptions().atMost(LONG).until(() -> ReactorTestSupport.parked(waiter));
            faultGate2.countDown();
            assertTrue(waiter.join(LONG));
            assertInstanceOf(GpuFaultException.class, thrown.get());
            assertEquals(1, reported.size(), "nothing else went wrong: " + reported);
        });
    }

    @Test
    void closingTheDeviceFromAFaultCallbackOnTheScannerDeliversEveryOutcomeOnce() throws Exception {
        // A direct executor runs the callbacks on the scanner, inside the delivery of the fault;
        // the first one closes the device there, so close() runs re-entrantly on the scanner.
        SimulatedDevice device = devices.track(SimulatedDevice.create(
                ReactorConfig.builder().faultProbeInterval(Duration.ofMillis(1)).build()));
        SimulatedStream faulty = device.newStream();
        CountDownLatch faultGate = gate(faulty);
        faulty.injectFault("simulated illegal address");
        SimulatedStream healthy = device.newStream();
        CountDownLatch healthyGate = gate(healthy);
        final int n = 4;
        List<AtomicInteger> errors = new ArrayList<>();
        List<AtomicReference<RuntimeException>> firstError = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            AtomicInteger count = new AtomicInteger();
            AtomicReference<RuntimeException> first = new AtomicReference<>();
            errors.add(count);
            firstError.add(first);
            faulty.event().onComplete(Runnable::run, () -> {}, e -> {
                first.compareAndSet(null, e);
                count.incrementAndGet();
                device.close();
            });
        }
        AtomicInteger healthyErrors = new AtomicInteger();
        healthy.event().onComplete(Runnable::run, () -> {}, e -> healthyErrors.incrementAndGet());
        assertEquals(n + 1, device.reactor().stats().armedNow());

        faultGate.countDown();
        await().atMost(LONG).until(() -> device.reactor().isClosed() && healthyErrors.get() > 0);
        await().atMost(LONG).until(() -> !device.reactor().scannerThread().isAlive());
        for (int i = 0; i < n; i++) {
            assertEquals(1, errors.get(i).get(), "registration " + i + ": onError ran once");
        }
        assertInstanceOf(GpuFaultException.class, firstError.get(0).get(), "the first one saw the fault");
        assertEquals(1, healthyErrors.get(), "the healthy stream's registration was closed once");
        healthyGate.countDown();
        await().atMost(LONG).until(() -> device.reactor().isMemoryReleased());
    }
}
