package io.cudaloom;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.lang.management.ManagementFactory;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.List;
import java.util.logging.LogRecord;
import javax.management.ObjectName;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A device dropped without close() is reported, with where it was opened, and its threads end
 * (issue: adoptable as a library, "a device that is never closed"); a closed one is never reported.
 */
class UnclosedDeviceTest {
    private static final Duration LONG = Duration.ofSeconds(30);
    private final LogCapture log = new LogCapture();
    private final List<LogRecord> records = log.records();

    @AfterEach
    void stopListening() {
        log.close();
    }

    /** What the test keeps of a device it drops: no reference to the device itself. */
    record Dropped(String name, WeakReference<GpuDevice> device, Thread scanner, Thread worker, ObjectName mbean) {
    }

    /** Opens a device, does one await on a stream, and returns what is left once both are dropped. */
    private static Dropped useAndDrop(boolean close) throws Exception {
        SimulatedDevice device = SimulatedDevice.create();
        SimulatedStream stream = device.newStream();
        Thread[] worker = new Thread[1];
        stream.launch(() -> worker[0] = Thread.currentThread());
        stream.event().await();
        ObjectName mbean = device.reactor().observability().mbeanName();
        assertNotNull(mbean, "the device's MXBean is registered");
        Dropped d = new Dropped(device.name(), new WeakReference<>(device), TestAccess.scannerThread(device), worker[0], mbean);
        if (close) {
            device.close();
        }
        return d;
    }

    private boolean reported(String name) {
        return records.stream().anyMatch(r -> r.getMessage() != null && r.getMessage().contains(name + " was garbage-collected without close()"));
    }

    @Test
    void aDeviceDroppedUnclosedIsReportedWithWhereItWasOpenedAndItsThreadsEnd() throws Exception {
        Dropped d = useAndDrop(false);
        assertTrue(d.scanner().isAlive() && d.worker().isAlive(), "an open device has its scanner and its stream's worker");
        await().atMost(LONG).until(() -> {
            System.gc();
            return reported(d.name());
        });
        assertTrue(d.device().refersTo(null), "collected");
        LogRecord r = records.stream().filter(x -> x.getMessage().contains(d.name())).findFirst().orElseThrow();
        assertEquals(java.util.logging.Level.WARNING, r.getLevel());
        Throwable openedAt = r.getThrown();
        assertNotNull(openedAt, "the report carries where the device was opened");
        assertTrue(openedAt.getMessage().contains("the device was opened here, on thread \"" + Thread.currentThread().getName() + "\""),
                openedAt.getMessage());
        assertTrue(List.of(openedAt.getStackTrace()).stream().anyMatch(e -> e.getMethodName().equals("useAndDrop")),
                "the stack of the open names the caller");
        d.scanner().join(LONG);
        d.worker().join(LONG);
        assertFalse(d.scanner().isAlive(), "the scanner ended");
        assertFalse(d.worker().isAlive(), "the stream's worker ended");
        assertFalse(ManagementFactory.getPlatformMBeanServer().isRegistered(d.mbean()), "the MXBean was unregistered");
    }

    @Test
    void aClosedDeviceIsCollectedAndNeverReported() throws Exception {
        Dropped closed = useAndDrop(true);
        Dropped unclosed = useAndDrop(false);
        // The unclosed one, opened after, is reported; the closed one's registration was cleaned by
        // close(), so it can never be, and nothing else holds it either.
        await().atMost(LONG).until(() -> {
            System.gc();
            return reported(unclosed.name()) && closed.device().refersTo(null);
        });
        assertFalse(reported(closed.name()), "a closed device is not reported: " + records);
        closed.scanner().join(LONG);
        assertFalse(closed.scanner().isAlive());
    }
}
