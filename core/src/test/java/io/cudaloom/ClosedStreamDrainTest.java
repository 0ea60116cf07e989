package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.LONG;
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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The corners of a closed stream's drain ({@link io.cudaloom.reactor.StreamDrain}) that the backend-independent
 * semantics suite ({@link StreamCloseSemantics}) does not reach: an event taken while the stream was
 * closing, a drain the stream refused, the threads that may not block on it, the proof it shares
 * with coalesced waits, and closes racing awaits and each other.
 */
class ClosedStreamDrainTest {
    @RegisterExtension
    final OpenedDevices devices = new OpenedDevices();

    @Test
    void anEventTakenWhileTheStreamWasClosingIsRefusedByEveryFormEvenOnceTheDrainIsDone() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        GpuEvent covered = stream.event();
        stream.close();
        // What an event taken on another thread between the close's count and its compare-and-set
        // looks like: it stands for a submission the drain does not cover.
        stream.noteExternalSubmission();
        GpuEvent beyond = new GpuEvent(device.reactor(), stream);
        gate.countDown();
        covered.await();

        List<Executable> forms = List.of(
                beyond::await,
                () -> beyond.await(LONG),
                () -> beyond.await(0, TimeUnit.SECONDS),
                beyond::awaitUninterruptibly,
                beyond::toCompletableFuture,
                () -> beyond.subscribe(Runnable::run, e -> fail("delivered " + e)),
                () -> beyond.onComplete(Runnable::run, () -> fail("completed"), e -> fail(e)));
        for (Executable form : forms) {
            IllegalStateException e = assertThrows(IllegalStateException.class, form);
            assertFalse(e instanceof ReactorClosedException, "the device is open: " + e);
            assertTrue(e.getMessage().startsWith("stream " + stream + " is closed: this event was taken while it"),
                    e.getMessage());
        }
        assertTrue(beyond.isDone(), "the stream is idle: its work is done (and an await throws at once)");
        assertNothingLeaked(device);
    }

    @Test
    void aDrainTheStreamRefusesFailsTheEventsAndTheCloseItselfSucceeds() {
        InstantDevice device = devices.track(InstantDevice.refusing()); // refuses flag writes and host callbacks
        GpuStream stream = device.newStream();
        GpuEvent event = stream.event();
        stream.close(); // must not throw
        assertTrue(stream.isClosed());
        IllegalStateException awaited = assertThrows(IllegalStateException.class, event::await);
        assertTrue(awaited.getMessage().contains("refused both"), awaited.getMessage());
        assertInstanceOf(IllegalStateException.class, awaited.getCause(), "the drain's own failure, as the cause");
        CompletableFuture<?> future = event.toCompletableFuture(Runnable::run);
        assertInstanceOf(IllegalStateException.class, future.exceptionNow(), "reported through the future");
        ReactorStats s = device.reactor().stats();
        assertEquals(0, s.registrations() + s.fallbacks(), "nothing was taken: " + s);
        assertNothingLeaked(device);
    }

    /**
     * {@code close()} never throws, as documented: not when the backend's query throws (the drain
     * queried the stream outside any try and the close threw it, before), nor when its shutdown
     * does. The query's failure becomes the drain's outcome instead, and the shutdown's is logged.
     */
    @Test
    void aCloseNeverThrowsWhenTheBackendsQueryOrShutdownDoes() throws Exception {
        // No counted work: with coalescing (the default) the drain would know it done without asking.
        InstantDevice device = devices.track(InstantDevice.create(ReactorConfig.builder().coalesce(false).build()));
        InstantDevice.InstantStream stream = device.newStream();
        GpuEvent before = stream.event();
        IllegalStateException gone = new IllegalStateException("the driver lost the stream (test)");
        stream.queryFailureEverywhere = gone;
        stream.shutdownFailure = new IllegalStateException("shutdown failed (test)");
        try (LogCapture log = new LogCapture()) {
            assertDoesNotThrow(stream::close);
            assertTrue(stream.isClosed());
            assertTrue(log.records().stream().anyMatch(r -> r.getThrown() == stream.shutdownFailure
                    && r.getMessage().contains("failed to shut down " + stream)), "the shutdown's failure is logged");
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, before::await);
        assertSame(gone, e.getCause(), "the query's failure is the drain's outcome");
        assertEquals(0, stream.drainedCalls.get(), "a failed drain does not tell the backend its work is done");
        stream.queryFailureEverywhere = null;
        assertNothingLeaked(device);
    }

    /** The backend hears once, after its shutdown, that the closed stream's work is done (a second close changes nothing). */
    @Test
    void theBackendIsToldOnceThatTheClosedStreamsWorkIsDone() throws Exception {
        InstantDevice device = devices.track(InstantDevice.create(ReactorConfig.defaults()));
        InstantDevice.InstantStream busy = device.newStream();
        InstantDevice.InstantStream.Gate gate = busy.hold();
        GpuEvent event = busy.event();
        busy.close();
        busy.close();
        assertEquals(0, busy.drainedCalls.get(), "the work is not done yet");
        gate.open();
        event.await();
        await().atMost(LONG).until(() -> busy.drainedCalls.get() == 1);
        assertNothingLeaked(device);
        assertEquals(1, busy.drainedCalls.get());
    }

    @Test
    void theScannerMayCloseAStreamButNotBlockOnItsDrain() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream closing = device.newStream();
        SimulatedStream trigger = device.newStream();
        CountDownLatch closingGate = gate(closing);
        CountDownLatch triggerGate = gate(trigger);
        GpuEvent takenBefore = closing.event();
        AtomicReference<Throwable> onScanner = new AtomicReference<>();
        CountDownLatch ran = new CountDownLatch(1);
        // A direct executor: the callback runs on the scanner, which delivered the trigger's slot.
        trigger.event().onComplete(Runnable::run, () -> {
            closing.close(); // non-blocking: allowed there
            try {
                takenBefore.await();
                onScanner.set(new AssertionError("await returned on the scanner"));
            } catch (Throwable t) {
                onScanner.set(t);
            }
            ran.countDown();
        }, onScanner::set);
        triggerGate.countDown();
        assertTrue(ran.await(LONG.toSeconds(), TimeUnit.SECONDS));
        IllegalStateException refused = assertInstanceOf(IllegalStateException.class, onScanner.get());
        assertTrue(refused.getMessage().contains("scanner thread"), refused.getMessage());
        assertTrue(closing.isClosed());
        assertFalse(takenBefore.isDone());

        closingGate.countDown();
        assertTrue(takenBefore.await(LONG), "the drain registered on the scanner serves the event");
        assertNothingLeaked(device);
    }

    /**
     * When waiters are coalesced, the counts are complete and an earlier proof answers for an event
     * of a closed stream at once, as it does for an open one; otherwise (uncounted raw-stream work
     * may exist) the event waits for the drain, whose write follows all of the stream's work.
     */
    @ParameterizedTest
    @EnumSource(names = {"TRUE", "FALSE"}, value = Coalescing.class)
    void anEarlierProofAnswersForAClosedStreamsEventOnlyWhenCoalescing(Coalescing coalescing) throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create(
                ReactorConfig.builder().coalesce(coalescing == Coalescing.TRUE).build()));
        SimulatedStream stream = device.newStream();
        stream.launch(() -> {});
        GpuEvent proven = stream.event();
        GpuEvent sameWork = stream.event(); // the same counted work, never awaited
        proven.await(); // the proof
        CountDownLatch gate = gate(stream); // later work, held
        stream.close();
        assertEquals(coalescing == Coalescing.TRUE, sameWork.await(Duration.ZERO),
                "answered by the proof only when coalescing");
        gate.countDown();
        assertTrue(sameWork.await(LONG));
        assertNothingLeaked(device);
    }

    enum Coalescing { TRUE, FALSE }

    /**
     * Closes racing each other and awaits: exactly one drain is published, every event taken
     * before the close completes, and nothing is ever queued behind the simulated stream's end
     * (it would never run: a registration stranded, a slot never back).
     */
    @ParameterizedTest
    @EnumSource(value = CompletionStrategy.class, names = {"REACTOR", "HOST_CALLBACK"})
    void concurrentClosesAndAwaitsStrandNothing(CompletionStrategy strategy) throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create(ReactorConfig.builder().strategy(strategy).build()));
        final int rounds = 100;
        final int parties = 5;
        AtomicInteger refusedLateEvents = new AtomicInteger();
        for (int round = 0; round < rounds; round++) {
            SimulatedStream stream = device.newStream();
            stream.launchKernel(Duration.ofNanos(round % 2 == 0 ? 0 : 50_000));
            GpuEvent before = stream.event();
            CyclicBarrier start = new CyclicBarrier(parties);
            List<CompletableFuture<String>> outcomes = new ArrayList<>();
            for (int p = 0; p < parties; p++) {
                int party = p;
                CompletableFuture<String> outcome = new CompletableFuture<>();
                outcomes.add(outcome);
                Thread.ofVirtual().start(() -> {
                    try {
                        start.await();
                        switch (party) {
                            case 0, 1 -> stream.close();
                            case 2 -> before.await();
                            case 3 -> before.toCompletableFuture().get(LONG.toSeconds(), TimeUnit.SECONDS);
                            default -> {
                                try {
                                    stream.event().await(); // open or closed: either way it ends
                                } catch (IllegalStateException closed) {
                                    refusedLateEvents.incrementAndGet();
                                }
                            }
                        }
                        outcome.complete("ok");
                    } catch (Throwable t) {
                        outcome.completeExceptionally(t);
                    }
                });
            }
            for (CompletableFuture<String> outcome : outcomes) {
                try {
                    assertEquals("ok", outcome.get(LONG.toSeconds(), TimeUnit.SECONDS), "round " + round);
                } catch (ExecutionException e) {
                    throw new AssertionError("round " + round + ": a party failed", e.getCause());
                }
            }
            assertTrue(stream.isClosed());
            assertTrue(before.isDone(), "round " + round);
        }
        assertNothingLeaked(device); // a stranded registration's slot would never come back
        await().atMost(LONG).until(() -> TestAccess.probes(device).liveStreams() == 0); // every stream ran to its end
        System.out.println("ClosedStreamDrainTest race (" + strategy + "): " + refusedLateEvents.get() + " of "
                + rounds + " late events refused, the rest served");
    }
}
