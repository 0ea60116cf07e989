package io.cudaloom.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import io.cudaloom.GpuDevice;
import io.cudaloom.ReactorConfig;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtensionConfigurationException;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;

/**
 * A {@link GpuTest} on a method (or a {@code @Nested} class) refines the one around it: only the
 * attributes it sets change. One test per attribute, each with a fixture whose method sets
 * another attribute (so the old rule, where the method's annotation replaced the class's whole,
 * fails it) and one whose method sets that attribute (so it still overrides). The fixtures run
 * through {@link EngineTestKit} on the simulated device ({@value GpuExtension#DEVICE_PARAMETER} =
 * {@code sim}), so the outcome is the same on every machine; they are nested classes named without
 * "Test", which surefire does not run on their own.
 */
class GpuTestRefinementTest {
    /** What each fixture method saw, by method name (this class's tests run one at a time). */
    static final Map<String, Object> SEEN = new ConcurrentHashMap<>();
    static final Queue<GpuDevice> DEVICES = new ConcurrentLinkedQueue<>();

    @BeforeEach
    void reset() {
        SEEN.clear();
        DEVICES.clear();
    }

    private static EngineExecutionResults run(Class<?> fixture) {
        return EngineTestKit.engine("junit-jupiter").selectors(selectClass(fixture))
                .configurationParameter(GpuExtension.DEVICE_PARAMETER, "sim")
                .configurationParameter(GpuExtension.LEAK_CHECK_TIMEOUT_PARAMETER, "300")
                .configurationParameter(GpuExtension.LEAK_GRACE_PARAMETER, "200")
                .execute();
    }

    private static TestExecutionResult resultOf(EngineExecutionResults results, String method) {
        Event finished = results.testEvents().finished().stream()
                .filter(e -> e.getTestDescriptor().getDisplayName().startsWith(method + "("))
                .findFirst().orElseThrow(() -> new AssertionError(method + " did not run: " + results.allEvents().list()));
        return finished.getRequiredPayload(TestExecutionResult.class);
    }

    private static String failureOf(EngineExecutionResults results, String method) {
        TestExecutionResult r = resultOf(results, method);
        assertEquals(TestExecutionResult.Status.FAILED, r.getStatus(), method + ": " + r);
        String m = r.getThrowable().orElseThrow().getMessage();
        System.out.println(method + ":\n" + m);
        return m;
    }

    private static void assertSucceeded(EngineExecutionResults results, String method) {
        TestExecutionResult r = resultOf(results, method);
        assertEquals(TestExecutionResult.Status.SUCCESSFUL, r.getStatus(), method + ": " + r);
    }

    private static List<String> skipped(EngineExecutionResults results) {
        return results.allEvents().skipped().stream().map(e -> e.getTestDescriptor().getDisplayName()
                + ": " + e.getRequiredPayload(String.class)).toList();
    }

    private static void seen(String method, GpuDevice device) {
        SEEN.put(method, device.reactor().stats().capacity());
        DEVICES.add(device);
    }

    static ReactorConfig eight() {
        return ReactorConfig.builder().capacity(8).build();
    }

    static ReactorConfig sixteen() {
        return ReactorConfig.builder().capacity(16).build();
    }

    // ---- simulatedFallback ----------------------------------------------------------------------

    @GpuTest(simulatedFallback = true)
    static class FallbackOnTheClass {
        @Test
        @GpuTest(captureSites = true) // the README's case: it skipped without a GPU before
        void setsAnotherAttribute(GpuDevice device) {
            seen("setsAnotherAttribute", device);
        }

        @Test
        @GpuTest
        void setsNothing(GpuDevice device) {
            seen("setsNothing", device);
        }

        @Test
        @GpuTest(simulatedFallback = false)
        void needsTheGpu(GpuDevice device) {
            seen("needsTheGpu", device);
        }
    }

    @GpuTest
    static class NoFallbackOnTheClass {
        @Test
        @GpuTest(simulatedFallback = true)
        void allowsIt(GpuDevice device) {
            seen("allowsIt", device);
        }

        @Test
        void inheritsTheClasss(GpuDevice device) {
            seen("inheritsTheClasss", device);
        }
    }

    @GpuTest
    static class NoFallbackAroundANestedClass {
        @Nested
        @GpuTest(simulatedFallback = true)
        class AllowsIt {
            @Test
            void runsInTheNestedClass(GpuDevice device) {
                seen("runsInTheNestedClass", device);
            }
        }
    }

    @Test
    void simulatedFallbackIsInheritedUnlessTheMethodSetsIt() {
        EngineExecutionResults results = run(FallbackOnTheClass.class);
        assertSucceeded(results, "setsAnotherAttribute");
        assertSucceeded(results, "setsNothing");
        assertEquals(List.of("needsTheGpu(GpuDevice): " + GpuExtension.DEVICE_PARAMETER + "=sim asks for the simulated"
                + " device, and this test needs a CUDA device (no simulatedFallback)"), skipped(results));
        assertEquals(2, SEEN.size(), SEEN.toString());
        assertTrue(DEVICES.stream().allMatch(GpuDevice::isSimulated), "on the simulated device: " + DEVICES);

        // The other way round: the class alone would be skipped; it runs for the method that allows it.
        SEEN.clear();
        EngineExecutionResults other = run(NoFallbackOnTheClass.class);
        assertSucceeded(other, "allowsIt");
        assertEquals(List.of("inheritsTheClasss(GpuDevice): " + GpuExtension.DEVICE_PARAMETER + "=sim asks for the"
                + " simulated device, and this test needs a CUDA device (no simulatedFallback)"), skipped(other));
        assertEquals(List.of("allowsIt"), List.copyOf(SEEN.keySet()));

        // A @Nested class refines its enclosing class's settings the same way.
        SEEN.clear();
        EngineExecutionResults nested = run(NoFallbackAroundANestedClass.class);
        assertSucceeded(nested, "runsInTheNestedClass");
        assertEquals(List.of(), skipped(nested));
    }

