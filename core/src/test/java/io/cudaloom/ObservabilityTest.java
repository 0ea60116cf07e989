package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.LONG;
import static io.cudaloom.ReactorTestSupport.gate;
import static io.cudaloom.ReactorTestSupport.parkedOn;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.InstantDevice.InstantStream;
import io.cudaloom.reactor.metrics.DeviceFaultEvent;
import io.cudaloom.reactor.metrics.FallbackEvent;
import io.cudaloom.reactor.metrics.CountersEvent;
import io.cudaloom.reactor.metrics.Monitoring;
import io.cudaloom.reactor.metrics.SlowAwaitEvent;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import javax.management.MBeanRegistrationException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import jdk.jfr.consumer.RecordingStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What operators see: the JFR events (a slow await with its path and outcome, a fallback with its
 * reason, a device fault, the periodic counters) recorded with the fields they promise, and the
 * reactor's MXBean on the platform MBean server while the device is open, gone once it closes.
 * Events are read back from a recording file, or live from a {@link RecordingStream}; each
 * assertion picks the events of its own device by name, since other devices may be open.
 */
class ObservabilityTest {
    private static final MBeanServer MBEANS = ManagementFactory.getPlatformMBeanServer();

    @TempDir
    Path dir;

    /** The events named {@code name} that {@code device} emitted. */
    private static List<RecordedEvent> of(List<RecordedEvent> events, String name, GpuDevice device) {
        return events.stream()
                .filter(e -> e.getEventType().getName().equals(name) && e.getString("device").equals(device.name()))
                .toList();
    }

