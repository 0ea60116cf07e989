package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.gate;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code java.util.concurrent}'s conventions, as {@code CountDownLatch.await} keeps them: timeouts
 * that do not wait, saturate or are huge; an interrupt set before the call; and misuse that would
 * stall the reactor refused with a clear message.
 */
class ConcurrencyConventionsTest {
    private final SimulatedDevice device = SimulatedDevice.create();
    private final SimulatedStream stream = device.newStream();

    @AfterEach
    void close() {
        device.close();
    }

    @Test
    void aZeroOrNegativeTimeoutDoesNotWaitAndAnswersWhetherTheWorkIsDone() throws Exception {
        CountDownLatch gate = gate(stream);
        GpuEvent busy = stream.event();
        assertFalse(busy.await(Duration.ofMillis(-1)), "busy: a negative timeout answers false at once");
        assertFalse(busy.await(-5, TimeUnit.SECONDS));
        assertFalse(busy.await(Duration.ZERO));
        gate.countDown();
        busy.await();
        assertTrue(busy.await(Duration.ofMillis(-1)), "done: a negative timeout answers true");
        assertTrue(device.newStream().event().await(Long.MIN_VALUE, TimeUnit.NANOSECONDS), "idle stream: true");
    }

    @Test
    void aHugeTimeoutSaturatesInsteadOfThrowing() throws Exception {
        CountDownLatch gate = gate(stream);
        GpuEvent event = stream.event();
        AtomicReference<Object> outcome = new AtomicReference<>();
        Thread waiter = Thread.ofVirtual().start(() -> {
            try {
                outcome.set(event.await(Duration.ofSeconds(Long.MAX_VALUE)));
            } catch (Throwable t) {
                outcome.set(t);
            }
        });
        // Neither an exception nor an early "timed out": the waiter parks until the gate opens.
        await().atMost(Duration.ofSeconds(30)).until(() -> waiter.getState() == Thread.State.WAITING
                || waiter.getState() == Thread.State.TIMED_WAITING || outcome.get() != null);
        assertEquals(null, outcome.get(), "a huge timeout neither throws nor times out at once");
        gate.countDown();
        assertTrue(waiter.join(Duration.ofSeconds(30)));
        assertEquals(Boolean.TRUE, outcome.get(), "waits, then reports completion");
        assertTrue(event.await(Long.MAX_VALUE, TimeUnit.DAYS));
    }

    @Test
    void anInterruptSetBeforeTheCallThrowsOnEveryPathAlsoWhenDone() throws Exception {
        GpuEvent idle = stream.event(); // nothing submitted: idle
        GpuEvent done = stream.event();
        done.await();
        assertTrue(done.isDone());
        for (GpuEvent e : new GpuEvent[] {idle, done}) {
            Thread.currentThread().interrupt();
            assertThrows(InterruptedException.class, e::await);
            assertFalse(Thread.interrupted(), "the interrupt status is cleared, as JUC does");
            Thread.currentThread().interrupt();
            assertThrows(InterruptedException.class, () -> e.await(Duration.ofSeconds(1)));
            Thread.currentThread().interrupt();
            assertThrows(InterruptedException.class, () -> e.await(1, TimeUnit.SECONDS));
            assertFalse(Thread.interrupted());
        }
        Thread.currentThread().interrupt();
        done.awaitUninterruptibly(); // keeps the interrupt status, as it says
        assertTrue(Thread.interrupted());
    }

    @Test
    void awaitingOnTheScannerThreadIsRefusedWithAClearMessage() throws Exception {
        SimulatedStream other = device.newStream();
        CountDownLatch gate = gate(stream);
        CountDownLatch otherGate = gate(other);
        CompletableFuture<Throwable> seen = new CompletableFuture<>();
        stream.event().onComplete(Runnable::run, () -> { // a direct executor: runs on the scanner
            try {
                other.event().await();
                seen.complete(null);
            } catch (Throwable t) {
                seen.complete(t);
            }
        }, e -> seen.complete(e));
        gate.countDown();
        IllegalStateException e = assertInstanceOf(IllegalStateException.class, seen.get(30, TimeUnit.SECONDS));
        assertTrue(e.getMessage().contains("scanner thread"), e.getMessage());
        otherGate.countDown();
        other.event().await(); // the reactor still serves everyone
    }

    @Test
    void aSimulatedKernelThatAwaitsItsOwnStreamIsRefused() throws Exception {
        AtomicReference<Throwable> seen = new AtomicReference<>();
        stream.launch(() -> {
            try {
                stream.event().await();
            } catch (Throwable t) {
                seen.set(t);
            }
        });
        stream.event().await();
        IllegalStateException e = assertInstanceOf(IllegalStateException.class, seen.get());
        assertTrue(e.getMessage().contains("own work"), e.getMessage());
    }

    @Test
    void aSimulatedKernelsExceptionIsTheFaultsCause() throws Exception {
        IllegalArgumentException boom = new IllegalArgumentException("index 7 out of range (test)");
        stream.launch(() -> {
            throw boom;
        });
        GpuFaultException e = assertThrows(GpuFaultException.class, () -> stream.event().await());
        assertSame(boom, rootCause(e), "the kernel's exception, with its stack trace, is the cause");
        CompletableFuture<?> f = stream.event().toCompletableFuture();
        ExecutionException ee = assertThrows(ExecutionException.class, () -> f.get(30, TimeUnit.SECONDS));
        assertSame(boom, rootCause(ee));
    }

    private static Throwable rootCause(Throwable t) {
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }
}
