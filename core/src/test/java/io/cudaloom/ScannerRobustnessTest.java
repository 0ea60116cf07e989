package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.gate;
import static io.cudaloom.ReactorTestSupport.parked;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.InstantDevice.InstantStream;
import io.cudaloom.reactor.DeviceFaults;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URL;
import java.net.URLClassLoader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * The scanner loop cannot die or spin: an interrupt is ignored at no CPU cost, a backend hook that
 * throws is counted and contained (the affected waiters fail, everyone else goes on), an Error
 * closes the reactor and wakes everyone with it as the cause, and the reactor's threads carry
 * nothing of the thread that opened the device.
 */
class ScannerRobustnessTest {
    private static final Duration SOON = Duration.ofSeconds(10);
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    @Test
    void anInterruptedScannerStaysParkedAndKeepsWorking() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create()) {
            SimulatedStream stream = device.newStream();
            stream.launchKernel(Duration.ofMillis(1));
            stream.event().await();
            Thread scanner = device.reactor().scannerThread();
            await().atMost(SOON).until(() -> parked(scanner));

            scanner.interrupt();
            long cpu0 = THREADS.getThreadCpuTime(scanner.threadId());
            long t0 = System.nanoTime();
            LockSupport.parkNanos(500_000_000L); // the measurement window
            long cpu = THREADS.getThreadCpuTime(scanner.threadId()) - cpu0;
            long wall = System.nanoTime() - t0;
            assertTrue(cpu < wall / 10, "scanner used " + cpu / 1_000_000 + " ms of CPU in " + wall / 1_000_000
                    + " ms after an interrupt (a busy loop uses all of it)");

            stream.launchKernel(Duration.ofMillis(1));
            stream.event().await(); // still serving
            assertTrue(scanner.isAlive());
        }
    }

    @Test
    void aQueryThatThrowsFailsThatStreamsWaitersAndNobodyElses() throws Exception {
        InstantDevice device = InstantDevice.holding(probeEveryMillisecond());
        try {
            List<Throwable> reported = reports(device);
            InstantStream bad = device.newStream();
            InstantStream good = device.newStream();
            bad.settled = false;
            AtomicReference<Throwable> badOutcome = awaitInBackground(bad);
            AtomicReference<Throwable> goodOutcome = awaitInBackground(good);
            await().atMost(SOON).until(() -> device.reactor().stats().armedNow() == 2);
            bad.queryFailure = new IllegalStateException("driver call failed (test)");

            await().atMost(SOON).until(() -> badOutcome.get() != null);
            GpuFaultException e = assertInstanceOf(GpuFaultException.class, badOutcome.get());
            assertTrue(e.getMessage().contains("driver call failed (test)"), e.getMessage());
            assertTrue(device.reactor().stats().scannerErrors() >= 1, "error counted");
            assertSame(bad.queryFailure, reported.get(0), "reported to the uncaught-exception handler");
            assertNull(goodOutcome.get(), "the other stream's waiter is still waiting");
            assertTrue(device.reactor().scannerThread().isAlive());

            bad.queryFailure = null;
            bad.settled = true;
            good.faulted = true; // the other waiter now completes through the ordinary fault path
            await().atMost(SOON).until(() -> goodOutcome.get() != null);
            assertInstanceOf(GpuFaultException.class, goodOutcome.get());
            good.settled = true;
            ReactorTestSupport.assertNothingLeaked(device);
        } finally {
            device.close();
        }
    }

    /**
     * A backend must report a fault to its stream's fault sink before it answers FAULTED (the SPI);
     * one that does not still fails the stream's waiters, with a fault that says so. (Before the
     * fault owner, backends described their faults on request, and this test's twin checked that a
     * description that threw still failed the waiters.)
     */
    @Test
    void aFaultAnsweredButNeverReportedStillFailsTheWaiters() throws Exception {
        InstantDevice device = InstantDevice.holding(probeEveryMillisecond());
        try {
            InstantStream stream = device.newStream();
            AtomicReference<Throwable> outcome = awaitInBackground(stream);
            await().atMost(SOON).until(() -> device.reactor().stats().armedNow() == 1);
            stream.reportsFaults = false;
            stream.faulted = true;
            await().atMost(SOON).until(() -> outcome.get() != null);
            GpuFaultException e = assertInstanceOf(GpuFaultException.class, outcome.get());
            assertTrue(e.getMessage().contains(DeviceFaults.UNREPORTED), e.getMessage());
            assertThrows(GpuFaultException.class, () -> stream.event().await(), "and later awaits");
            ReactorTestSupport.assertNothingLeaked(device);
        } finally {
            device.close();
        }
    }

    @Test
    void aSettlementCheckThatThrowsKeepsTheSlotQuarantinedUntilItWorks() throws Exception {
        InstantDevice device = InstantDevice.holding(probeEveryMillisecond());
        try {
            reports(device);
            InstantStream stream = device.newStream();
            stream.settled = false;
            AtomicReference<Throwable> outcome = awaitInBackground(stream);
            await().atMost(SOON).until(() -> device.reactor().stats().armedNow() == 1);
            stream.settleFailure = new IllegalStateException("cannot tell (test)");
            stream.faulted = true;
            await().atMost(SOON).until(() -> outcome.get() != null);
            stream.settled = true;
            await().atMost(SOON).until(() -> device.reactor().stats().scannerErrors() >= 2);
            assertEquals(1, device.reactor().stats().quarantined(), "a slot nobody can vouch for is not reused");

            InstantStream other = device.newStream(); // the reactor still serves everyone else
            AtomicReference<Throwable> otherOutcome = awaitInBackground(other);
            await().atMost(SOON).until(() -> device.reactor().stats().armedNow() == 1);
            other.faulted = true;
            await().atMost(SOON).until(() -> otherOutcome.get() != null);

            stream.settleFailure = null;
            ReactorTestSupport.assertNothingLeaked(device);
        } finally {
            device.close();
        }
    }

    @Test
    void anErrorClosesTheReactorAndWakesEveryWaiterWithIt() throws Exception {
        InstantDevice device = InstantDevice.holding(probeEveryMillisecond());
        List<Throwable> reported = reports(device);
        InstantStream stream = device.newStream();
        List<AtomicReference<Throwable>> outcomes = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            outcomes.add(awaitInBackground(stream));
        }
        await().atMost(SOON).until(() -> device.reactor().stats().armedNow() == 3);
        AssertionError error = new AssertionError("scanner bug (test)");
        stream.queryFailure = error;

        for (AtomicReference<Throwable> o : outcomes) {
            await().atMost(SOON).until(() -> o.get() != null);
            ReactorClosedException e = assertInstanceOf(ReactorClosedException.class, o.get());
            assertTrue(e.getMessage().contains("scanner bug (test)"), e.getMessage());
            assertSame(error, rootCause(e), "the Error is the cause");
        }
        assertTrue(device.reactor().scannerThread().join(SOON), "the scanner stopped");
        assertTrue(device.reactor().isClosed());
        assertThrows(ReactorClosedException.class, () -> stream.event().await(), "later awaits fail at once");
        assertEquals(1, device.reactor().stats().scannerErrors());
        assertEquals(List.of(error), reported, "reported once");
        device.close(); // idempotent after the scanner closed it
        await().atMost(SOON).until(() -> device.reactor().isMemoryReleased());
    }

    @Test
    void theReactorsThreadsInheritNothingFromTheOpener() throws Exception {
        InheritableThreadLocal<String> requestScoped = new InheritableThreadLocal<>();
        ClassLoader appLoader = new URLClassLoader(new URL[0], getClass().getClassLoader());
        AtomicReference<SimulatedDevice> opened = new AtomicReference<>();
        Thread opener = new Thread(() -> {
            requestScoped.set("tenant-42");
            opened.set(SimulatedDevice.create());
        });
        opener.setContextClassLoader(appLoader);
        opener.start();
        opener.join();
        try (SimulatedDevice device = opened.get()) {
            Thread scanner = device.reactor().scannerThread();
            assertSame(ClassLoader.getSystemClassLoader(), scanner.getContextClassLoader());

            SimulatedStream stream = device.newStream();
            CountDownLatch gate = gate(stream);
            AtomicReference<String> seenOnScanner = new AtomicReference<>("unset");
            AtomicReference<ClassLoader> loaderOnCallback = new AtomicReference<>();
            AtomicReference<String> seenOnCallback = new AtomicReference<>("unset");
            CountDownLatch both = new CountDownLatch(2);
            stream.event().onComplete(Runnable::run, () -> { // direct executor: runs on the scanner
                seenOnScanner.set(requestScoped.get());
                both.countDown();
            }, e -> { });
            stream.event().toCompletableFuture().thenRun(() -> { // the reactor's callback threads
                seenOnCallback.set(requestScoped.get());
                loaderOnCallback.set(Thread.currentThread().getContextClassLoader());
                both.countDown();
            });
            gate.countDown();
            assertTrue(both.await(SOON.toSeconds(), java.util.concurrent.TimeUnit.SECONDS));
            assertNull(seenOnScanner.get(), "no inheritable thread-local on the scanner");
            assertNull(seenOnCallback.get(), "no inheritable thread-local on the callback thread");
            assertNotNull(loaderOnCallback.get());
            assertSame(ClassLoader.getSystemClassLoader(), loaderOnCallback.get());
        }
    }

    /**
     * Awaitility fails an await on any uncaught exception of any thread by default; here the
     * scanner reports the exceptions it contains that way on purpose ({@link #reports}).
     */
    private static org.awaitility.core.ConditionFactory await() {
        return org.awaitility.Awaitility.await().dontCatchUncaughtExceptions();
    }

    /** Collects what the scanner reports to its uncaught-exception handler. */
    private static List<Throwable> reports(GpuDevice device) {
        List<Throwable> reported = java.util.Collections.synchronizedList(new ArrayList<>());
        device.reactor().scannerThread().setUncaughtExceptionHandler((t, e) -> reported.add(e));
        return reported;
    }

    private static ReactorConfig probeEveryMillisecond() {
        return ReactorConfig.builder().faultProbeInterval(Duration.ofMillis(1)).coalesce(false).build(); // a slot per waiter
    }

    private static AtomicReference<Throwable> awaitInBackground(GpuStream stream) {
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread.ofVirtual().start(() -> {
            try {
                stream.event().await();
                outcome.set(new AssertionError("await returned normally"));
            } catch (Throwable t) {
                outcome.set(t);
            }
        });
        return outcome;
    }

    private static Throwable rootCause(Throwable t) {
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }
}
