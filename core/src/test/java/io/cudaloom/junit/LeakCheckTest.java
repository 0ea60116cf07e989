package io.cudaloom.junit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuDevice;
import io.cudaloom.GpuStream;
import io.cudaloom.HostMemory;
import io.cudaloom.LiveResources.Kind;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;

/**
 * The leak check of {@link GpuTest} catches every kind of thing the library hands out and a test
 * can leave behind: device memory, host memory, a stream, a pending wait (a future, a parked
 * await), a device the test opened itself; a wait is reported after a short grace, not after the
 * check's 10 s bound; a clean test and a test that opts out pass. Run with the EngineTestKit on
 * fixture classes (nested, named without "Test"), as {@link GpuExtensionTest} does.
 *
 * <p>The fixtures take a {@link GpuDevice} or {@link GpuStream} and allow the simulated fallback,
 * so the same fixtures run on a GPU ({@link GpuExtensionGpuTest} runs them there with
 * {@code cuda}, asserting the same messages): the accounting does not depend on the backend.
 */
class LeakCheckTest {
    static final Queue<Object> SEEN = new ConcurrentLinkedQueue<>();
    /** Longer than the grace plus the run's own overhead, far shorter than the 10 s bound. */
    static final Duration FAST = Duration.ofSeconds(4);
    /** Keeps a stream busy well past FAST, on either backend, and ends by itself. */
    static final Duration HOLD = Duration.ofSeconds(6);

    @BeforeEach
    void reset() {
        SEEN.clear();
    }

