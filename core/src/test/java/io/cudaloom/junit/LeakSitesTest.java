package io.cudaloom.junit;

import static io.cudaloom.junit.LeakCheckTest.HOLD;
import static io.cudaloom.junit.LeakCheckTest.SEEN;
import static io.cudaloom.junit.LeakCheckTest.assertContains;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import io.cudaloom.GpuDevice;
import io.cudaloom.GpuStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;

/**
 * With site capture on ({@link GpuTest#captureSites()}, or {@value GpuExtension#CAPTURE_SITES_PARAMETER}),
 * the leak check's message says where each leaked allocation and wait was made: the call into the
 * library and the test's own frame. Off by default (see {@link LeakCheckTest}, whose messages say
 * how to turn it on).
 */
class LeakSitesTest {
    @BeforeEach
    void reset() {
        SEEN.clear();
    }

    @GpuTest(simulatedFallback = true, captureSites = true)
    static class CapturesSites {
        @Test
        void leaks(GpuDevice device, GpuStream stream) {
            SEEN.add(device);
            device.allocate(64);
            stream.launchKernel(HOLD);
            stream.event().toCompletableFuture();
        }

        @Test
        void theNextTestCapturesAgain(GpuDevice device) {
            SEEN.add(device);
            device.allocateHost(64);
        }
    }

    @GpuTest(simulatedFallback = true)
    static class LeaksWithoutTheAttribute {
        @Test
        void leaks(GpuDevice device) {
            SEEN.add(device);
            device.newStream();
        }
    }

    private static EngineExecutionResults run(Class<?> fixture, String... more) {
        var kit = EngineTestKit.engine("junit-jupiter").selectors(selectClass(fixture))
                .configurationParameter(GpuExtension.DEVICE_PARAMETER, "sim")
                .configurationParameter(GpuExtension.LEAK_GRACE_PARAMETER, "200");
        for (int i = 0; i < more.length; i += 2) {
            kit = kit.configurationParameter(more[i], more[i + 1]);
        }
        return kit.execute();
    }

    private static String failureOf(EngineExecutionResults results, String method) {
        String m = results.testEvents().failed().stream()
                .filter(e -> e.getTestDescriptor().getDisplayName().startsWith(method + "("))
                .findFirst().orElseThrow(() -> new AssertionError(method + " did not fail"))
                .getRequiredPayload(TestExecutionResult.class).getThrowable().orElseThrow().getMessage();
        System.out.println(method + ":\n" + m);
        return m;
    }

    @Test
    void withCaptureSitesTheMessageShowsWhereEachLeakWasMade() {
        EngineExecutionResults results = run(CapturesSites.class);
        results.testEvents().assertStatistics(s -> s.started(2).failed(2));
        String m = failureOf(results, "leaks");
        assertContains(m, "\n  - DeviceMemory: 1 not closed (DeviceMemory.close()); captured:\n"
                        + "      allocated on thread \"",
                "\n        at io.cudaloom.sim.SimulatedDevice.allocate(SimulatedDevice.java:",
                "\n        at io.cudaloom.junit.LeakSitesTest$CapturesSites.leaks(LeakSitesTest.java:");
        assertContains(m, "\n  - wait: 1 still pending", "captured:\n      registered on thread \"",
                "\n        at io.cudaloom.GpuEvent.toCompletableFuture(GpuEvent.java:");
        assertFalse(m.contains("to see where each was"), "no hint when the site is there: " + m);
        // The class's next test gets a fresh device, which captures too.
        String next = failureOf(results, "theNextTestCapturesAgain");
        assertContains(next, "HostMemory: 1 not closed (HostMemory.close()); captured:",
                "at io.cudaloom.junit.LeakSitesTest$CapturesSites.theNextTestCapturesAgain(LeakSitesTest.java:");
    }

    @Test
    void theConfigurationParameterTurnsCaptureOnForEveryTest() {
        String m = failureOf(run(LeaksWithoutTheAttribute.class, GpuExtension.CAPTURE_SITES_PARAMETER, "true"), "leaks");
        assertContains(m, "GpuStream: 1 not closed (GpuStream.close()); captured:\n      opened on thread \"",
                "at io.cudaloom.junit.LeakSitesTest$LeaksWithoutTheAttribute.leaks(LeakSitesTest.java:");
        String off = failureOf(run(LeaksWithoutTheAttribute.class), "leaks");
        assertContains(off, "GpuStream: 1 not closed (GpuStream.close()); to see where each was opened:"
                + " @GpuTest(captureSites = true)");
        assertFalse(off.contains("LeakSitesTest.java:"), off);
        assertTrue(((GpuDevice) SEEN.peek()).reactor().isClosed());
    }
}