    // ---- config ---------------------------------------------------------------------------------

    @GpuTest(simulatedFallback = true, config = "io.cudaloom.junit.GpuTestRefinementTest#eight")
    static class ConfigOnTheClass {
        @Test
        @GpuTest(simulatedFallback = true)
        void inheritsIt(GpuDevice device) {
            seen("inheritsIt", device);
        }

        @Test
        @GpuTest(config = "io.cudaloom.junit.GpuTestRefinementTest#sixteen")
        void namesItsOwn(GpuDevice device) {
            seen("namesItsOwn", device);
        }

        @Nested
        @GpuTest(captureSites = false)
        class Inner {
            @Test
            void inheritsItFromTheEnclosingClass(GpuDevice device) {
                seen("inheritsItFromTheEnclosingClass", device);
            }
        }
    }

    @Test
    void configIsInheritedUnlessTheMethodNamesOne() {
        EngineExecutionResults results = run(ConfigOnTheClass.class);
        results.testEvents().assertStatistics(s -> s.started(3).succeeded(3));
        assertEquals(Map.of("inheritsIt", 8, "namesItsOwn", 16, "inheritsItFromTheEnclosingClass", 8), SEEN);
    }

    // ---- checkLeaks -----------------------------------------------------------------------------

    @GpuTest(simulatedFallback = true, checkLeaks = false)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class LeakChecksOffOnTheClass {
        @Test
        @Order(1) // first: its failure closes the device, so the next test's leak is its own
        @GpuTest(checkLeaks = true)
        void leaksTurningTheCheckBackOn(GpuDevice device) {
            seen("leaksTurningTheCheckBackOn", device);
            device.newStream();
        }

        @Test
        @Order(2)
        @GpuTest(simulatedFallback = true)
        void leaksInheritingTheSwitch(GpuDevice device) {
            seen("leaksInheritingTheSwitch", device);
            device.newStream();
        }
    }

    @Test
    void checkLeaksIsInheritedUnlessTheMethodSetsIt() {
        EngineExecutionResults results = run(LeakChecksOffOnTheClass.class);
        assertTrue(failureOf(results, "leaksTurningTheCheckBackOn").contains("GpuStream: 1 not closed"));
        assertSucceeded(results, "leaksInheritingTheSwitch");
        assertEquals(2, SEEN.size(), SEEN.toString());
    }

    // ---- captureSites ---------------------------------------------------------------------------

    @GpuTest(simulatedFallback = true, captureSites = true)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class CapturesSitesOnTheClass {
        @Test
        @Order(1)
        @GpuTest(simulatedFallback = true)
        void leaksInheritingCapture(GpuDevice device) {
            seen("leaksInheritingCapture", device);
            device.newStream();
        }

        @Test
        @Order(2) // after the first, whose failure closed the device: a fresh one, opened for this test
        @GpuTest(captureSites = false)
        void leaksWithCaptureOff(GpuDevice device) {
            seen("leaksWithCaptureOff", device);
            device.newStream();
        }
    }

    @Test
    void captureSitesIsInheritedUnlessTheMethodSetsIt() {
        EngineExecutionResults results = run(CapturesSitesOnTheClass.class);
        String on = failureOf(results, "leaksInheritingCapture");
        assertTrue(on.contains("GpuStream: 1 not closed (GpuStream.close()); captured:"), on);
        assertTrue(on.contains("at io.cudaloom.junit.GpuTestRefinementTest$CapturesSitesOnTheClass"
                + ".leaksInheritingCapture(GpuTestRefinementTest.java:"), on);
        String off = failureOf(results, "leaksWithCaptureOff");
        assertTrue(off.contains("GpuStream: 1 not closed (GpuStream.close()); to see where each was opened:"), off);
        assertFalse(off.contains("GpuTestRefinementTest.java:"), off);
    }

    // ---- bad input ------------------------------------------------------------------------------

    @GpuTest(simulatedFallback = true)
    static class GivesTwoValues {
        @Test
        @GpuTest(checkLeaks = {true, false})
        void twoValues(GpuDevice device) {
            seen("twoValues", device);
        }
    }

    @Test
    void moreThanOneValueFailsTheTestNamingTheAttributeAndTheMethod() {
        EngineExecutionResults results = run(GivesTwoValues.class);
        TestExecutionResult r = resultOf(results, "twoValues");
        assertEquals(TestExecutionResult.Status.FAILED, r.getStatus(), r.toString());
        Throwable t = r.getThrowable().orElseThrow().getCause(); // JUnit wraps what a condition throws
        assertInstanceOf(ExtensionConfigurationException.class, t, r.toString());
        assertTrue(t.getMessage().startsWith("@GpuTest(checkLeaks = {true, false}) on "), t.getMessage());
        assertTrue(t.getMessage().contains("GivesTwoValues.twoValues(io.cudaloom.GpuDevice)"), t.getMessage());
        assertTrue(t.getMessage().endsWith(": give one value, or none to inherit"), t.getMessage());
        assertFalse(t.getMessage().contains("\n"), t.getMessage());
        assertTrue(SEEN.isEmpty());
    }
}
