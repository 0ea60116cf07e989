package io.cudaloom.junit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import io.cudaloom.GpuDevice;
import io.cudaloom.GpuFaultException;
import io.cudaloom.GpuStream;
import io.cudaloom.ReactorConfig;
import io.cudaloom.cuda.Cuda;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionConfigurationException;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.reporting.ReportEntry;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;
import org.junit.platform.testkit.engine.EventType;
import org.junit.platform.testkit.engine.Events;

/**
 * {@link GpuTest} and {@link GpuExtension}, checked by running small fixture classes (the static
 * classes below) through JUnit's {@link EngineTestKit} and looking at what happened to them: skipped
 * and why, which device they ran on, what was injected, which failed and with what message.
 *
 * <p>Runs everywhere on the simulated device: the fixtures are run with
 * {@value GpuExtension#DEVICE_PARAMETER} = {@code sim} wherever the outcome must not depend on the
 * machine. The fixtures are nested classes named without "Test", so neither surefire nor the console
 * launcher's class-path scan runs them on their own. They report to this class through {@link #SEEN}
 * and their latches, reset before each test (this class's tests run one at a time).
 */
class GpuExtensionTest {
    /** Fixtures' observations: devices, streams, flags. */
    static final Queue<Object> SEEN = new ConcurrentLinkedQueue<>();
    /** Holds a leaking fixture's stream; opened after the run by {@link #openGates()}. */
    static volatile CountDownLatch gate = new CountDownLatch(1);
    static volatile CountDownLatch firstArmed = new CountDownLatch(1);
    static volatile CountDownLatch secondChecked = new CountDownLatch(1);
    static final AtomicBoolean TRANSIENT_SEEN = new AtomicBoolean();

    private static final Duration LONG = Duration.ofSeconds(30);

    @BeforeEach
    void reset() {
        SEEN.clear();
        gate = new CountDownLatch(1);
        firstArmed = new CountDownLatch(1);
        secondChecked = new CountDownLatch(1);
        TRANSIENT_SEEN.set(false);
    }

    @AfterEach
    void openGates() {
        gate.countDown(); // a leaking fixture's stream may run its remaining work and end
    }

    // ---- running fixtures -----------------------------------------------------------------------

