package io.cudaloom;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.*;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Bad input gets a clear exception naming the problem, and leaves every slot free. */
class BadInputTest {
    private SimulatedDevice device;
    private SimulatedStream stream;
    private CountDownLatch gate;

    @BeforeEach
    void setUp() {
        device = SimulatedDevice.create();
        stream = device.newStream();
        gate = new CountDownLatch(1);
        stream.launch(() -> {  // keep the stream busy, so awaits would really register
            try {
                gate.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    @AfterEach
    void tearDown() {
        gate.countDown();
        device.close();
    }

    private void assertRejected(Class<? extends Throwable> type, String messagePart, Executable call) {
        Throwable t = assertThrows(type, call);
        if (messagePart != null) {
            assertNotNull(t.getMessage(), "exception has a message");
            assertTrue(t.getMessage().contains(messagePart),
                    "message should name the problem ('" + messagePart + "'): " + t.getMessage());
        }
        ReactorStats s = device.reactor().stats();
        assertEquals(0, s.armedNow(), "nothing armed after a rejected call: " + s);
        assertEquals(s.capacity(), s.freeSlots(), "no slot leaked: " + s);
    }

    @Test
    void nullArguments() {
        GpuEvent event = stream.event();
        assertRejected(NullPointerException.class, "stream", () -> device.reactor().event(null));
        assertRejected(NullPointerException.class, "timeout", () -> event.await((Duration) null));
        assertRejected(NullPointerException.class, "unit", () -> event.await(1, null));
        assertRejected(NullPointerException.class, "executor", () -> event.toCompletableFuture(null));
        assertRejected(NullPointerException.class, "duration", () -> stream.launchKernel(null));
        assertRejected(NullPointerException.class, "task", () -> stream.launch(null));
        assertRejected(NullPointerException.class, "error", () -> stream.injectFault(null));
        assertRejected(NullPointerException.class, "config", () -> SimulatedDevice.create(null));
    }

    @Test
    void negativeAndAbsurdKernelDurations() {
        assertRejected(IllegalArgumentException.class, "duration", () -> stream.launchKernel(Duration.ofSeconds(-1)));
        assertRejected(IllegalArgumentException.class, "duration", () -> stream.launchKernel(Duration.ofDays(2)));
    }

    @Test
    void streamOfAnotherDevice() {
        try (SimulatedDevice other = SimulatedDevice.create()) {
            SimulatedStream foreign = other.newStream();
            assertRejected(IllegalArgumentException.class, "belongs to device", () -> device.reactor().event(foreign));
        }
    }

    @Test
    void closedStream() {
        SimulatedStream closed = device.newStream();
        closed.close();
        assertRejected(IllegalStateException.class, "closed", closed::event);
        assertRejected(IllegalStateException.class, "closed", closed::await);
        assertRejected(IllegalStateException.class, "closed", () -> closed.launchKernel(Duration.ZERO));
        Throwable t = assertThrows(IllegalStateException.class, () -> closed.launch(() -> {}));
        assertFalse(t instanceof ReactorClosedException, "the device is open: " + t);
    }

    @Test
    void useAfterClose() {
        GpuEvent event = stream.event();
        device.close();
        assertThrows(ReactorClosedException.class, event::await);
        assertThrows(ReactorClosedException.class, () -> event.await(Duration.ofSeconds(1)));
        assertThrows(ReactorClosedException.class, event::awaitUninterruptibly);
        assertThrows(ReactorClosedException.class, stream::event);
        // The device's streams were closed by the device: launching on them names the device.
        for (Executable launch : new Executable[] {
                () -> stream.launchKernel(Duration.ZERO), () -> stream.launch(() -> {}),
                () -> stream.injectFault("late"), device::newStream}) {
            Throwable t = assertThrows(ReactorClosedException.class, launch);
            assertTrue(t.getMessage().contains(device.name() + " is closed"), t.getMessage());
        }
        // The non-blocking form reports the closure through its future instead of throwing.
        assertInstanceOf(ReactorClosedException.class, event.toCompletableFuture().exceptionNow());
        gate.countDown();
        await().atMost(Duration.ofSeconds(30)).until(() -> device.reactor().isMemoryReleased());
    }

    @Test
    void badConfiguration() {
        assertRejected(IllegalArgumentException.class, "capacity", () -> ReactorConfig.builder().capacity(0));
        assertRejected(IllegalArgumentException.class, "capacity", () -> ReactorConfig.builder().capacity(Integer.MAX_VALUE));
        assertRejected(IllegalArgumentException.class, "waiterSpin", () -> ReactorConfig.builder().waiterSpin(Duration.ofNanos(-1)));
        assertRejected(IllegalArgumentException.class, "scannerPark", () -> ReactorConfig.builder()
                .scannerPark(Duration.ofMillis(2), Duration.ofMillis(1)));
        assertRejected(IllegalArgumentException.class, "faultProbeInterval",
                () -> ReactorConfig.builder().faultProbeInterval(Duration.ZERO));
        assertRejected(IllegalArgumentException.class, "scannerSpin",
                () -> ReactorConfig.builder().scannerSpin(Duration.ofHours(1)));
        assertRejected(NullPointerException.class, "strategy", () -> ReactorConfig.builder().strategy(null));
    }

    @Test
    void unknownBackendChoice() {
        String old = System.getProperty(GpuDevice.BACKEND_PROPERTY);
        System.setProperty(GpuDevice.BACKEND_PROPERTY, "quantum");
        try {
            assertRejected(IllegalArgumentException.class, "quantum", GpuDevice::open);
        } finally {
            if (old == null) {
                System.clearProperty(GpuDevice.BACKEND_PROPERTY);
            } else {
                System.setProperty(GpuDevice.BACKEND_PROPERTY, old);
            }
        }
    }
}
