package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.LONG;
import static io.cudaloom.ReactorTestSupport.gate;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link GpuEvent#isDone()} on the simulated device, where the semantics suite cannot go (its CUDA
 * backend cannot fault in-process): work that failed is not done (the results are not there), so
 * after a fault or the device's close it stays false while {@code await(Duration.ZERO)} throws;
 * and an event of a closed stream is done once its work is. The work done unawaited, on every
 * backend: {@link EventCoverageSemantics#isDoneAndTheWorkInFlightReportWorkThatFinishedUnawaited}.
 */
class EventIsDoneTest {
    @RegisterExtension
    final OpenedDevices devices = new OpenedDevices();

    @Test
    void aFaultedStreamsWorkIsNeverDoneAndAZeroTimeoutAwaitSaysWhy() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        stream.injectFault("illegal address (injected)");
        GpuEvent event = stream.event();
        assertFalse(event.isDone(), "held");
        gate.countDown();
        await().atMost(LONG).until(() -> faultOf(event) != null);
        GpuFaultException e = faultOf(event);
        assertTrue(e.getMessage().contains("illegal address (injected)"), e.getMessage());
        assertFalse(event.isDone(), "the work failed: not done, its results are not there");
        assertFalse(stream.event().isDone(), "nor is a later event's");
        assertEquals(0, device.reactor().stats().registrations(), "the polls registered nothing");
    }

    /** The poll that ends on a failure too: {@code await(Duration.ZERO)}; null while not done. */
    private static GpuFaultException faultOf(GpuEvent event) throws InterruptedException {
        try {
            assertFalse(event.await(Duration.ZERO), "the work failed: it must not complete");
            return null;
        } catch (GpuFaultException e) {
            return e;
        }
    }

    @Test
    void afterTheDevicesCloseUnfinishedWorkIsNotDoneAndAnAwaitThrows() {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        GpuEvent event = stream.event();
        assertFalse(event.isDone(), "held");
        device.close();
        gate.countDown();
        assertFalse(event.isDone(), "closed before the work was proven done: never done");
        assertThrows(ReactorClosedException.class, event::await);
    }

    @Test
    void anEventOfAClosedStreamIsDoneOnceItsWorkIs() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        GpuEvent event = stream.event();
        stream.close();
        assertFalse(event.isDone(), "the work is held");
        gate.countDown();
        await().atMost(LONG).until(event::isDone);
        assertTrue(event.await(Duration.ZERO), "an await agrees");
    }
}