    /** Runs {@code fixture} with a short leak-check bound, the backend chosen by {@code device}, and {@code more} parameters. */
    private static EngineExecutionResults run(Class<?> fixture, String device, String... more) {
        var kit = EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(fixture))
                .configurationParameter(GpuExtension.DEVICE_PARAMETER, device)
                .configurationParameter(GpuExtension.LEAK_CHECK_TIMEOUT_PARAMETER, "300");
        for (int i = 0; i < more.length; i += 2) {
            kit = kit.configurationParameter(more[i], more[i + 1]);
        }
        return kit.execute();
    }

    /** The throwable a test (by method name) failed with. */
    private static Throwable failureOf(EngineExecutionResults results, String method) {
        return resultOf(results.testEvents(), method, TestExecutionResult.Status.FAILED);
    }

    private static Throwable resultOf(Events events, String name, TestExecutionResult.Status status) {
        Event finished = events.finished().stream()
                .filter(e -> e.getTestDescriptor().getDisplayName().contains(name))
                .findFirst().orElseThrow(() -> new AssertionError("no finished event for " + name + ": " + events.list()));
        TestExecutionResult r = finished.getRequiredPayload(TestExecutionResult.class);
        assertEquals(status, r.getStatus(), name + ": " + r);
        return r.getThrowable().orElseThrow(() -> new AssertionError(name + " finished without a throwable: " + r));
    }

    private static List<String> skipReasons(Events events) {
        return events.skipped().stream().map(e -> e.getRequiredPayload(String.class)).toList();
    }

    private static List<String> reportedDevices(EngineExecutionResults results) {
        return results.allEvents().reportingEntryPublished().stream()
                .map(e -> e.getRequiredPayload(ReportEntry.class).getKeyValuePairs())
                .map(m -> m.get(GpuExtension.DEVICE_REPORT_KEY)).filter(v -> v != null).toList();
    }

    private static String printedBy(Runnable r) {
        PrintStream original = System.out;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        try {
            r.run();
        } finally {
            System.setOut(original);
        }
        String printed = bytes.toString(StandardCharsets.UTF_8);
        original.print(printed);
        return printed;
    }

    // ---- skipping and where tests run -----------------------------------------------------------

    @GpuTest
    static class NeedsCuda {
        @Test
        void runs(GpuDevice device) {
            SEEN.add(device.name());
        }
    }

    @Test
    void withoutCudaAndWithoutTheFallbackTheClassIsSkippedWithThePrintedReason() {
        EngineExecutionResults[] results = new EngineExecutionResults[1];
        String printed = printedBy(() -> results[0] = run(NeedsCuda.class, "auto"));
        if (Cuda.isAvailable()) { // a machine with a GPU: the class runs there
            results[0].testEvents().assertStatistics(s -> s.started(1).succeeded(1));
            assertFalse(SEEN.peek().toString().startsWith("simulated"), SEEN.toString());
            return;
        }
        List<String> reasons = skipReasons(results[0].containerEvents());
        assertEquals(1, reasons.size(), reasons.toString());
        assertTrue(reasons.get(0).startsWith("no CUDA device: "), reasons.get(0));
        assertTrue(reasons.get(0).length() > "no CUDA device: ".length(), "the reason says why: " + reasons.get(0));
        results[0].testEvents().assertStatistics(s -> s.started(0));
        assertTrue(printed.contains("SKIPPED ") && printed.contains("NeedsCuda") && printed.contains(reasons.get(0)),
                printed);
        assertTrue(SEEN.isEmpty());
    }

    @Test
    void askingForTheSimulatedDeviceSkipsTestsThatNeedCudaOnAnyMachine() {
        EngineExecutionResults results = run(NeedsCuda.class, "sim");
        List<String> reasons = skipReasons(results.containerEvents());
        assertEquals(List.of("cudaloom.junit.device=sim asks for the simulated device, and this test needs a CUDA device"
                + " (no simulatedFallback)"), reasons);
        results.testEvents().assertStatistics(s -> s.started(0));
    }

    @Test
    void gpuDeviceOpensBackendPropertyDoesNotSteerGpuTests() {
        // The demo's build sets cudaloom.device=sim for its ordinary tests; its GPU tests must still find the GPU.
        EngineExecutionResults results = run(NeedsCuda.class, "auto", GpuDevice.BACKEND_PROPERTY, "sim");
        if (Cuda.isAvailable()) {
            results.testEvents().assertStatistics(s -> s.started(1).succeeded(1));
        } else {
            List<String> reasons = skipReasons(results.containerEvents());
            assertEquals(1, reasons.size(), reasons.toString());
            assertTrue(reasons.get(0).startsWith("no CUDA device: "), reasons.get(0));
        }
    }

    @Test
    void anUnknownBackendNameFailsTheClassNamingTheParameter() {
        EngineExecutionResults results = run(NeedsCuda.class, "tpu");
        Throwable t = resultOf(results.containerEvents(), "NeedsCuda", TestExecutionResult.Status.FAILED);
        assertInstanceOf(ExtensionConfigurationException.class, t.getCause(), t.toString());
        assertEquals("cudaloom.junit.device must be auto, cuda or sim, was 'tpu'", t.getCause().getMessage());
        results.testEvents().assertStatistics(s -> s.started(0));
    }

    @GpuTest(simulatedFallback = true)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class FallsBack {
        @BeforeAll
        static void before(GpuDevice device) {
            SEEN.add(device);
        }

        @Test
        @Order(1)
        void first(GpuDevice device, GpuStream stream, SimulatedDevice sim, SimulatedStream other) throws Exception {
            assertSame(device, sim);
            assertSame(device, stream.device());
            assertNotSame(stream, other, "each stream parameter is a stream of its own");
            other.launchKernel(Duration.ofMillis(1));
            other.await();
            SEEN.add(device);
            SEEN.add(stream);
            SEEN.add(other);
        }

        @Test
        @Order(2)
        void second(GpuDevice device, GpuStream stream) throws Exception {
            SEEN.add(device);
            SEEN.add(stream);
            SEEN.add(stream.isClosed());
        }
    }

    @Test
    void withTheFallbackTheClassRunsOnOneSimulatedDeviceWithAFreshStreamPerTest() {
        EngineExecutionResults results = run(FallsBack.class, "sim");
        results.testEvents().assertStatistics(s -> s.started(2).succeeded(2));
        results.containerEvents().assertStatistics(s -> s.failed(0));
        List<Object> seen = new ArrayList<>(SEEN);
        // @BeforeAll device, first: device, stream, other; second: device, stream, closed?
        assertEquals(7, seen.size(), seen.toString());
        SimulatedDevice device = assertInstanceOf(SimulatedDevice.class, seen.get(0));
        assertSame(device, seen.get(1), "one device for the class");
        assertSame(device, seen.get(4), "one device for the class");
        GpuStream first = (GpuStream) seen.get(2);
        GpuStream second = (GpuStream) seen.get(5);
        assertNotSame(first, second, "a fresh stream per test");
        assertEquals(false, seen.get(6), "the stream was open during its test");
        assertTrue(first.isClosed() && ((GpuStream) seen.get(3)).isClosed() && second.isClosed(),
                "streams closed after their test");
        assertTrue(device.isClosed(), "the device is closed after the class");
        assertEquals(List.of(device.name()), reportedDevices(results));
    }

    @GpuTest(simulatedFallback = true)
    static class RunsAnywhere {
        @Test
        void runs(GpuDevice device, GpuStream stream) throws Exception {
            assertSame(device, stream.device());
            stream.await();
            SEEN.add(device);
        }
    }

    @Test
    void inAutoModeTheFallbackRunsOnTheGpuWhereThereIsOneAndOnTheSimulatedDeviceElsewhere() {
        EngineExecutionResults results = run(RunsAnywhere.class, "auto");
        results.testEvents().assertStatistics(s -> s.started(1).succeeded(1));
        GpuDevice device = (GpuDevice) SEEN.peek();
        assertEquals(!Cuda.isAvailable(), device.isSimulated(), device.name());
        assertEquals(List.of(device.name()), reportedDevices(results));
    }

    @GpuTest(simulatedFallback = true)
    static class AsksForCuda {
        @Test
        void needsTheGpu(CudaDevice device) {
            SEEN.add(device);
        }
    }

    @Test
    void aCudaDeviceParameterOnTheSimulatedDeviceFailsNamingTheDevice() {
        EngineExecutionResults results = run(AsksForCuda.class, "sim");
        Throwable t = failureOf(results, "needsTheGpu");
        assertInstanceOf(ParameterResolutionException.class, t);
        assertTrue(t.getMessage().contains("cannot resolve the CudaDevice parameter of needsTheGpu: the test runs on"
                + " simulated device"), t.getMessage());
        assertTrue(t.getMessage().contains("declare a GpuDevice or GpuStream parameter"), t.getMessage());
        assertTrue(SEEN.isEmpty());
    }

    static class OnlyOneMethod {
        @Test
        @GpuTest(simulatedFallback = true, config = "io.cudaloom.junit.GpuExtensionTest#capacityEight")
        void uses(GpuDevice device) {
            SEEN.add(device);
        }

        @Test
        void doesNot() {
            SEEN.add("plain");
        }
    }

    static ReactorConfig capacityEight() {
        return ReactorConfig.builder().capacity(8).build();
    }

    @Test
    void onAMethodItServesThatMethodAndTheDeviceIsStillClosedAfterTheClass() {
        EngineExecutionResults results = run(OnlyOneMethod.class, "sim");
        results.testEvents().assertStatistics(s -> s.started(2).succeeded(2));
        GpuDevice device = SEEN.stream().filter(GpuDevice.class::isInstance).map(GpuDevice.class::cast)
                .findFirst().orElseThrow();
        assertEquals(8, device.reactor().stats().capacity(), "the configuration named by Class#method");
        assertTrue(device.reactor().isClosed(), "closed with the class's store");
    }

    @GpuTest(simulatedFallback = true, config = "small")
    static class NamesItsConfig {
        static ReactorConfig small() {
            return ReactorConfig.builder().capacity(16).build();
        }

        @Test
        void uses(GpuDevice device) {
            assertEquals(16, device.reactor().stats().capacity());
        }
    }

    @GpuTest(simulatedFallback = true, config = "nope")
    static class NamesAMissingConfig {
        @Test
        void uses(GpuDevice device) {
            SEEN.add(device);
        }
    }

    @Test
    void theConfigurationIsAStaticMethodOfTheClassAndAMissingOneIsNamed() {
        run(NamesItsConfig.class, "sim").testEvents().assertStatistics(s -> s.started(1).succeeded(1));
        Throwable t = failureOf(run(NamesAMissingConfig.class, "sim"), "uses");
        assertTrue(t.getMessage().contains("@GpuTest(config = \"nope\") of " + NamesAMissingConfig.class.getName()
                + ": no method nope() without parameters"), t.getMessage());
    }

    // ---- the leak check -------------------------------------------------------------------------

    @GpuTest(simulatedFallback = true)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class LeavesAWaiter {
        @Test
        @Order(1)
        void leavesAWaiterOnAHeldStream(SimulatedDevice device, SimulatedStream stream) {
            SEEN.add(device);
            holdOnGate(stream);
            Thread.ofVirtual().start(() -> {
                try {
                    stream.event().await();
                } catch (Exception e) {
                    SEEN.add(e); // woken when the extension closes the device
                }
            });
            await().atMost(LONG).until(() -> device.reactor().stats().armedNow() == 1);
        }

        @Test
        @Order(2)
        void theNextTestGetsAFreshDevice(SimulatedDevice device) {
            SEEN.add(device);
        }
    }

    /** A kernel that holds {@code stream} until {@link #gate} opens (after the fixture's run). */
    static void holdOnGate(SimulatedStream stream) {
        CountDownLatch g = gate;
        stream.launch(() -> {
            try {
                g.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    @Test
    void aWaiterLeftOnAHeldStreamFailsTheTestNamingTheArmedSlotAndTheNextTestGetsAFreshDevice() {
        EngineExecutionResults results = run(LeavesAWaiter.class, "sim");
        Throwable t = failureOf(results, "leavesAWaiterOnAHeldStream");
        assertInstanceOf(AssertionError.class, t);
        String m = t.getMessage();
        assertTrue(m.contains("LeavesAWaiter > leavesAWaiterOnAHeldStream(SimulatedDevice, SimulatedStream) left "), m);
        assertTrue(m.contains("not at rest (checked for 300 ms)"), m);
        // The waiter's slot, and the one the extension's close of the held stream registered.
        assertTrue(m.contains("2 completion slot(s) still armed"), m);
        assertTrue(m.contains("completion slots back on the free list: "), m);
        assertTrue(m.endsWith("\n  the device is closed; the class's next test gets a fresh one"), m);
        results.testEvents().assertStatistics(s -> s.started(2).failed(1).succeeded(1));
        List<SimulatedDevice> devices = SEEN.stream().filter(SimulatedDevice.class::isInstance)
                .map(SimulatedDevice.class::cast).toList();
        assertEquals(2, devices.size(), SEEN.toString());
        assertNotSame(devices.get(0), devices.get(1), "the leaking test's device was replaced");
        assertTrue(devices.get(0).isClosed());
        assertTrue(m.contains(devices.get(0).name()), m);
        int capacity = devices.get(0).reactor().stats().capacity();
        assertTrue(m.contains("\n  reactor: capacity " + capacity + ", free " + (capacity - 2)
                + ", armed 2, quarantined 0; registrations 2,"),
                "the reactor's stats as the check saw them, before the device's close: " + m);
        await().atMost(LONG).until(() -> SEEN.stream().anyMatch(io.cudaloom.ReactorClosedException.class::isInstance));
    }

    @GpuTest(simulatedFallback = true)
    static class LeavesARegistration {
        @Test
        void leavesAFuture(SimulatedDevice device, SimulatedStream stream) {
            holdOnGate(stream);
            SEEN.add(stream.event().toCompletableFuture());
        }
    }

    @Test
    void aFutureLeftRegisteredFailsTheTest() {
        EngineExecutionResults results = run(LeavesARegistration.class, "sim");
        String m = failureOf(results, "leavesAFuture").getMessage();
        // The future's slot, and the one the extension's close of the held stream registered.
        assertTrue(m.contains("2 completion slot(s) still armed: an await, future or onComplete callback"), m);
        java.util.concurrent.CompletableFuture<?> f = (java.util.concurrent.CompletableFuture<?>) SEEN.peek();
        // the close fails the future through its executor, so the failure arrives asynchronously
        await().atMost(LONG).until(f::isCompletedExceptionally);
        Throwable cause = assertThrows(java.util.concurrent.ExecutionException.class, f::get).getCause();
        assertInstanceOf(io.cudaloom.ReactorClosedException.class, cause, "the extension closed the device, failing the future");
    }

    @GpuTest(simulatedFallback = true)
    static class AbandonsAnAwait {
        @Test
        void givesUpOnALongKernel(SimulatedDevice device, SimulatedStream stream) throws Exception {
            CountDownLatch release = new CountDownLatch(1);
            stream.launch(() -> {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            assertFalse(stream.event().await(Duration.ofMillis(1)), "the kernel is held");
            // The abandoned slot comes back only once the kernel ends, which it does just after the test.
            Thread.ofVirtual().start(() -> {
                await().atMost(LONG).until(() -> TRANSIENT_SEEN.get());
                release.countDown();
            });
            var s = device.reactor().stats();
            TRANSIENT_SEEN.set(s.freeSlots() < s.capacity() || s.armedNow() > 0);
        }
    }

    @Test
    void aSlotStillComingBackWhenTheTestEndsIsWaitedForNotReported() {
        EngineExecutionResults results = run(AbandonsAnAwait.class, "sim",
                GpuExtension.LEAK_CHECK_TIMEOUT_PARAMETER, "10000");
        results.testEvents().assertStatistics(s -> s.started(1).succeeded(1));
        assertTrue(TRANSIENT_SEEN.get(), "the slot was still out when the test ended");
    }

    @GpuTest(simulatedFallback = true)
    static class ClosesAStreamWithWorkInFlight {
        @Test
        void leavesWorkThatEndsSoonAfter(SimulatedDevice device, SimulatedStream stream) {
            CountDownLatch release = new CountDownLatch(1);
            stream.launch(() -> {
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            // The extension closes the stream after the test: the close registers for the work in
            // flight, and the check waits for that slot, which comes back once the work ends.
            Thread.ofVirtual().start(() -> {
                await().atMost(LONG).until(() -> stream.isClosed() && device.reactor().stats().armedNow() == 1);
                TRANSIENT_SEEN.set(true);
                release.countDown();
            });
        }
    }

    @Test
    void aStreamClosedWithWorkInFlightIsWaitedForNotReported() {
        EngineExecutionResults results = run(ClosesAStreamWithWorkInFlight.class, "sim",
                GpuExtension.LEAK_CHECK_TIMEOUT_PARAMETER, "10000");
        results.testEvents().assertStatistics(s -> s.started(1).succeeded(1));
        assertTrue(TRANSIENT_SEEN.get(), "the close's slot was armed after the test");
    }

    @GpuTest(simulatedFallback = true)
    static class Faults {
        @Test
        void faultsWithoutSayingSo(SimulatedStream stream) {
            stream.injectFault("CUDA_ERROR_ILLEGAL_ADDRESS (simulated)");
            assertThrows(GpuFaultException.class, stream::await);
        }
    }

    @Test
    void aFaultIsReportedNamingTheErrorAndTheStream() {
        EngineExecutionResults results = run(Faults.class, "sim");
        String m = failureOf(results, "faultsWithoutSayingSo").getMessage();
        assertTrue(m.contains("the device faulted: CUDA_ERROR_ILLEGAL_ADDRESS (simulated) on sim-stream-1"), m);
        assertTrue(m.contains("@ExpectDeviceFault"), "says how to mark an intended fault: " + m);
    }

    @GpuTest(simulatedFallback = true)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class ExpectsFaults {
        @Test
        @Order(1)
        @ExpectDeviceFault
        void faultsOnPurpose(SimulatedDevice device, SimulatedStream stream) {
            SEEN.add(device);
            stream.injectFault("CUDA_ERROR_ILLEGAL_ADDRESS (simulated)");
            assertThrows(GpuFaultException.class, stream::await);
        }

        @Test
        @Order(2)
        @ExpectDeviceFault
        void saysItFaultsButDoesNot(SimulatedDevice device, SimulatedStream stream) throws Exception {
            SEEN.add(device);
            stream.launchKernel(Duration.ZERO);
            stream.await();
        }
    }

    @Test
    void anExpectedFaultPassesAndReplacesTheDeviceAndAMissingOneFails() {
        EngineExecutionResults results = run(ExpectsFaults.class, "sim");
        results.testEvents().assertStatistics(s -> s.started(2).succeeded(1).failed(1));
        String m = failureOf(results, "saysItFaultsButDoesNot").getMessage();
        assertEquals("@ExpectDeviceFault on ExpectsFaults > saysItFaultsButDoesNot(SimulatedDevice, SimulatedStream):"
                + " no device of the class faulted", m.replace("GpuExtensionTest$", ""));
        SimulatedDevice faulted = (SimulatedDevice) SEEN.poll();
        assertTrue(faulted.isClosed() && io.cudaloom.internal.BackendAccess.hooks().isMemoryReleased(faulted), "closed, every slot back");
        assertNotSame(faulted, SEEN.poll(), "the next test got a fresh device");
    }

    @GpuTest(simulatedFallback = true)
    static class LeaksNothingBeforeTheCheckButClosesTheDevice {
        @Test
        void closesIt(GpuDevice device) {
            SEEN.add(device);
            device.close();
        }

        @Test
        void getsAnother(GpuDevice device) {
            SEEN.add(device);
        }
    }

    @Test
    void aTestThatClosesTheInjectedDeviceIsNotALeakAndTheNextGetsAnOpenOne() {
        EngineExecutionResults results = run(LeaksNothingBeforeTheCheckButClosesTheDevice.class, "sim");
        results.testEvents().assertStatistics(s -> s.started(2).succeeded(2));
        assertEquals(2, SEEN.stream().distinct().count(), SEEN.toString());
    }

    // ---- parallel execution ---------------------------------------------------------------------

    private static final String[] PARALLEL = {
        "junit.jupiter.execution.parallel.enabled", "true",
        "junit.jupiter.execution.parallel.config.strategy", "fixed",
        "junit.jupiter.execution.parallel.config.fixed.parallelism", "4"};

    /** Counts down {@link #secondChecked} after the extension's own after-each step of {@code second}. */
    static final class AfterTheCheck implements AfterEachCallback {
        @Override
        public void afterEach(ExtensionContext context) {
            if (context.getRequiredTestMethod().getName().equals("second")) {
                secondChecked.countDown();
            }
        }
    }

    /**
     * Two tests at once on the class's device: {@code first} keeps a slot armed until {@code second}
     * has finished, the extension's after-each step included (AfterTheCheck is registered first,
     * so its after-each runs after the extension's).
     */
    abstract static class OverlappingPair {
        @Test
        void first(SimulatedDevice device, SimulatedStream stream) throws Exception {
            CountDownLatch hold = new CountDownLatch(1);
            stream.launch(() -> {
                try {
                    hold.await();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            var done = stream.event().toCompletableFuture();
            await().atMost(LONG).until(() -> device.reactor().stats().armedNow() >= 1);
            firstArmed.countDown();
            assertTrue(secondChecked.await(30, TimeUnit.SECONDS), "second finished while first ran");
            hold.countDown();
            done.get(30, TimeUnit.SECONDS);
        }

        @Test
        void second(SimulatedDevice device, SimulatedStream stream) throws Exception {
            assertTrue(firstArmed.await(30, TimeUnit.SECONDS), "first armed its slot");
            stream.launchKernel(Duration.ZERO);
            stream.await();
            assertTrue(device.reactor().stats().armedNow() >= 1, "first's slot is armed as second ends");
        }
    }

    @ExtendWith(AfterTheCheck.class)
    @GpuTest(simulatedFallback = true)
    @Execution(ExecutionMode.CONCURRENT)
    static class Overlapping extends OverlappingPair {}

    /** The same pair in a @Nested class, which runs concurrently because the class around it says so. */
    @ExtendWith(AfterTheCheck.class)
    @GpuTest(simulatedFallback = true)
    @Execution(ExecutionMode.CONCURRENT)
    static class OverlappingInNested {
        @org.junit.jupiter.api.Nested
        class Inner extends OverlappingPair {}
    }

    @Test
    void whenTheMethodsRunConcurrentlyOneTestsWorkInFlightIsNotAnotherTestsLeak() {
        EngineExecutionResults results = run(Overlapping.class, "sim", PARALLEL);
        results.testEvents().assertStatistics(s -> s.started(2).succeeded(2));
        results.containerEvents().assertStatistics(s -> s.failed(0));
    }

    @Test
    void soInANestedClassOfAConcurrentClass() {
        EngineExecutionResults results = run(OverlappingInNested.class, "sim", PARALLEL);
        results.testEvents().assertStatistics(s -> s.started(2).succeeded(2));
        results.containerEvents().assertStatistics(s -> s.failed(0));
    }

    @GpuTest(simulatedFallback = true)
    @Execution(ExecutionMode.CONCURRENT)
    static class OverlappingLeak {
        @Test
        void leaves(SimulatedStream stream) {
            holdOnGate(stream);
            SEEN.add(stream.event().toCompletableFuture());
        }

        @Test
        void cleansUp(SimulatedStream stream) throws Exception {
            stream.launchKernel(Duration.ZERO);
            stream.await();
        }

        @Test
        @ExpectDeviceFault
        void wouldFault() {
            SEEN.add("ran");
        }
    }

    @Test
    void whenTheMethodsRunConcurrentlyALeakIsReportedAfterTheClass() {
        EngineExecutionResults results = run(OverlappingLeak.class, "sim", PARALLEL);
        results.testEvents().assertStatistics(s -> s.started(3).succeeded(2).failed(1));
        Throwable refused = failureOf(results, "wouldFault");
        assertInstanceOf(ExtensionConfigurationException.class, refused);
        assertTrue(refused.getMessage().contains("may run concurrently"), refused.getMessage());
        assertFalse(SEEN.contains("ran"));
        Throwable t = resultOf(results.containerEvents(), "GpuExtensionTest$OverlappingLeak",
                TestExecutionResult.Status.FAILED);
        assertTrue(t.getMessage().startsWith("the tests of GpuExtensionTest$OverlappingLeak left simulated device"),
                t.getMessage());
        assertTrue(t.getMessage().contains("2 completion slot(s) still armed"), t.getMessage()); // the future's, the close's
        assertFalse(t.getMessage().contains("next test"), "no test comes after the class: " + t.getMessage());
    }

    @Test
    void theExtensionKeepsNoStateOfItsOwnSoParallelTestsShareNothingThroughIt() {
        for (java.lang.reflect.Field f : GpuExtension.class.getDeclaredFields()) {
            int mod = f.getModifiers();
            assertTrue(java.lang.reflect.Modifier.isStatic(mod), f + ": an instance field");
            assertTrue(java.lang.reflect.Modifier.isFinal(mod), f + " is static and not final");
            assertTrue(f.getType().isPrimitive() || List.of(String.class, Duration.class, java.util.Set.class,
                    org.junit.jupiter.api.extension.ExtensionContext.Namespace.class).contains(f.getType()),
                    f + " may hold mutable state");
        }
    }
}
