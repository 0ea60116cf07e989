package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.gate;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.AwaitListener.Outcome;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.Test;

/**
 * {@link CompletionReactor#addAwaitListener}: each blocking await that registered is reported once,
 * as it ends, on its own thread, with its outcome and wait, after the stats count it; removal stops
 * the calls; a throwing listener changes nothing of the await.
 */
class AwaitListenerTest {
    private static final Duration LONG = Duration.ofSeconds(30);

    /** One call: what it was told, on which thread, and the stats as it was called. */
    record Call(Outcome outcome, long nanos, Thread thread, ReactorStats stats) {}

    private static AwaitListener recording(CompletionReactor reactor, Queue<Call> calls) {
        return (outcome, nanos) -> calls.add(new Call(outcome, nanos, Thread.currentThread(), reactor.stats()));
    }

    @Test
    void everyOutcomeIsReportedOnceOnTheAwaitingThreadAfterTheStatsCountIt() throws Exception {
        SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build());
        CompletionReactor reactor = device.reactor();
        Queue<Call> calls = new ConcurrentLinkedQueue<>();
        reactor.addAwaitListener(recording(reactor, calls));
        try {
            SimulatedStream stream = device.newStream();
            stream.launchKernel(Duration.ofMillis(2));
            stream.await();
            Call completed = calls.remove();
            assertEquals(Outcome.COMPLETED, completed.outcome());
            assertSame(Thread.currentThread(), completed.thread());
            assertTrue(completed.nanos() >= TimeUnit.MILLISECONDS.toNanos(1), "waited for the 2 ms kernel: " + completed);
            assertEquals(1, completed.stats().completions(), "counted before the call: " + completed.stats());
            assertEquals(1, reactor.awaitLatency().count(), "the await the histogram counts");

            stream.await(); // known complete: registers nothing, not reported (nor in the histogram)
            assertTrue(calls.isEmpty(), calls.toString());

            CountDownLatch gate = gate(stream);
            assertFalse(stream.event().await(5, TimeUnit.MILLISECONDS));
            Call timeout = calls.remove();
            assertEquals(Outcome.TIMEOUT, timeout.outcome());
            assertTrue(timeout.nanos() >= TimeUnit.MILLISECONDS.toNanos(5), timeout.toString());
            assertEquals(1, timeout.stats().timeouts(), "counted before the call: " + timeout.stats());

            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread waiter = Thread.ofVirtual().start(() -> {
                try {
                    stream.await();
                } catch (Throwable t) {
                    thrown.set(t);
                }
            });
            await().atMost(LONG).until(() -> reactor.stats().waitersNow() == 1);
            waiter.interrupt();
            waiter.join();
            assertInstanceOf(InterruptedException.class, thrown.get());
            Call interrupted = calls.remove();
            assertEquals(Outcome.INTERRUPTED, interrupted.outcome());
            assertSame(waiter, interrupted.thread());
            gate.countDown();
            // A waiter known to be parked before its work completes: an await right after the
            // gate's release may find the work already proven (the interrupted waiter's group
            // write, which covers the gate, can land first) and then registers nothing.
            CountDownLatch second = gate(stream);
            AtomicReference<Throwable> completerFailed = new AtomicReference<>();
            Thread completer = Thread.ofVirtual().start(() -> {
                try {
                    stream.await();
                } catch (Throwable t) {
                    completerFailed.set(t);
                }
            });
            await().atMost(LONG).until(() -> reactor.stats().waitersNow() == 1);
            second.countDown();
            completer.join();
            assertNull(completerFailed.get());
            Call released = calls.remove();
            assertEquals(Outcome.COMPLETED, released.outcome());
            assertSame(completer, released.thread());

            SimulatedStream faulty = device.newStream();
            faulty.injectFault("an illegal address");
            assertThrows(GpuFaultException.class, faulty::await);
            Call fault = calls.remove();
            assertEquals(Outcome.FAULT, fault.outcome());
            assertEquals(1, fault.stats().faults(), fault.stats().toString());

            SimulatedStream held = device.newStream();
            CountDownLatch never = gate(held);
            thrown.set(null);
            Thread closedWaiter = Thread.ofVirtual().start(() -> {
                try {
                    held.await();
                } catch (Throwable t) {
                    thrown.set(t);
                }
            });
            await().atMost(LONG).until(() -> reactor.stats().waitersNow() == 1);
            device.close();
            closedWaiter.join();
            never.countDown();
            assertInstanceOf(ReactorClosedException.class, thrown.get());
            assertEquals(Outcome.CLOSED, calls.remove().outcome());
            assertTrue(calls.isEmpty(), calls.toString());
        } finally {
            device.close();
        }
    }

    @Test
    void aRemovedListenerIsNoLongerCalledAndEachAdditionCounts() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build())) {
            CompletionReactor reactor = device.reactor();
            Queue<Call> calls = new ConcurrentLinkedQueue<>();
            AwaitListener listener = recording(reactor, calls);
            assertFalse(reactor.removeAwaitListener(listener), "not added");
            reactor.addAwaitListener(listener);
            reactor.addAwaitListener(listener);
            SimulatedStream stream = device.newStream();
            stream.launchKernel(Duration.ofMillis(1));
            stream.await();
            assertEquals(2, calls.size(), "added twice, called twice");
            assertTrue(reactor.removeAwaitListener(listener));
            calls.clear();
            stream.launchKernel(Duration.ofMillis(1));
            stream.await();
            assertEquals(1, calls.size(), "one addition left");
            assertTrue(reactor.removeAwaitListener(listener));
            assertFalse(reactor.removeAwaitListener(listener));
            calls.clear();
            stream.launchKernel(Duration.ofMillis(1));
            stream.await();
            assertTrue(calls.isEmpty(), calls.toString());
            assertThrows(NullPointerException.class, () -> reactor.addAwaitListener(null));
        }
    }

    @Test
    void aThrowingListenerChangesNothingOfTheAwaitAndIsLoggedOnceAtWarning() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build());
                LogCapture log = new LogCapture()) {
            CompletionReactor reactor = device.reactor();
            Queue<Call> calls = new ConcurrentLinkedQueue<>();
            reactor.addAwaitListener((outcome, nanos) -> {
                throw new IllegalStateException("a broken listener");
            });
            reactor.addAwaitListener(recording(reactor, calls));
            SimulatedStream stream = device.newStream();
            for (int i = 0; i < 3; i++) {
                stream.launchKernel(Duration.ofMillis(1));
                stream.await(); // returns normally
            }
            CountDownLatch gate = gate(stream);
            assertFalse(stream.event().await(2, TimeUnit.MILLISECONDS), "still a timeout, not the listener's exception");
            gate.countDown();
            assertEquals(List.of(Outcome.COMPLETED, Outcome.COMPLETED, Outcome.COMPLETED, Outcome.TIMEOUT),
                    calls.stream().map(Call::outcome).toList(), "the next listener is still called");
            List<LogRecord> warnings = log.records().stream().filter(r -> r.getLevel() == Level.WARNING)
                    .filter(r -> r.getMessage().contains("await listener")).toList();
            assertEquals(1, warnings.size(), "once at WARNING: " + warnings);
            assertEquals("a broken listener", warnings.get(0).getThrown().getMessage());
        }
    }
}