    /** Runs {@code fixture} on {@code device} with the default 10 s bound and a 200 ms grace. */
    static EngineExecutionResults run(Class<?> fixture, String device) {
        return EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(fixture))
                .configurationParameter(GpuExtension.DEVICE_PARAMETER, device)
                .configurationParameter(GpuExtension.LEAK_CHECK_TIMEOUT_PARAMETER, "10000")
                .configurationParameter("cudaloom.junit.leakGraceMillis", "200")
                .execute();
    }

    /** The message of the one test of {@code fixture}, which must fail, in less than {@link #FAST}. */
    static String failureOf(Class<?> fixture, String device) {
        long start = System.nanoTime();
        EngineExecutionResults results = run(fixture, device);
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        results.testEvents().assertStatistics(s -> s.started(1).failed(1));
        Event finished = results.testEvents().finished().stream().findFirst().orElseThrow();
        Throwable t = finished.getRequiredPayload(TestExecutionResult.class).getThrowable().orElseThrow();
        assertInstanceOf(AssertionError.class, t, t.toString());
        String m = t.getMessage();
        System.out.println(fixture.getSimpleName() + " on " + device + ", reported in " + millis + " ms:\n" + m);
        assertTrue(millis < FAST.toMillis(), "reported in " + millis + " ms, not after a grace: " + m);
        return m;
    }

    static void assertContains(String message, String... parts) {
        for (String p : parts) {
            assertTrue(message.contains(p), "expected \"" + p + "\" in:\n" + message);
        }
    }

    /** What every report of a leak on the injected device says. */
    static void assertLeakReport(String m, String who) {
        assertContains(m, who + " left ", " not at rest (reported after a 200 ms grace, not the 10000 ms bound",
                "\n  reactor: capacity ", "\n  the device is closed; the class's next test gets a fresh one");
        GpuDevice device = (GpuDevice) SEEN.peek();
        assertContains(m, device.name());
        assertTrue(device.reactor().isClosed(), "the leaking test's device was replaced");
    }

    // ---- memory and streams ---------------------------------------------------------------------

    @GpuTest(simulatedFallback = true)
    static class LeavesDeviceMemory {
        @Test
        void leaks(GpuDevice device) {
            SEEN.add(device);
            device.allocate(64);
            try (DeviceMemory closed = device.allocate(64)) { // a closed one is not counted
                assertEquals(64, closed.bytes());
            }
        }
    }

    @GpuTest(simulatedFallback = true)
    static class LeavesHostMemory {
        @Test
        void leaks(GpuDevice device) {
            SEEN.add(device);
            device.allocateHost(64);
            device.allocateHost(64);
            HostMemory twiceClosed = device.allocateHost(64);
            twiceClosed.close();
            twiceClosed.close(); // idempotent: counted back once
        }
    }

    @GpuTest(simulatedFallback = true)
    static class LeavesAStream {
        @Test
        void leaks(GpuDevice device, GpuStream injected) {
            SEEN.add(device);
            device.newStream(); // the injected one is the extension's to close
        }
    }

    @Test
    void unclosedDeviceMemoryFailsTheTestNamingKindAndCount() {
        String m = failureOf(LeavesDeviceMemory.class, "sim");
        assertLeakReport(m, "LeavesDeviceMemory > leaks(GpuDevice)");
        assertContains(m, "\n  - DeviceMemory: 1 not closed (DeviceMemory.close()); to see where each was allocated:"
                + " @GpuTest(captureSites = true)");
        assertFalse(m.contains("completion slot"), "nothing else is wrong: " + m);
    }

    @Test
    void unclosedHostMemoryFailsTheTestOnTheSimulatedDeviceToo() {
        String m = failureOf(LeavesHostMemory.class, "sim");
        assertLeakReport(m, "LeavesHostMemory > leaks(GpuDevice)");
        assertContains(m, "\n  - HostMemory: 2 not closed (HostMemory.close())");
    }

    @Test
    void aStreamTheTestOpenedAndDidNotCloseFailsTheTest() {
        String m = failureOf(LeavesAStream.class, "sim");
        assertLeakReport(m, "LeavesAStream > leaks(GpuDevice, GpuStream)");
        assertContains(m, "\n  - GpuStream: 1 not closed (GpuStream.close())");
    }

    // ---- waits ----------------------------------------------------------------------------------

    @GpuTest(simulatedFallback = true)
    static class LeavesAFuture {
        @Test
        void leaks(GpuDevice device, GpuStream stream) {
            SEEN.add(device);
            stream.launchKernel(HOLD);
            SEEN.add(stream.event().toCompletableFuture()); // never awaited
        }
    }

    @GpuTest(simulatedFallback = true)
    static class LeavesAParkedAwait {
        @Test
        void leaks(GpuDevice device, GpuStream stream) {
            SEEN.add(device);
            stream.launchKernel(HOLD);
            Thread.ofVirtual().start(() -> {
                try {
                    stream.event().await(); // woken by the device's close
                } catch (Exception e) {
                    SEEN.add(e);
                }
            });
            await().atMost(Duration.ofSeconds(30)).until(() -> device.reactor().stats().armedNow() == 1);
        }
    }

    @Test
    void aFutureLeftPendingFailsFastNotAfterTheBound() {
        String m = failureOf(LeavesAFuture.class, "sim");
        assertLeakReport(m, "LeavesAFuture > leaks(GpuDevice, GpuStream)");
        assertContains(m, "\n  - wait: 1 still pending: an await, future, onComplete callback or subscription");
        CompletableFuture<?> f = (CompletableFuture<?>) SEEN.stream().filter(CompletableFuture.class::isInstance)
                .findFirst().orElseThrow();
        await().atMost(Duration.ofSeconds(30)).until(f::isCompletedExceptionally); // the device's close failed it
    }

    @Test
    void anAwaitLeftParkedFailsFastNotAfterTheBound() {
        String m = failureOf(LeavesAParkedAwait.class, "sim");
        assertLeakReport(m, "LeavesAParkedAwait > leaks(GpuDevice, GpuStream)");
        assertContains(m, "\n  - wait: 1 still pending", "completion slot(s) still armed");
        await().atMost(Duration.ofSeconds(30))
                .until(() -> SEEN.stream().anyMatch(io.cudaloom.ReactorClosedException.class::isInstance));
    }

    @GpuTest(simulatedFallback = true)
    static class LeavesAWaitThatCompletesDuringTheGrace {
        @Test
        void returnsBeforeItsWaiter(SimulatedDevice device, SimulatedStream stream) {
            CountDownLatch release = new CountDownLatch(1);
            stream.launch(() -> {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            Thread.ofVirtual().start(() -> {
                try {
                    stream.event().await();
                    SEEN.add("delivered");
                } catch (Exception e) {
                    SEEN.add(e);
                }
            });
            await().atMost(Duration.ofSeconds(30)).until(() -> device.liveResources().count(Kind.WAIT) == 1);
            // The work ends only once the extension has closed the stream, i.e. as its check begins.
            Thread.ofVirtual().start(() -> {
                await().atMost(Duration.ofSeconds(30)).until(stream::isClosed);
                release.countDown();
            });
        }
    }

    @Test
    void aWaitDeliveredDuringTheGraceIsNotALeak() {
        // With cudaloom.junit.leakGraceMillis=0 this fixture fails: the wait is pending as the check begins.
        run(LeavesAWaitThatCompletesDuringTheGrace.class, "sim")
                .testEvents().assertStatistics(s -> s.started(1).succeeded(1));
        assertEquals(List.of("delivered"), List.copyOf(SEEN), "the waiter was still pending when its test ended");
    }

    @GpuTest(simulatedFallback = true)
    static class ClosesMemoryUnderWorkThatEndsAfterTheGrace {
        @Test
        void closesUnderWork(SimulatedDevice device, SimulatedStream stream) {
            // The work ends only once the extension has closed the stream (as its check begins), and
            // then takes 600 ms more, three times the grace: the memory is freed only after that.
            stream.launch(() -> await().atMost(Duration.ofSeconds(30)).until(stream::isClosed));
            stream.launchKernel(Duration.ofMillis(600));
            DeviceMemory d = device.allocate(64);
            HostMemory h = device.allocateHost(64);
            stream.copy(h, d, 64);
            d.close();
            h.close();
            SEEN.add(device.liveResources().count(Kind.FREEING_MEMORY));
        }
    }

    @Test
    void memoryClosedUnderWorkIsInFlightNotALeak() {
        // Were closed-but-not-freed memory a leak, this would fail after the 200 ms grace.
        run(ClosesMemoryUnderWorkThatEndsAfterTheGrace.class, "sim")
                .testEvents().assertStatistics(s -> s.started(1).succeeded(1));
        assertEquals(List.of(2), List.copyOf(SEEN), "the premise: both were closed with the copy still queued");
    }

    // ---- devices the test opened itself ---------------------------------------------------------

    @GpuTest(simulatedFallback = true)
    static class OpensItsOwnDevice {
        @Test
        void opens(GpuDevice injected) {
            SEEN.add(SimulatedDevice.create());
            try (SimulatedDevice closed = SimulatedDevice.create()) { // closed: not a leak
                SEEN.add(closed.name());
            }
        }
    }

    @Test
    void aDeviceTheTestOpenedAndDidNotCloseFailsTheTestSayingWhereItWasOpened() {
        String m = failureOf(OpensItsOwnDevice.class, "sim");
        SimulatedDevice leaked = (SimulatedDevice) SEEN.peek();
        assertContains(m, "OpensItsOwnDevice > opens(GpuDevice) left open a device it opened itself:",
                "\n  - GpuDevice: 1 opened in the test and not closed (GpuDevice.close())",
                "\n    " + leaked.name() + ", opened on thread \"",
                "at io.cudaloom.junit.LeakCheckTest$OpensItsOwnDevice.opens(LeakCheckTest.java:",
                "\n  the extension has closed it");
        assertFalse(m.contains(SEEN.stream().skip(1).findFirst().orElseThrow() + ","), "the closed one is not named");
        assertTrue(leaked.isClosed(), "closed by the extension");
    }

    // ---- what passes ----------------------------------------------------------------------------

    @GpuTest(simulatedFallback = true)
    static class CleansUp {
        @Test
        void usesEverythingAndGivesItBack(GpuDevice device, GpuStream injected) throws Exception {
            try (GpuStream stream = device.newStream();
                    DeviceMemory d = device.allocate(1024);
                    HostMemory h = device.allocateHost(1024);
                    SimulatedDevice own = SimulatedDevice.create()) {
                stream.copy(h, d, 1024);
                stream.launchKernel(Duration.ofMillis(1));
                stream.event().toCompletableFuture().get(30, TimeUnit.SECONDS);
                injected.launchKernel(Duration.ofMillis(1));
                injected.event().await();
                stream.await();
                own.newStream().close();
            }
        }
    }

    @GpuTest(simulatedFallback = true, checkLeaks = false)
    static class LeaksOnPurpose {
        @Test
        void leaks(GpuDevice device) {
            device.allocate(64);
            device.allocateHost(64);
            device.newStream();
            SEEN.add(SimulatedDevice.create());
        }
    }

    @Test
    void aTestThatGivesEverythingBackPasses() {
        run(CleansUp.class, "sim").testEvents().assertStatistics(s -> s.started(1).succeeded(1));
    }

    @Test
    void checkLeaksFalseStillOptsOut() {
        run(LeaksOnPurpose.class, "sim").testEvents().assertStatistics(s -> s.started(1).succeeded(1));
        ((GpuDevice) SEEN.peek()).close();
    }
}