    /** Runs {@code body} under a recording set up by {@code settings}; returns what it recorded. */
    private List<RecordedEvent> record(Consumer<Recording> settings, ThrowingRunnable body) throws Exception {
        Path file = dir.resolve("test.jfr");
        try (Recording recording = new Recording()) {
            settings.accept(recording);
            recording.start();
            body.run();
            recording.stop(); // flushes every event committed before it
            recording.dump(file);
        }
        return RecordingFile.readAllEvents(file);
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    private static Consumer<Recording> slowAwaitsOverZeroMs() {
        return r -> {
            r.enable(SlowAwaitEvent.NAME).withThreshold(Duration.ZERO);
            r.enable(FallbackEvent.NAME);
            r.enable(DeviceFaultEvent.NAME);
        };
    }

    /** Starts a virtual thread awaiting {@code stream}'s work; its outcome goes to {@code failure}. */
    private static Thread awaiting(GpuStream stream, AtomicReference<Throwable> failure) {
        GpuEvent event = stream.event();
        return Thread.ofVirtual().start(() -> {
            try {
                event.await();
            } catch (Throwable t) {
                failure.set(t);
            }
        });
    }

    // ---- JFR: SlowAwait ---------------------------------------------------------------------------

    @Test
    void aParkedAwaitOverTheThresholdIsRecordedWithDeviceStreamPathAndOutcome() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().waiterSpin(Duration.ZERO).coalesce(false).build())) {
            SimulatedStream stream = device.newStream();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<RecordedEvent> events = record(slowAwaitsOverZeroMs(), () -> {
                CountDownLatch gate = gate(stream);
                Thread waiter = awaiting(stream, failure);
                await().atMost(LONG).until(() -> parkedOn(waiter, device.reactor()));
                gate.countDown();
                waiter.join();
            });
            assertNull(failure.get());
            List<RecordedEvent> slow = of(events, SlowAwaitEvent.NAME, device);
            assertEquals(1, slow.size(), "one slow await: " + slow);
            RecordedEvent e = slow.get(0);
            assertEquals(stream.toString(), e.getString("stream"));
            assertEquals("parked", e.getString("path"));
            assertEquals("completed", e.getString("outcome"));
            assertTrue(e.getDuration().toNanos() > 0, "a duration: " + e);
            assertTrue(e.getThread().isVirtual(), "the awaiting (virtual) thread: " + e.getThread());
            assertNotNull(e.getStackTrace(), "the await's stack trace");
            assertTrue(e.getStackTrace().getFrames().stream()
                    .anyMatch(f -> f.getMethod().getName().equals("await")), "await() on the stack: " + e);
        }
    }

    /**
     * An await served by a closed stream's drain is timed like one on an open stream: before, the
     * drain path began no event, so a slow await of an event taken before its stream's close left
     * nothing in the recording (this test failed: no event).
     */
    @Test
    void anAwaitServedByAClosedStreamsDrainIsRecordedWithThePathDrain() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().waiterSpin(Duration.ZERO).build())) {
            SimulatedStream stream = device.newStream();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicReference<Boolean> timedOut = new AtomicReference<>();
            List<RecordedEvent> events = record(slowAwaitsOverZeroMs(), () -> {
                CountDownLatch gate = gate(stream);
                GpuEvent before = stream.event();
                GpuEvent alsoBefore = stream.event();
                stream.close();
                Thread waiter = awaiting(before, failure);
                await().atMost(LONG).until(() -> ReactorTestSupport.parked(waiter));
                timedOut.set(!alsoBefore.await(Duration.ofMillis(1))); // a timed wait that runs out
                gate.countDown();
                waiter.join();
                assertTrue(alsoBefore.await(Duration.ZERO), "a poll once it is done");
            });
            assertNull(failure.get());
            assertEquals(Boolean.TRUE, timedOut.get());
            List<RecordedEvent> slow = of(events, SlowAwaitEvent.NAME, device);
            assertEquals(List.of("drain completed", "drain timed out"), slow.stream()
                    .map(e -> e.getString("path") + " " + e.getString("outcome")).sorted().toList(),
                    "the blocking await and the timed one, not the poll: " + slow);
            for (RecordedEvent e : slow) {
                assertEquals(stream.toString(), e.getString("stream"));
                assertTrue(e.getStackTrace().getFrames().stream()
                        .anyMatch(f -> f.getMethod().getName().equals("await")), "await() on the stack: " + e);
            }
        }
    }

    private static Thread awaiting(GpuEvent event, AtomicReference<Throwable> failure) {
        return Thread.ofVirtual().start(() -> {
            try {
                event.await();
            } catch (Throwable t) {
                failure.set(t);
            }
        });
    }

    @Test
    void anAwaitUnderTheThresholdIsNotRecorded() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().waiterSpin(Duration.ZERO).coalesce(false).build())) {
            SimulatedStream stream = device.newStream();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<RecordedEvent> events = record(r -> r.enable(SlowAwaitEvent.NAME).withThreshold(Duration.ofHours(1)),
                    () -> {
                        CountDownLatch gate = gate(stream);
                        Thread waiter = awaiting(stream, failure);
                        await().atMost(LONG).until(() -> parkedOn(waiter, device.reactor()));
                        gate.countDown();
                        waiter.join();
                    });
            assertNull(failure.get());
            assertEquals(1, device.reactor().stats().registrations(), "the await registered (so it was timed)");
            assertEquals(List.of(), of(events, SlowAwaitEvent.NAME, device));
        }
    }

    @Test
    void theDefaultThresholdIs20Ms() {
        String threshold = EventType.getEventType(SlowAwaitEvent.class).getSettingDescriptors().stream()
                .filter(s -> s.getName().equals("threshold")).findFirst().orElseThrow().getDefaultValue();
        assertEquals("20 ms", threshold);
    }

    @Test
    void theInlinePathAndATimeoutAreNamed() throws Exception {
        try (InstantDevice device = InstantDevice.create(ReactorConfig.builder().coalesce(false)
                .waiterSpin(Duration.ofMillis(1), 64).build())) {
            InstantStream stream = device.newStream();
            InstantStream held = device.newStream();
            List<RecordedEvent> events = record(slowAwaitsOverZeroMs(), () -> {
                // Hold the scanner in a completion callback (a direct executor runs it there), so
                // only the waiter's own spin can see its flag, which lands at once: an inline completion.
                CountDownLatch scannerHeld = new CountDownLatch(1);
                CountDownLatch release = new CountDownLatch(1);
                device.newStream().event().onComplete(Runnable::run, () -> {
                    scannerHeld.countDown();
                    ReactorTestSupport.awaitUninterruptibly(release);
                }, e -> { });
                scannerHeld.await();
                stream.await();
                release.countDown();
                InstantStream.Gate gate = held.hold();
                assertFalse(held.event().await(Duration.ofMillis(1)));
                gate.open();
            });
            assertEquals(1, device.reactor().stats().inlineCompletions());
            List<RecordedEvent> slow = of(events, SlowAwaitEvent.NAME, device);
            assertEquals(2, slow.size(), "both awaits (threshold 0): " + slow);
            RecordedEvent inline = slow.stream().filter(e -> e.getString("stream").equals(stream.toString()))
                    .findFirst().orElseThrow();
            assertEquals("inline", inline.getString("path"));
            assertEquals("completed", inline.getString("outcome"));
            RecordedEvent timedOut = slow.stream().filter(e -> e.getString("stream").equals(held.toString()))
                    .findFirst().orElseThrow();
            assertEquals("timed out", timedOut.getString("outcome"));
            assertTrue(timedOut.getDuration().toNanos() >= 1_000_000, "waited its 1 ms: " + timedOut);
        }
    }

    /**
     * The path says what happened to that await. With the defaults (coalescing on), a lone await
     * arms a write of its own and parks as with {@code coalesce(false)}: {@code parked}, as
     * {@code stats().coalesced()} says (0); before, it was recorded as {@code coalesced} with
     * defaults and {@code parked} without (this test failed on the first assertion).
     */
    @Test
    void aLoneAwaitIsParkedWithOrWithoutCoalescing() throws Exception {
        for (boolean coalesce : new boolean[] {true, false}) {
            try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().coalesce(coalesce).build())) {
                SimulatedStream stream = device.newStream();
                AtomicReference<Throwable> failure = new AtomicReference<>();
                List<RecordedEvent> events = record(slowAwaitsOverZeroMs(), () -> {
                    CountDownLatch gate = gate(stream);
                    Thread waiter = awaiting(stream, failure);
                    await().atMost(LONG).until(() -> parkedOn(waiter, device.reactor()));
                    gate.countDown();
                    waiter.join();
                });
                assertNull(failure.get());
                assertEquals(0, device.reactor().stats().coalesced(), "coalesce(" + coalesce + "): shared with nobody");
                assertEquals(List.of("parked"), of(events, SlowAwaitEvent.NAME, device).stream()
                        .map(e -> e.getString("path")).toList(), "coalesce(" + coalesce + ")");
            }
        }
    }

    /**
     * Waiters that join the write a first waiter armed are {@code coalesced}, one event for each
     * await {@code stats().coalesced()} counts; the first, whose write they share, is {@code parked}.
     */
    @Test
    void theAwaitsThatShareAnotherWaitersWriteAreCoalescedAsStatsCountThem() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.defaults())) {
            SimulatedStream stream = device.newStream();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<RecordedEvent> events = record(slowAwaitsOverZeroMs(), () -> {
                CountDownLatch gate = gate(stream);
                GpuEvent event = stream.event();
                Thread first = awaiting(event, failure);
                await().atMost(LONG).until(() -> parkedOn(first, device.reactor()));
                List<Thread> joiners = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    joiners.add(awaiting(event, failure));
                }
                await().atMost(LONG).until(() -> joiners.stream().allMatch(t -> parkedOn(t, device.reactor())));
                gate.countDown();
                first.join();
                for (Thread t : joiners) {
                    t.join();
                }
            });
            assertNull(failure.get());
            assertEquals(3, device.reactor().stats().coalesced(), "the three joined the first one's write");
            assertEquals(List.of("coalesced", "coalesced", "coalesced", "parked"), of(events, SlowAwaitEvent.NAME, device)
                    .stream().map(e -> e.getString("path")).sorted().toList());
        }
    }

    // ---- JFR: Fallback ----------------------------------------------------------------------------

    @Test
    void theHostCallbackStrategyRecordsAFallbackWithItsReason() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder()
                .strategy(CompletionStrategy.HOST_CALLBACK).build())) {
            SimulatedStream stream = device.newStream();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<RecordedEvent> events = record(slowAwaitsOverZeroMs(), () -> {
                CountDownLatch gate = gate(stream);
                Thread waiter = awaiting(stream, failure);
                await().atMost(LONG).until(() -> parkedOn(waiter, device.reactor()));
                gate.countDown();
                waiter.join();
            });
            assertNull(failure.get());
            List<RecordedEvent> fallbacks = of(events, FallbackEvent.NAME, device);
            assertEquals(1, fallbacks.size(), "one fallback: " + fallbacks);
            assertEquals("HOST_CALLBACK strategy", fallbacks.get(0).getString("reason"));
            assertEquals(stream.toString(), fallbacks.get(0).getString("stream"));
            assertEquals(List.of("fallback"), of(events, SlowAwaitEvent.NAME, device).stream()
                    .map(e -> e.getString("path")).toList());
        }
    }

    @Test
    void anExhaustedPoolRecordsAFallback() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().capacity(1).coalesce(false).build())) {
            SimulatedStream stream = device.newStream();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<RecordedEvent> events = record(slowAwaitsOverZeroMs(), () -> {
                CountDownLatch gate = gate(stream);
                Thread first = awaiting(stream, failure);
                await().atMost(LONG).until(() -> parkedOn(first, device.reactor()));
                Thread second = awaiting(stream, failure); // the only slot is taken
                await().atMost(LONG).until(() -> parkedOn(second, device.reactor()));
                gate.countDown();
                first.join();
                second.join();
            });
            assertNull(failure.get());
            assertEquals(1, device.reactor().stats().fallbacks());
            List<RecordedEvent> fallbacks = of(events, FallbackEvent.NAME, device);
            assertEquals(List.of("pool exhausted"), fallbacks.stream().map(e -> e.getString("reason")).toList());
        }
    }

    @Test
    void aRefusedFlagWriteRecordsAFallback() throws Exception {
        // Direct submission: with combining a flag write the backend refuses at the drain faults the stream.
        try (InstantDevice device = InstantDevice.create(ReactorConfig.builder().coalesce(false)
                .submission(Submission.DIRECT).build())) {
            InstantStream stream = device.newStream();
            stream.refuseFlagWritesNow = true; // host callbacks are still taken (and run at once)
            List<RecordedEvent> events = record(slowAwaitsOverZeroMs(), stream::await);
            assertEquals(1, device.reactor().stats().fallbacks());
            assertEquals(List.of("write refused"), of(events, FallbackEvent.NAME, device).stream()
                    .map(e -> e.getString("reason")).toList());
        }
    }

    // ---- JFR: DeviceFault -------------------------------------------------------------------------

    @Test
    void aFaultFoundByTheProbeRecordsTheErrorAndTheRegistrationsItFailed() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder()
                .waiterSpin(Duration.ZERO).faultProbeInterval(Duration.ofMillis(1)).build())) {
            SimulatedStream stream = device.newStream();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<RecordedEvent> events = record(slowAwaitsOverZeroMs(), () -> {
                CountDownLatch gate = gate(stream);
                stream.injectFault("CUDA_ERROR_ILLEGAL_ADDRESS (simulated)"); // runs when the gate opens
                Thread waiter = awaiting(stream, failure); // its flag write comes after the fault: never lands
                await().atMost(LONG).until(() -> parkedOn(waiter, device.reactor()));
                gate.countDown();
                waiter.join();
                // The scanner commits the event after waking the waiters it failed: seen parked
                // after the join, it has left that delivery, so the event is in the recording.
                Thread scanner = device.reactor().scannerThread();
                await().atMost(LONG).until(() -> ReactorTestSupport.parked(scanner));
            });
            assertInstanceOf(GpuFaultException.class, failure.get());
            List<RecordedEvent> faults = of(events, DeviceFaultEvent.NAME, device);
            assertEquals(1, faults.size(), "one fault: " + faults);
            RecordedEvent fault = faults.get(0);
            assertEquals(stream.toString(), fault.getString("stream"));
            assertTrue(fault.getString("error").contains("CUDA_ERROR_ILLEGAL_ADDRESS"), fault.getString("error"));
            assertEquals(1, fault.getInt("registrationsFailed"));
            assertEquals(List.of("fault"), of(events, SlowAwaitEvent.NAME, device).stream()
                    .map(e -> e.getString("outcome")).toList());
        }
    }

    // ---- JFR: periodic counters -------------------------------------------------------------------

    @Test
    void thePeriodicCountersFollowEachOpenDeviceAndAClosedDevicesHookIsGone() throws Exception {
        ConcurrentLinkedQueue<RecordedEvent> seen = new ConcurrentLinkedQueue<>();
        SimulatedDevice closing = SimulatedDevice.create(); // closed in the test, and again (a no-op) below
        try (RecordingStream rs = new RecordingStream(); SimulatedDevice staying = SimulatedDevice.create()) {
            rs.setReuse(false); // the events are kept
            rs.enable(CountersEvent.NAME).withPeriod(Duration.ofMillis(10));
            rs.onEvent(CountersEvent.NAME, seen::add);
            rs.startAsync();
            SimulatedStream stream = closing.newStream();
            for (int i = 0; i < 3; i++) {
                stream.launchKernel(Duration.ofMillis(1));
                stream.await();
            }
            ReactorStats s = closing.reactor().stats();
            await().atMost(LONG).until(() -> seen.stream().anyMatch(e -> e.getString("device").equals(closing.name())
                    && e.getLong("completions") == s.completions()));
            RecordedEvent e = seen.stream().filter(x -> x.getString("device").equals(closing.name())
                    && x.getLong("completions") == s.completions()).findFirst().orElseThrow();
            assertEquals(s.capacity(), e.getInt("capacity"));
            assertEquals(s.registrations(), e.getLong("registrations"));
            assertEquals(s.immediate(), e.getLong("immediate"));
            assertEquals(s.fallbacks(), e.getLong("fallbacks"));
            assertEquals(0, e.getInt("quarantined"));
            assertTrue(e.getLong("scanPasses") > 0, "the scanner's counters too: " + e);

            assertTrue(closing.reactor().observability().hookAdded(), "JFR is up: the hook is in");
            Runnable hook = closing.reactor().observability().countersHook();
            closing.close();
            Instant closed = Instant.now();
            assertFalse(closing.reactor().observability().hookAdded());
            assertFalse(FlightRecorder.removePeriodicEvent(hook), "close removed the hook already");
            // The other device's hook is still there: it goes on reporting after the close.
            await().atMost(LONG).until(() -> seen.stream().anyMatch(x -> x.getString("device").equals(staying.name())
                    && x.getStartTime().isAfter(closed)));
        } finally {
            closing.close();
        }
    }

    @Test
    void aJvmThatNeverRecordsDoesNotInitializeFlightRecorder() throws Exception {
        Path launcher = Path.of(System.getProperty("java.home"), "bin", "java");
        String classPath = String.join(File.pathSeparator, codeSource(NeverRecords.class),
                codeSource(GpuDevice.class), System.getProperty("java.class.path"));
        Path log = dir.resolve("child.log");
        Process child = new ProcessBuilder(launcher.toString(), "-Xlog:class+load=info", "-cp", classPath,
                NeverRecords.class.getName())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        boolean ended = child.waitFor(LONG.toSeconds(), TimeUnit.SECONDS);
        if (!ended) {
            child.destroyForcibly();
        }
        String output = Files.readString(log, StandardCharsets.UTF_8);
        assertTrue(ended, "the child JVM ended: " + output);
        assertEquals(0, child.exitValue(), output);
        assertTrue(output.contains("fallbacks=1,"), "a fallback was taken too: " + output);
        assertTrue(output.contains("mxbean: io.cudaloom:type=GpuDevice"), output);
        assertTrue(output.contains("flight recorder initialized: false"), output);
        // Every exceptional path was taken (each picks the outcome a SlowAwait event would record).
        for (String path : List.of("timed out: false", "interrupted: InterruptedException",
                "fault: GpuFaultException", "closed device: ReactorClosedException",
                "drain interrupted: InterruptedException", "drain fault: GpuFaultException")) {
            assertTrue(output.contains(path), "the child took the path '" + path + "': " + output);
        }
        // JFR's metadata (what looking up an event type, or adding a periodic hook, initializes),
        // jdk.jfr.Event and our event classes were never loaded, on any of those paths:
        // -Xlog:class+load lists every class loaded. (jdk.jfr.FlightRecorder itself is loaded:
        // asking it whether it is initialized is the emitters' first, cheap check.)
        assertTrue(output.contains("io.cudaloom.reactor.metrics.Monitoring "), "the class-load log is there");
        for (String unloaded : List.of("jdk.jfr.internal.MetadataRepository ", "jdk.jfr.Event ",
                "io.cudaloom.reactor.metrics.SlowAwaitEvent ", "io.cudaloom.reactor.metrics.FallbackEvent ", "io.cudaloom.reactor.metrics.DeviceFaultEvent ",
                "io.cudaloom.reactor.metrics.CountersEvent ")) {
            assertFalse(output.contains(unloaded), unloaded + "was loaded: " + output.lines()
                    .filter(l -> l.contains(unloaded)).toList());
        }
    }

    private static String codeSource(Class<?> type) throws Exception {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }

    /**
     * Opens a device (its MXBean registered), awaits through a slot and a fallback, closes it, and
     * says whether Flight Recorder got initialized. Needs only the core's classes and this one.
     * Nothing here may start a recording, so this JVM shows what a JVM that never records pays.
     */
    static final class NeverRecords {
        public static void main(String[] args) throws Exception {
            try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().capacity(1).coalesce(false).build())) {
                SimulatedStream stream = device.newStream();
                CountDownLatch gate = new CountDownLatch(1);
                stream.launch(() -> {
                    try {
                        gate.await();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                });
                GpuEvent event = stream.event();
                List<Thread> waiters = new ArrayList<>();
                for (int i = 0; i < 2; i++) { // one slot: the second falls back
                    waiters.add(Thread.ofVirtual().start(() -> {
                        try {
                            event.await();
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                    }));
                }
                long deadline = System.nanoTime() + 20_000_000_000L;
                while (device.reactor().stats().registrations() + device.reactor().stats().fallbacks() < 2) {
                    if (System.nanoTime() - deadline > 0) {
                        throw new AssertionError("the two awaits never registered: " + device.reactor().stats());
                    }
                    Thread.onSpinWait(); // both registered? (no test library on this class path)
                }
                gate.countDown();
                for (Thread t : waiters) {
                    t.join();
                }
                System.out.println("stats: " + device.reactor().stats());
                System.out.println("mxbean: " + device.reactor().observability().mbeanName());
            }
            exceptionalPaths();
            System.out.println("flight recorder initialized: " + FlightRecorder.isInitialized());
        }

        /**
         * The awaits that end without the work done: timed out, interrupted, a fault, a closed
         * device, and a closed stream's drain interrupted and faulted. Each prints its outcome.
         */
        private static void exceptionalPaths() throws Exception {
            try (SimulatedDevice device = SimulatedDevice.create()) {
                CountDownLatch gate = new CountDownLatch(1);
                SimulatedStream stream = device.newStream();
                stream.launch(() -> awaitGate(gate));
                GpuEvent blocked = stream.event();
                System.out.println("timed out: " + blocked.await(Duration.ofMillis(20)));
                System.out.println("interrupted: " + failureOf(blocked::await, true));
                gate.countDown();
                blocked.await();

                CountDownLatch faultGate = new CountDownLatch(1);
                SimulatedStream faulting = device.newStream();
                faulting.launch(() -> awaitGate(faultGate));
                faulting.injectFault("injected");
                GpuEvent faulted = faulting.event();
                System.out.println("fault: " + failureOf(faulted::await, false, faultGate::countDown));

                CountDownLatch drainGate = new CountDownLatch(1);
                SimulatedStream closing = device.newStream();
                closing.launch(() -> awaitGate(drainGate));
                GpuEvent drained = closing.event();
                closing.close(); // the event taken before is served by the drain
                System.out.println("drain interrupted: " + failureOf(drained::await, true));
                drainGate.countDown();
                drained.await();

                CountDownLatch drainFaultGate = new CountDownLatch(1);
                SimulatedStream closingFaulted = device.newStream();
                closingFaulted.launch(() -> awaitGate(drainFaultGate));
                closingFaulted.injectFault("injected");
                GpuEvent drainFaulted = closingFaulted.event();
                closingFaulted.close();
                System.out.println("drain fault: " + failureOf(drainFaulted::await, false, drainFaultGate::countDown));
            }
            SimulatedDevice closed = SimulatedDevice.create();
            CountDownLatch closedGate = new CountDownLatch(1);
            SimulatedStream stream = closed.newStream();
            stream.launch(() -> awaitGate(closedGate));
            GpuEvent event = stream.event();
            System.out.println("closed device: " + failureOf(event::await, false, closed::close));
            closedGate.countDown();
        }

        private interface Await {
            void await() throws Exception;
        }

        /** {@link #failureOf(Await, boolean, Runnable)} that interrupts the waiter or does nothing. */
        private static String failureOf(Await await, boolean interrupt) throws Exception {
            return failureOf(await, interrupt, () -> {});
        }

        /**
         * Awaits on a virtual thread; once it parked, interrupts it (if asked) and runs
         * {@code then}; returns the simple name of what the await threw ("none" if nothing).
         */
        private static String failureOf(Await await, boolean interrupt, Runnable then) throws Exception {
            AtomicReference<String> failure = new AtomicReference<>("none");
            Thread waiter = Thread.ofVirtual().start(() -> {
                try {
                    await.await();
                } catch (Exception e) {
                    failure.set(e.getClass().getSimpleName());
                }
            });
            parkedOrDone(waiter);
            if (interrupt) {
                waiter.interrupt();
            }
            then.run();
            if (!waiter.join(Duration.ofSeconds(20))) {
                throw new AssertionError("the await did not end");
            }
            return failure.get();
        }

        /** Waits until {@code t} parks (or ends). */
        private static void parkedOrDone(Thread t) {
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (t.isAlive() && t.getState() != Thread.State.WAITING) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("the waiter never parked: " + t);
                }
                Thread.onSpinWait();
            }
        }

        private static void awaitGate(CountDownLatch gate) {
            try {
                gate.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    @Test
    void closingADeviceRecordsItsFinalCounters() throws Exception {
        SimulatedDevice device = SimulatedDevice.create();
        AtomicReference<ReactorStats> last = new AtomicReference<>();
        List<RecordedEvent> events;
        try {
            // A period no test lasts: the one event is the one close emits.
            events = record(r -> r.enable(CountersEvent.NAME).withPeriod(Duration.ofHours(1)), () -> {
                SimulatedStream stream = device.newStream();
                stream.launchKernel(Duration.ofMillis(1));
                stream.await();
                stream.launchKernel(Duration.ofMillis(1));
                stream.await();
                ReactorTestSupport.assertNothingLeaked(device);
                last.set(device.reactor().stats());
                device.close();
            });
        } finally {
            device.close();
        }
        List<RecordedEvent> counters = of(events, CountersEvent.NAME, device);
        assertEquals(1, counters.size(), "the closing snapshot: " + counters);
        assertEquals(last.get().completions(), counters.get(0).getLong("completions"));
        assertEquals(last.get().registrations(), counters.get(0).getLong("registrations"));
        assertEquals(last.get().capacity(), counters.get(0).getInt("freeSlots"), "taken before close holds them");
        assertTrue(last.get().completions() >= 2, "counted: " + last.get());
        if (ManagementFactory.getThreadMXBean().isThreadCpuTimeSupported()) {
            assertTrue(counters.get(0).getDuration("scannerCpuNanos").toNanos() > 0, "scanner CPU: " + counters);
            assertTrue(device.reactor().stats().scannerCpuNanos() > 0, "the stopped scanner's total");
        }
    }

    // ---- JMX --------------------------------------------------------------------------------------

    @Test
    void theMXBeanIsRegisteredUnderTheDeviceNameWithItsCountersAndGoneAfterClose() throws Exception {
        ObjectName name;
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().capacity(64).build())) {
            name = new ObjectName("io.cudaloom:type=GpuDevice,name=" + ObjectName.quote(device.name()));
            assertTrue(MBEANS.isRegistered(name), name + " registered");
            assertEquals(name, device.reactor().observability().mbeanName());
            SimulatedStream stream = device.newStream();
            for (int i = 0; i < 5; i++) {
                stream.launchKernel(Duration.ofMillis(1));
                stream.await();
            }
            ReactorTestSupport.assertNothingLeaked(device);
            ReactorStats s = device.reactor().stats();
            assertEquals(device.name(), MBEANS.getAttribute(name, "DeviceName"));
            assertEquals("REACTOR", MBEANS.getAttribute(name, "Strategy"));
            assertEquals(64, MBEANS.getAttribute(name, "Capacity"));
            assertEquals(64, MBEANS.getAttribute(name, "FreeSlots"));
            assertEquals(0L, MBEANS.getAttribute(name, "ArmedNow"));
            assertEquals(0, MBEANS.getAttribute(name, "Quarantined"));
            assertEquals(s.completions(), MBEANS.getAttribute(name, "Completions"));
            assertEquals(s.registrations(), MBEANS.getAttribute(name, "Registrations"));
            assertEquals(s.immediate(), MBEANS.getAttribute(name, "Immediate"));
            assertEquals(5L, s.completions());
            assertEquals(0L, MBEANS.getAttribute(name, "Timeouts"));
            assertEquals(0, MBEANS.getAttribute(name, "WaitersNow"));
            assertEquals(0L, MBEANS.getAttribute(name, "WorkInFlight"), "every launch was awaited");
            // the latency distribution: the 5 awaits of 1 ms kernels that registered
            long awaits = (Long) MBEANS.getAttribute(name, "AwaitCount");
            assertEquals(s.registrations(), awaits, "every registered await is in the histogram");
            long p50 = (Long) MBEANS.getAttribute(name, "AwaitP50Nanos");
            long max = (Long) MBEANS.getAttribute(name, "AwaitMaxNanos");
            assertTrue(p50 > 0 && p50 <= max, "p50 " + p50 + " <= max " + max);
            assertTrue((Long) MBEANS.getAttribute(name, "AwaitP99Nanos") <= max);
            // the internals, apart
            ObjectName internals = new ObjectName("io.cudaloom:type=GpuDeviceInternals,name="
                    + ObjectName.quote(device.name()));
            assertEquals(internals, device.reactor().observability().internalsName());
            assertTrue((Long) MBEANS.getAttribute(internals, "ScanPasses") > 0);
            assertEquals(device.name(), MBEANS.getAttribute(internals, "DeviceName"));
            assertThrows(javax.management.AttributeNotFoundException.class, () -> MBEANS.getAttribute(name, "ScanPasses"),
                    "the scanner's internals are not operator attributes");
            assertThrows(javax.management.AttributeNotFoundException.class, () -> MBEANS.getAttribute(internals, "Faults"));
        }
        assertFalse(MBEANS.isRegistered(name), name + " unregistered on close");
        assertFalse(MBEANS.isRegistered(Monitoring.internalsName(name)), "the internals MXBean too");
    }

    @Test
    void devicesOfTheSameNameGetDistinctMXBeans() throws Exception {
        ObjectName first;
        ObjectName second;
        try (InstantDevice a = InstantDevice.create(ReactorConfig.defaults());
                InstantDevice b = InstantDevice.create(ReactorConfig.defaults())) {
            assertEquals(a.name(), b.name());
            first = a.reactor().observability().mbeanName();
            second = b.reactor().observability().mbeanName();
            assertNotNull(first);
            assertNotNull(second);
            assertNotEquals(first, second);
            assertEquals(a.name(), MBEANS.getAttribute(first, "DeviceName"));
            assertEquals(b.name(), MBEANS.getAttribute(second, "DeviceName"));
        }
        assertFalse(MBEANS.isRegistered(first));
        assertFalse(MBEANS.isRegistered(second));
    }

    @Test
    void noMXBeanWhenConfiguredOff() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build())) {
            assertNull(device.reactor().observability().mbeanName());
            assertFalse(MBEANS.isRegistered(Monitoring.objectName(device.name())));
            assertFalse(device.reactor().config().jmx());
            assertFalse(device.reactor().config().toBuilder().build().jmx(), "toBuilder keeps it");
            assertTrue(device.reactor().config().toString().contains("no jmx"), device.reactor().config().toString());
        }
        assertTrue(ReactorConfig.defaults().jmx(), "on by default");
    }

    @Test
    void aRefusedRegistrationIsLoggedAndTheDeviceWorksOn() throws Exception {
        MBeanServer refusing = (MBeanServer) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {MBeanServer.class}, (proxy, method, args) -> {
                    if (method.getName().equals("registerMBean")) {
                        throw new MBeanRegistrationException(new Exception("refused by the test"));
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
        List<LogRecord> logged = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override public void publish(LogRecord r) { logged.add(r); }
            @Override public void flush() { }
            @Override public void close() { }
        };
        java.util.logging.Logger log = java.util.logging.Logger.getLogger("io.cudaloom"); // System.Logger's backend
        log.addHandler(capture);
        try (SimulatedDevice device = SimulatedDevice.create()) {
            Monitoring refused = new Monitoring(device.reactor().observed(), device.name(), -1, CompletionReactor.MXBEANS, () -> refusing);
            refused.open(); // does not throw
            assertNull(refused.mbeanName());
            refused.close();
            LogRecord warning = logged.stream().filter(r -> r.getMessage().contains("was not registered"))
                    .findFirst().orElseThrow(() -> new AssertionError("no warning logged: " + logged));
            assertEquals(Level.WARNING, warning.getLevel());
            assertTrue(warning.getMessage().contains(device.name()), warning.getMessage());
            assertInstanceOf(MBeanRegistrationException.class, warning.getThrown());
            SimulatedStream stream = device.newStream();
            stream.launchKernel(Duration.ofMillis(1));
            stream.await(); // the device works on
            assertTrue(MBEANS.isRegistered(device.reactor().observability().mbeanName()), "its own MXBean");
        } finally {
            log.removeHandler(capture);
        }
    }

    @Test
    void aQuotedNameSurvivesCharactersObjectNamesReserve() throws Exception {
        ObjectName name = Monitoring.objectName("GPU \"0\", type=*?\\");
        assertEquals("GPU \"0\", type=*?\\", ObjectName.unquote(name.getKeyProperty("name")));
        assertEquals("GpuDevice", name.getKeyProperty("type"));
        assertFalse(name.isPattern());
    }

    // ---- one set of counters everywhere: CounterSurfacesTest ----------------------------------------

    @Test
    void theStatsValueClassComparesAndPrintsEveryCounter() {
        ReactorStats a = ReactorStats.builder().capacity(8).freeSlots(8).completions(3).scannerCpuNanos(-1).build();
        ReactorStats b = ReactorStats.builder().capacity(8).freeSlots(8).completions(3).scannerCpuNanos(-1).build();
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        assertNotEquals(a, ReactorStats.builder().capacity(8).freeSlots(8).completions(4).scannerCpuNanos(-1).build());
        assertTrue(a.toString().startsWith("ReactorStats[capacity=8, armedNow=0, freeSlots=8, registrations=0, "
                + "completions=3,"), a.toString());
        assertTrue(a.toString().endsWith(", scannerCpuNanos=-1, flagWrites=0, admissionWaits=0, admissionWaitNanos=0, trackers=0, "
                + "timeouts=0, waitersNow=0, workInFlight=0]"), a.toString());
        assertThrows(NoSuchMethodException.class, () -> ReactorStats.class.getConstructor(ReactorStats.Builder.class),
                "no public constructor");
    }
}
