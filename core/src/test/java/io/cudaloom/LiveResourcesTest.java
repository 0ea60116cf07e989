package io.cudaloom;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.LiveResources.Kind;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link GpuDevice#liveResources()}: what a device counts as handed out and given back (memory,
 * streams, waits in progress), the open-device registry, and what site capture costs: nothing but a
 * counter and one small handle while it is off.
 */
class LiveResourcesTest {
    private static final Duration LONG = Duration.ofSeconds(30);

    @RegisterExtension
    final OpenedDevices devices = new OpenedDevices();

    /** A kernel that holds {@code stream} until {@code gate} opens. */
    private static void hold(SimulatedStream stream, CountDownLatch gate) {
        stream.launch(() -> {
            try {
                gate.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    @Test
    void memoryAndStreamsAreCountedUntilClosedOnceHoweverOftenClosed() {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        assertTrue(device.liveResources().isEmpty(), device.liveResources().toString());
        DeviceMemory d = device.allocate(64);
        HostMemory h1 = device.allocateHost(64);
        HostMemory h2 = device.allocateHost(64);
        GpuStream s = device.newStream();
        LiveResources live = device.liveResources();
        assertEquals(1, live.count(Kind.DEVICE_MEMORY));
        assertEquals(2, live.count(Kind.HOST_MEMORY));
        assertEquals(1, live.count(Kind.STREAM));
        assertEquals(0, live.count(Kind.WAIT));
        assertFalse(live.capturing());
        assertEquals(List.of(), live.sites(Kind.DEVICE_MEMORY), "capture is off by default");
        d.close();
        d.close();
        h1.close();
        s.close();
        s.close();
        live = device.liveResources();
        assertEquals(0, live.count(Kind.DEVICE_MEMORY));
        assertEquals(1, live.count(Kind.HOST_MEMORY));
        assertEquals(0, live.count(Kind.STREAM));
        h2.close();
        assertTrue(device.liveResources().isEmpty(), device.liveResources().toString());
    }

    @Test
    void aBlockingAwaitIsAWaitInProgressUntilItReturns() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        try (SimulatedStream stream = device.newStream()) {
            CountDownLatch gate = new CountDownLatch(1);
            hold(stream, gate);
            Thread waiter = Thread.ofVirtual().start(() -> {
                try {
                    stream.event().await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            await().atMost(LONG).until(() -> device.liveResources().count(Kind.WAIT) == 1);
            gate.countDown();
            assertTrue(waiter.join(LONG));
            assertEquals(0, device.liveResources().count(Kind.WAIT));
            stream.await(); // GpuStream.await counts too, and gives it back
            assertTrue(stream.event().await(LONG)); // so does a timed await
            assertEquals(0, device.liveResources().count(Kind.WAIT));
        }
    }

    @Test
    void aFutureOrSubscriptionIsPendingUntilDeliveredOrWithdrawn() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        try (SimulatedStream stream = device.newStream()) {
            CountDownLatch gate = new CountDownLatch(1);
            hold(stream, gate);
            CompletableFuture<?> future = stream.event().toCompletableFuture();
            Subscription cancelled = stream.event().subscribe(Runnable::run, failure -> { });
            Subscription delivered = stream.event().subscribe(Runnable::run, failure -> { });
            assertEquals(3, device.liveResources().count(Kind.WAIT));
            assertTrue(cancelled.cancel());
            assertFalse(cancelled.cancel());
            assertEquals(2, device.liveResources().count(Kind.WAIT), "a withdrawn subscription is no longer pending");
            future.cancel(false); // withdraws the future's registration
            assertEquals(1, device.liveResources().count(Kind.WAIT));
            gate.countDown();
            await().atMost(LONG).until(() -> device.liveResources().count(Kind.WAIT) == 0);
            assertFalse(delivered.cancel(), "it was delivered");
            assertEquals(0, device.liveResources().count(Kind.WAIT));
            stream.event().toCompletableFuture().get(30, TimeUnit.SECONDS); // idle: delivered at once
            assertEquals(0, device.liveResources().count(Kind.WAIT));
        }
    }

    @Test
    void theRegistryListsEachOpenDeviceUntilItIsClosed() {
        long mark = LiveResources.lastDeviceSequence();
        SimulatedDevice device = SimulatedDevice.create();
        LiveResources.OpenDevice open = LiveResources.openDevices().stream().filter(d -> d.device() == device)
                .findFirst().orElseThrow();
        assertTrue(open.sequence() > mark);
        assertEquals(device.name(), open.name());
        assertEquals(Kind.DEVICE, open.openedAt().kind());
        assertTrue(open.openedAt().frames().stream().anyMatch(f -> f.getMethodName().equals(
                "theRegistryListsEachOpenDeviceUntilItIsClosed")), open.openedAt().render(""));
        device.close();
        assertTrue(LiveResources.openDevices().stream().noneMatch(d -> d.sequence() == open.sequence()));
    }

    @Test
    void withCaptureOnASiteNamesTheCallIntoTheLibraryAndItsCaller() {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        device.captureLeakSites(true);
        DeviceMemory m = device.allocate(64);
        LiveResources.Site site = device.liveResources().sites(Kind.DEVICE_MEMORY).get(0);
        assertEquals(Thread.currentThread().getName(), site.thread());
        assertEquals("allocate", site.frames().get(0).getMethodName(), site.render(""));
        assertEquals(SimulatedDevice.class.getName(), site.frames().get(0).getClassName());
        assertEquals("withCaptureOnASiteNamesTheCallIntoTheLibraryAndItsCaller", site.frames().get(1).getMethodName());
        m.close();
        assertEquals(List.of(), device.liveResources().sites(Kind.DEVICE_MEMORY), "a closed one's site is dropped");
        device.captureLeakSites(false);
        device.allocate(64).close();
        assertFalse(device.liveResources().capturing());
    }

    @Test
    void sampledCaptureRecordsOneInSixtyFour() {
        ResourceLedger ledger = new ResourceLedger();
        ledger.capture(ResourceLedger.Capture.SAMPLED);
        for (int i = 0; i < 64 * 4; i++) {
            ledger.open(Kind.HOST_MEMORY);
        }
        LiveResources live = ledger.snapshot();
        assertEquals(256, live.count(Kind.HOST_MEMORY));
        assertEquals(4, live.sites(Kind.HOST_MEMORY).size());
    }

    @Test
    void withCaptureOffTrackingAnAllocationCostsOneSmallHandleAndNoStackTrace() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        ResourceLedger off = new ResourceLedger();
        assertEquals(ResourceLedger.Capture.OFF, off.capture(), "premise: -Dcudaloom.leakSites is not set");
        ResourceLedger all = new ResourceLedger();
        all.capture(ResourceLedger.Capture.ALL);
        int n = 20_000;
        double offBytes = bytesPerOpenAndRelease(threads, off, n);
        double allBytes = bytesPerOpenAndRelease(threads, all, n / 10);
        System.out.printf("tracking one allocation: capture off %.1f bytes, capture all %.1f bytes%n", offBytes, allBytes);
        assertTrue(offBytes <= 48, "one handle (about 24 bytes), measured " + offBytes);
        assertTrue(allBytes > 10 * offBytes, "capturing is what costs: " + allBytes + " vs " + offBytes);
        assertTrue(off.snapshot().isEmpty() && all.snapshot().isEmpty());
    }

    private static double bytesPerOpenAndRelease(com.sun.management.ThreadMXBean threads, ResourceLedger ledger, int n) {
        for (int i = 0; i < n; i++) { // warm-up
            ledger.open(Kind.DEVICE_MEMORY).run();
        }
        long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < n; i++) {
            ledger.open(Kind.DEVICE_MEMORY).run();
        }
        return (double) (threads.getCurrentThreadAllocatedBytes() - before) / n;
    }

    @Test
    void theCaptureLevelIsParsedStrictly() {
        assertEquals(ResourceLedger.Capture.OFF, ResourceLedger.parse(" off "));
        assertEquals(ResourceLedger.Capture.SAMPLED, ResourceLedger.parse("sampled"));
        assertEquals(ResourceLedger.Capture.ALL, ResourceLedger.parse("ALL"));
        assertTrue(org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> ResourceLedger.parse("loud")).getMessage().contains("cudaloom.leakSites must be off, sampled or all"));
    }
}
