package io.cudaloom;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.InstantDevice.InstantStream;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Contract breaks found by a test suite written against the public API, kept as regressions: a
 * faulted stream's quarantined slot must come back while the reactor is otherwise idle. (The other
 * two, that every completion strategy lets {@code close()} and an interrupt end an untimed await,
 * are now checked on every backend and strategy by the semantics suite ({@link SemanticsSuite}):
 * {@link FaultAndCloseSemantics#closeWakesEveryWaiterAndFreesTheFlagsOnlyOnceNoWriteCanLand} and
 * {@link AwaitSemantics#awaitIsInterruptibleAndClearsTheInterruptStatus}.)
 */
class ReactorContractRegressionTest {
    private static final Duration SOON = Duration.ofSeconds(5);

    @Test
    void aQuarantinedSlotComesBackWithNoOtherActivityOnTheReactor() throws Exception {
        InstantDevice device = InstantDevice.holding(
                ReactorConfig.builder().faultProbeInterval(Duration.ofMillis(1)).coalesce(false).build()); // no counted work: only a slot waits
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
}
