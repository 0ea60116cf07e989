package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.LONG;
import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static io.cudaloom.ReactorTestSupport.gate;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.*;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link GpuEvent#subscribe}: one outcome, on the given executor, handed over by the delivering
 * thread; {@link Subscription#cancel()} withdraws it exactly when it returns true.
 */
class SubscriptionTest {
    @RegisterExtension
    final OpenedDevices devices = new OpenedDevices();

    /** Runs each task on the calling thread; records the outcome, the thread and how often it ran. */
    private static final class Recorder implements Executor {
        final AtomicInteger tasks = new AtomicInteger();
        final AtomicInteger outcomes = new AtomicInteger();
        final AtomicReference<Thread> ranOn = new AtomicReference<>();
        final AtomicReference<RuntimeException> failure = new AtomicReference<>();
        final CountDownLatch done = new CountDownLatch(1);

        @Override
        public void execute(Runnable task) {
            tasks.incrementAndGet();
            task.run();
        }

        void accept(RuntimeException e) {
            ranOn.set(Thread.currentThread());
            failure.set(e);
            outcomes.incrementAndGet();
            done.countDown();
        }

        Subscription subscribe(GpuEvent event) {
            return event.subscribe(this, this::accept);
        }
    }

    @Test
    void successIsDeliveredAsNullOnTheExecutorFromTheScanner() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        GpuEvent event = stream.event();
        Recorder r = new Recorder();
        AtomicReference<Boolean> doneSeenInCallback = new AtomicReference<>();
        Subscription s = event.subscribe(r, e -> {
            doneSeenInCallback.set(event.isDone());
            r.accept(e);
        });
        assertEquals(1, device.reactor().stats().armedNow(), "registered a slot, parked nothing");
        assertEquals(0, r.tasks.get(), "nothing delivered while the work runs");

        gate.countDown();
        assertTrue(r.done.await(LONG.toSeconds(), TimeUnit.SECONDS));
        assertNull(r.failure.get(), "null means success");
        assertSame(device.reactor().scannerThread(), r.ranOn.get(), "a direct executor runs on the deliverer");
        assertEquals(Boolean.TRUE, doneSeenInCallback.get(), "isDone() is true when onDone is given null");
        assertTrue(event.isDone());

        assertFalse(s.cancel(), "a delivered subscription withdraws nothing");
        assertEquals(0, device.reactor().stats().abandoned());
        assertEquals(1, r.outcomes.get());
        assertNothingLeaked(device);
    }

    @Test
    void anOutcomeKnownAtOnceIsHandedToTheExecutorOnTheCallingThread() {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        GpuEvent idle = stream.event();
        Recorder first = new Recorder();
        assertFalse(first.subscribe(idle).cancel(), "delivered before subscribe returned");
        assertEquals(1, first.outcomes.get());
        assertSame(Thread.currentThread(), first.ranOn.get());
        assertNull(first.failure.get());
        assertTrue(idle.isDone());

        Recorder again = new Recorder(); // the event is done: no reactor call at all
        long immediateBefore = device.reactor().stats().immediate();
        assertFalse(again.subscribe(idle).cancel());
        assertEquals(1, again.outcomes.get());
        assertEquals(immediateBefore, device.reactor().stats().immediate(), "answered from isDone()");
        assertEquals(0, device.reactor().stats().abandoned());
    }

    /**
     * Wherever the outcome is known while subscribing (a done event, an idle stream, a fault, a
     * closed device, a closed stream whose drain has settled), the handle is the one
     * {@link GpuEvent#DELIVERED}: one sentinel for "nothing to withdraw", not one per layer (the
     * reactor's layers answer with their one {@code GpuEvent.DELIVERED}, which the event hands
     * out as this).
     */
    @Test
    void everyOutcomeKnownAtOnceGetsTheOneDeliveredHandle() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        GpuEvent idle = stream.event();
        assertSame(GpuEvent.DELIVERED, new Recorder().subscribe(idle), "an idle stream (CallbackRegistrations)");
        assertSame(GpuEvent.DELIVERED, new Recorder().subscribe(idle), "a done event (GpuEvent)");

        SimulatedStream faulty = device.newStream();
        faulty.injectFault("illegal address (injected)");
        Recorder fault = new Recorder();
        await().atMost(LONG).until(() -> {
            Subscription s = fault.subscribe(faulty.event());
            return s == GpuEvent.DELIVERED && fault.failure.get() instanceof GpuFaultException;
        });

        // Without coalescing no proof is trusted, so the drain itself answers (StreamDrain.subscribe).
        SimulatedDevice uncoalesced = devices.track(SimulatedDevice.create(ReactorConfig.builder().coalesce(false).build()));
        SimulatedStream closing = uncoalesced.newStream();
        GpuEvent beforeClose = closing.event();
        closing.close(); // idle: the drain settles at once
        assertSame(GpuEvent.DELIVERED, new Recorder().subscribe(beforeClose), "a settled drain (StreamDrain)");

        GpuEvent busy = device.newStream().event();
        device.close();
        Recorder closed = new Recorder();
        assertSame(GpuEvent.DELIVERED, closed.subscribe(busy), "a closed device");
        assertInstanceOf(ReactorClosedException.class, closed.failure.get());
    }

    @Test
    void aFaultIsDeliveredAsGpuFaultException() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        stream.injectFault("illegal address (injected)");
        GpuEvent event = stream.event();
        Recorder r = new Recorder();
        Subscription s = r.subscribe(event);
        gate.countDown();
        assertTrue(r.done.await(LONG.toSeconds(), TimeUnit.SECONDS));
        GpuFaultException fault = assertInstanceOf(GpuFaultException.class, r.failure.get());
        assertTrue(fault.getMessage().contains("illegal address (injected)"), fault.getMessage());
        assertFalse(event.isDone());
        assertFalse(s.cancel());

        Recorder late = new Recorder(); // subscribing to a faulted stream reports it the same way
        assertFalse(late.subscribe(stream.event()).cancel());
        assertInstanceOf(GpuFaultException.class, late.failure.get());
        assertEquals(1, late.outcomes.get());
    }

    @Test
    void closingTheDeviceDeliversReactorClosedExceptionAndLaterSubscriptionsGetItAtOnce() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        GpuEvent event = stream.event();
        Recorder r = new Recorder();
        Subscription s = r.subscribe(event);
        device.close();
        assertTrue(r.done.await(LONG.toSeconds(), TimeUnit.SECONDS));
        ReactorClosedException closed = assertInstanceOf(ReactorClosedException.class, r.failure.get());
        assertTrue(closed.getMessage().contains(device.name()), closed.getMessage());
        assertFalse(s.cancel());

        Recorder late = new Recorder();
        assertFalse(late.subscribe(event).cancel(), "reported, not thrown, and nothing to withdraw");
        assertInstanceOf(ReactorClosedException.class, late.failure.get());
        assertSame(Thread.currentThread(), late.ranOn.get());
        assertEquals(0, device.reactor().stats().abandoned());
        gate.countDown();
        await().atMost(LONG).until(() -> device.reactor().isMemoryReleased());
    }

    @Test
    void badArgumentsThrowAtOnce() {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        GpuEvent event = stream.event();
        Recorder r = new Recorder();
        assertThrows(NullPointerException.class, () -> event.subscribe(null, e -> {}));
        assertThrows(NullPointerException.class, () -> event.subscribe(r, null));
        assertEquals(0, r.tasks.get());
    }

    @Test
    void anEventTakenBeforeTheStreamsCloseIsDeliveredFromTheScannerAndItsSubscriptionCanBeCancelled()
            throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        GpuEvent event = stream.event();
        stream.close();
        Recorder r = new Recorder();
        Recorder cancelled = new Recorder();
        Subscription s = r.subscribe(event);
        Subscription withdrawn = cancelled.subscribe(event);
        assertEquals(0, r.tasks.get(), "nothing delivered while the work runs");
        assertTrue(withdrawn.cancel(), "withdrawn before the delivery");
        assertFalse(withdrawn.cancel(), "idempotent");
        assertEquals(1, device.reactor().stats().registrations(), "only the close's own registration: " + device.reactor().stats());

        gate.countDown();
        assertTrue(r.done.await(LONG.toSeconds(), TimeUnit.SECONDS));
        assertNull(r.failure.get(), "null means success");
        assertSame(device.reactor().scannerThread(), r.ranOn.get(), "a direct executor runs on the deliverer");
        assertTrue(event.isDone());
        assertFalse(s.cancel(), "a delivered subscription withdraws nothing");
        assertEquals(0, cancelled.tasks.get(), "a cancelled subscription never reaches its executor");

        Recorder late = new Recorder(); // the event is done: handed over at once, on this thread
        assertFalse(late.subscribe(event).cancel());
        assertSame(Thread.currentThread(), late.ranOn.get());
        IllegalStateException e = assertThrows(IllegalStateException.class, stream::event);
        assertEquals("stream " + stream + " is closed", e.getMessage());
        assertNothingLeaked(device);
    }

    @ParameterizedTest
    @EnumSource(value = CompletionStrategy.class, names = {"REACTOR", "HOST_CALLBACK"})
    void cancelWithdrawsTheRegistrationAndTheCallbackNeverRuns(CompletionStrategy strategy) throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create(ReactorConfig.builder().strategy(strategy).build()));
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        GpuEvent event = stream.event();
        Recorder r = new Recorder();
        Subscription s = r.subscribe(event);

        assertTrue(s.cancel(), "withdrawn before the work completed");
        assertFalse(s.cancel(), "idempotent: the second cancel withdraws nothing");
        ReactorStats withdrawn = device.reactor().stats();
        assertEquals(1, withdrawn.abandoned(), "counted once: " + withdrawn);

        gate.countDown();
        assertNothingLeaked(device); // the slot (if any) came back once the device's write landed
        // A later registration on the same stream is delivered after the withdrawn one would have
        // been (the scanner delivers pass after pass, the stream runs host callbacks in order).
        Recorder later = new Recorder();
        CountDownLatch gate2 = gate(stream);
        later.subscribe(stream.event());
        gate2.countDown();
        assertTrue(later.done.await(LONG.toSeconds(), TimeUnit.SECONDS));
        assertEquals(0, r.tasks.get(), "the executor was never called for the withdrawn subscription");
        assertEquals(0, r.outcomes.get());
        assertTrue(event.isDone(), "its work is done (isDone() reports the work), though nothing was delivered for it");
        assertEquals(1, device.reactor().stats().abandoned());
        assertNothingLeaked(device);
    }

    /**
     * Cancel racing delivery: for every subscription exactly one side wins. A true cancel means the
     * callback never ran; a false one means it ran exactly once; the reactor counted exactly the
     * true ones as abandoned.
     */
    @ParameterizedTest
    @EnumSource(value = CompletionStrategy.class, names = {"REACTOR", "HOST_CALLBACK"})
    void cancelRacingDeliveryHasExactlyOneOutcome(CompletionStrategy strategy) throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create(ReactorConfig.builder().strategy(strategy).build()));
        SimulatedStream stream = device.newStream();
        final int n = 400;
        AtomicInteger[] ran = new AtomicInteger[n];
        boolean[] cancelled = new boolean[n];
        AtomicReferenceArray<RuntimeException> failures = new AtomicReferenceArray<>(n);
        CyclicBarrier start = new CyclicBarrier(2);
        AtomicReferenceArray<CountDownLatch> gates = new AtomicReferenceArray<>(n); // set before the barrier
        Thread opener = Thread.ofPlatform().name("gate-opener").start(() -> {
            try {
                for (int i = 0; i < n; i++) {
                    start.await();
                    gates.get(i).countDown();
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        for (int i = 0; i < n; i++) {
            int k = i;
            ran[k] = new AtomicInteger();
            gates.set(k, gate(stream));
            Subscription s = stream.event().subscribe(Runnable::run, e -> {
                failures.set(k, e);
                ran[k].incrementAndGet();
            });
            start.await(LONG.toSeconds(), TimeUnit.SECONDS);
            // A few microseconds of jitter so that both sides win some of the races.
            for (int spin = ThreadLocalRandom.current().nextInt(2_000); spin > 0; spin--) {
                Thread.onSpinWait();
            }
            cancelled[k] = s.cancel();
        }
        opener.join(LONG);

        int withdrawn = 0;
        for (boolean c : cancelled) {
            withdrawn += c ? 1 : 0;
        }
        int expectedRuns = n - withdrawn;
        await().atMost(LONG).until(() -> {
            int runs = 0;
            for (AtomicInteger r : ran) {
                runs += r.get();
            }
            return runs >= expectedRuns;
        });
        assertNothingLeaked(device);
        Recorder barrier = new Recorder(); // delivered after every earlier one (see above)
        CountDownLatch gate = gate(stream);
        barrier.subscribe(stream.event());
        gate.countDown();
        assertTrue(barrier.done.await(LONG.toSeconds(), TimeUnit.SECONDS));

        for (int i = 0; i < n; i++) {
            assertEquals(cancelled[i] ? 0 : 1, ran[i].get(), "subscription " + i + " cancelled=" + cancelled[i]);
            assertNull(failures.get(i), "subscription " + i + " succeeded");
        }
        assertEquals(withdrawn, device.reactor().stats().abandoned(), "abandoned counts the true cancels");
        System.out.printf("SubscriptionTest race (%s): %d of %d withdrawn, %d delivered%n",
                strategy, withdrawn, n, expectedRuns);
    }
}
