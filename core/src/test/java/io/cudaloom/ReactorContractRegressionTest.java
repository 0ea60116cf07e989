package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static io.cudaloom.ReactorTestSupport.gate;
import static io.cudaloom.ReactorTestSupport.parked;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.InstantDevice.InstantStream;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Contract breaks found by a test suite written against the public API, kept as regressions:
 * a faulted stream's quarantined slot must come back while the reactor is otherwise idle, and
 * every completion strategy must let {@code close()} and an interrupt end an untimed await.
 */
class ReactorContractRegressionTest {
    private static final Duration SOON = Duration.ofSeconds(5);

    @Test
    void aQuarantinedSlotComesBackWithNoOtherActivityOnTheReactor() throws Exception {
        InstantDevice device = InstantDevice.holding(
                ReactorConfig.builder().faultProbeInterval(Duration.ofMillis(1)).build());
        try {
            InstantStream stream = device.newStream();
            stream.settled = false; // the flag write stays pending until the test says otherwise
            AtomicReference<Throwable> outcome = new AtomicReference<>();
            Thread waiter = Thread.ofVirtual().start(() -> {
                try {
                    stream.event().await();
                } catch (Throwable t) {
                    outcome.set(t);
                }
            });
            await().atMost(SOON).until(() -> device.reactor().stats().armedNow() == 1);
            stream.faulted = true;
            assertTrue(waiter.join(SOON), "the waiter is woken by the fault probe");
            assertInstanceOf(GpuFaultException.class, outcome.get());
            ReactorStats held = device.reactor().stats();
            assertEquals(1, held.quarantined(), "the dead stream's write may still land: " + held);
            assertEquals(0, held.armedNow(), "nothing armed: the scanner would park untimed: " + held);

            stream.settled = true; // now nothing can land; no registration, no other stream: idle
            await().atMost(SOON).untilAsserted(() -> {
                ReactorStats s = device.reactor().stats();
                assertEquals(0, s.quarantined(), "quarantined slot not recycled while idle: " + s);
                assertEquals(s.capacity(), s.freeSlots(), "slot not back on the free list: " + s);
            });
        } finally {
            device.close();
        }
    }

    @ParameterizedTest
    @EnumSource(CompletionStrategy.class)
    void closeWakesEveryWaiterUnderEveryStrategy(CompletionStrategy strategy) throws Exception {
        SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().strategy(strategy).build());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        try {
            final int n = 40;
            AtomicInteger closedErrors = new AtomicInteger();
            List<Thread> waiters = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                waiters.add(Thread.ofVirtual().start(() -> {
                    try {
                        stream.event().await();
                    } catch (ReactorClosedException e) {
                        closedErrors.incrementAndGet();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                }));
            }
            await().atMost(SOON).until(() -> waiters.stream().allMatch(ReactorTestSupport::parked));
            device.close();
            for (Thread w : waiters) {
                assertTrue(w.join(SOON), strategy + ": a waiter was not woken by close()");
            }
            assertEquals(n, closedErrors.get(), strategy + ": every waiter gets ReactorClosedException");
        } finally {
            gate.countDown();
            device.close();
        }
    }

    @ParameterizedTest
    @EnumSource(CompletionStrategy.class)
    void anInterruptEndsAnUntimedAwaitUnderEveryStrategy(CompletionStrategy strategy) throws Exception {
        SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().strategy(strategy).build());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        try {
            AtomicReference<Throwable> outcome = new AtomicReference<>();
            Thread waiter = Thread.ofVirtual().start(() -> {
                try {
                    stream.event().await();
                } catch (Throwable t) {
                    outcome.set(t);
                }
            });
            await().atMost(SOON).until(() -> parked(waiter));
            waiter.interrupt();
            assertTrue(waiter.join(SOON), strategy + ": the interrupt did not end the await");
            assertInstanceOf(InterruptedException.class, outcome.get(), strategy.toString());
            gate.countDown();
            assertNothingLeaked(device);
        } finally {
            gate.countDown();
            device.close();
        }
    }
}
