package io.cudaloom;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.reactor.ReactorStream;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import io.cudaloom.spi.StreamState;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The blocking wait's busy check ({@code BlockingWait.Checks.examine}) asks about the wait's own
 * work: a stream whose work up to the event's position is not proven complete is taken as busy
 * without a driver call, and an event whose work is proven while later work is not asks the driver
 * once, so that an idle stream answers it with no flag write. With coalescing (the default) such an
 * event returns before the check; without it (counts then leave raw-stream work out, so a proof of
 * the event's position does not prove the event), this is where it is answered.
 */
class ProvenWorkBusyCheckTest {
    private static final Duration LONG = Duration.ofSeconds(30);

    @Test
    void withoutCoalescingAnEventWhoseCountedWorkIsProvenAsksTheIdleStreamAndArmsNothing() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().coalesce(false).build());
             SimulatedStream s = device.newStream()) {
            GpuStream g = s; // its reactor-side view: package-private in GpuStream
            s.launchKernel(Duration.ofNanos(1_000));
            long required = g.required(); // what an event taken now stands for
            GpuEvent first = s.event();
            GpuEvent second = s.event(); // the same work, awaited later
            first.await(); // its return proves the work up to its position
            // Read before the later work: a stats() read refreshes the work-in-flight gauge, whose
            // query of an idle stream would prove that work too.
            ReactorStats before = device.reactor().stats();
            s.launchKernel(Duration.ofNanos(1_000)); // later work, counted, never awaited: not proven
            ReactorStream owner = g.owner();
            // The backend's own answer (no proof is raised by it, unlike the reactor's queries).
            await().atMost(LONG).until(() -> owner.queryState() == StreamState.IDLE);

            assertTrue(owner.isKnownComplete(required), "premise: the second event's work is proven");
            assertTrue(owner.hasWorkNotKnownComplete(), "premise: the later kernel is counted and not proven");
            second.await();
            assertTrue(!owner.hasWorkNotKnownComplete(), "the idle answer proves everything counted before it");
            ReactorStats after = device.reactor().stats();
            assertEquals(before.registrations(), after.registrations(), "no flag write armed for proven work");
            assertEquals(before.immediate() + 1, after.immediate(), "answered by one query of the idle stream");
        }
    }
}
