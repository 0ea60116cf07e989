package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.stream.Collectors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * docs/SEMANTICS.md, "Semantics", its bullet on non-blocking callers:
 * <blockquote>Non-blocking callers: {@code event.subscribe(executor, onDone)},
 * {@code event.onComplete(executor, ...)}, {@code event.toCompletableFuture()} and Kotlin's
 * {@code awaitSuspending()} are served by the same reactor and slots and park no thread.</blockquote>
 * {@link #nonBlockingCallersParkNoThread}. And its bullet on callbacks that throw:
 * <blockquote>A completion callback that throws harms nothing: registering never throws what the
 * callback throws (also when the work is done and a direct executor runs it at once), and wherever
 * it ran (the caller, the scanner, a host callback, an executor's thread) its exception is logged
 * once at {@code WARNING} on the {@code io.cudaloom} logger with its stack trace, counted in
 * {@code stats().callbackErrors()}, and reaches neither the thread's uncaught-exception handler
 * nor the other callbacks.</blockquote>
 * {@link #aCallbackThatThrowsIsLoggedOnceCountedAndHarmsNothing}. Their fault and close outcomes are checked with the
 * blocking ones ({@link FaultAndCloseSemantics}, {@link StreamCloseSemantics}); a
 * {@code Subscription}'s cancel race is {@link SubscriptionTest}'s.
 *
 * <p>A section of the semantics suite, run by every backend and strategy ({@link SemanticsSuite}).
 */
abstract class NonBlockingSemantics extends SemanticsSuite {
    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void nonBlockingCallersParkNoThread(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        // A control: one blocking waiter, which the thread dump must find parked in its await.
        Pending control = start(Kind.VIRTUAL, "blocking control", () -> {
            stream.event().await();
            return "returned";
        });
        awaitParked(device, 1, List.of(control));
        Set<Long> platformBefore = platformThreadIds();
        String callbackThreadPrefix = "cuda-loom-callback-";

        final int n = 100;
        Set<Thread> dependentsRanOn = ConcurrentHashMap.newKeySet();
        AtomicInteger dependentsRan = new AtomicInteger();
        Set<Thread> callbacksRanOn = ConcurrentHashMap.newKeySet();
        AtomicInteger callbackErrors = new AtomicInteger();
        CountDownLatch callbacksRan = new CountDownLatch(n);
        List<CompletableFuture<?>> futures = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            CompletableFuture<?> f = stream.event().toCompletableFuture();
            f.thenRun(() -> {
                dependentsRanOn.add(Thread.currentThread());
                dependentsRan.incrementAndGet();
            });
            futures.add(f);
            stream.event().onComplete(Runnable::run, () -> {
                callbacksRanOn.add(Thread.currentThread());
                callbacksRan.countDown();
            }, e -> {
                callbackErrors.incrementAndGet();
                callbacksRan.countDown();
            });
        }
        // Every registration returned on this thread while the work is held: nothing waited.
        assertTrue(futures.stream().noneMatch(CompletableFuture::isDone), "the work is held: nothing is done yet");
        assertEquals(n, callbacksRan.getCount(), "no callback ran yet");
        ReactorStats s = device.reactor().stats();
        assertRegisteredThrough(b, s, 1 + 2L * n);

        String dump = threadDump();
        assertEquals(1, count(dump, "io.cudaloom.reactor.BlockingWait.acquire("),
                "only the control is parked in an await, none for the " + 2 * n + " registrations:\n" + dump);
        assertEquals(0, count(dump, '"' + callbackThreadPrefix), "no callback thread exists before completion");
        Set<String> newPlatform = newPlatformThreads(platformBefore);
        assertEquals(Set.of(), newPlatform, "no platform thread was started for the registrations");

        gate.open();
        // Not f.get() first: a thread waiting in get() may run the dependents itself.
        awaitUntil("every dependent stage ran", () -> dependentsRan.get() == n);
        for (CompletableFuture<?> f : futures) {
            f.get(LONG.toSeconds(), TimeUnit.SECONDS);
        }
        assertTrue(callbacksRan.await(LONG.toSeconds(), TimeUnit.SECONDS));
        assertEquals(0, callbackErrors.get());
        assertEquals("returned", control.result());
        for (Thread t : dependentsRanOn) {
            assertTrue(t.isVirtual() && t.getName().startsWith(callbackThreadPrefix),
                    "a future's dependents run on the reactor's callback threads, not on " + t);
        }
        if (usesSlots(b)) {
            assertEquals(Set.of(device.reactor().scannerThread()), callbacksRanOn,
                    "a direct executor runs onComplete on the scanner that retired the slot");
        }
        s = device.reactor().stats();
        assertEquals(1 + 2L * n, s.completions(), s.toString());
        assertEquals(0, s.abandoned(), s.toString());
        assertNothingLeaked(device);
    }

    /**
     * The report: a callback run at once on the caller escaped {@code onComplete}, and one
     * run on the scanner or an executor went to the uncaught-exception handler, uncounted and not
     * through the library's logger. Three callbacks throw here, one on each kind of thread; beside
     * the first, a callback of the same delivery and a future must still complete, and the device
     * must go on working.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aCallbackThatThrowsIsLoggedOnceCountedAndHarmsNothing(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        List<Throwable> uncaught = new CopyOnWriteArrayList<>();
        Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((thread, e) -> uncaught.add(e));
        ExecutorService pool = Executors.newSingleThreadExecutor(); // its worker dies on an escaping exception
        try (LogCapture log = new LogCapture()) {
            // 1. Delivered later, by the delivering thread (the scanner, or a host callback).
            BackendFixture.Gate gate = b.hold(stream);
            RuntimeException onDelivery = new IllegalStateException("thrown by a callback on the delivering thread");
            AtomicInteger neighbour = new AtomicInteger();
            assertDoesNotThrow(() -> stream.event().onComplete(Runnable::run, () -> {
                throw onDelivery;
            }, e -> fail(e)));
            stream.event().onComplete(Runnable::run, neighbour::incrementAndGet, e -> fail(e));
            CompletableFuture<?> future = stream.event().toCompletableFuture();
            gate.open();
            future.get(LONG.toSeconds(), TimeUnit.SECONDS);
            awaitUntil("the neighbour ran and the throw was counted",
                    () -> neighbour.get() == 1 && device.reactor().stats().callbackErrors() == 1);

            // 2. The outcome known at once: a direct executor runs the callback on this thread.
            GpuEvent done = stream.event();
            done.await();
            RuntimeException onCaller = new IllegalArgumentException("thrown by a callback run on the caller");
            assertDoesNotThrow(() -> done.onComplete(Runnable::run, () -> {
                throw onCaller;
            }, e -> fail(e)), "registering never throws what the callback throws");
            assertDoesNotThrow(() -> done.subscribe(Runnable::run, failure -> {
                throw onCaller;
            }), "nor does subscribing");

            // 3. On an executor's thread.
            RuntimeException onExecutor = new UnsupportedOperationException("thrown by a callback on an executor");
            BackendFixture.Gate third = b.hold(stream);
            stream.event().onComplete(pool, () -> {
                throw onExecutor;
            }, e -> fail(e));
            third.open();
            awaitUntil("all four throws counted", () -> device.reactor().stats().callbackErrors() == 4);

            for (Throwable thrown : List.of(onDelivery, onExecutor)) {
                List<LogRecord> records = log.records().stream().filter(r -> r.getThrown() == thrown).toList();
                assertEquals(1, records.size(), "logged once: " + thrown);
                assertEquals(Level.WARNING, records.get(0).getLevel());
            }
            List<LogRecord> onCallerRecords = log.records().stream().filter(r -> r.getThrown() == onCaller).toList();
            assertEquals(2, onCallerRecords.size(), "each of the two callbacks logged once");
            assertTrue(onCallerRecords.get(0).getMessage().contains(stream.toString()),
                    "names the stream: " + onCallerRecords.get(0).getMessage());

            // Nothing else saw them, and the device goes on working.
            assertEquals(List.of(), uncaught, "no uncaught-exception handler saw a callback's exception");
            ReactorStats s = device.reactor().stats();
            assertEquals(0, s.scannerErrors(), s.toString());
            assertTrue(device.reactor().scannerThread().isAlive(), "the scanner goes on");
            BackendFixture.Gate last = b.hold(stream);
            CompletableFuture<?> later = stream.event().toCompletableFuture(pool);
            last.open();
            later.get(LONG.toSeconds(), TimeUnit.SECONDS);
            assertEquals(4, device.reactor().stats().callbackErrors());
            assertNothingLeaked(device);
        } finally {
            pool.shutdownNow();
            Thread.setDefaultUncaughtExceptionHandler(previous);
        }
    }

    // ---- helpers -----------------------------------------------------------------------------------

    /** A thread dump of every thread, virtual ones included (JDK 21's HotSpotDiagnosticMXBean). */
    static String threadDump() throws IOException {
        Path dir = Files.createTempDirectory("semantics-threads");
        Path file = dir.resolve("threads.txt");
        try {
            ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                    .dumpThreads(file.toString(), HotSpotDiagnosticMXBean.ThreadDumpFormat.TEXT_PLAIN);
            return Files.readString(file);
        } finally {
            Files.deleteIfExists(file);
            Files.deleteIfExists(dir);
        }
    }

    static int count(String text, String what) {
        int n = 0;
        for (int i = text.indexOf(what); i >= 0; i = text.indexOf(what, i + what.length())) {
            n++;
        }
        return n;
    }

    static Set<Long> platformThreadIds() {
        return Thread.getAllStackTraces().keySet().stream().map(Thread::threadId).collect(Collectors.toSet());
    }

    /**
     * Platform threads started since {@code before}, except the JVM's own carriers of virtual
     * threads (ForkJoinPool workers, started on demand for any virtual thread).
     */
    static Set<String> newPlatformThreads(Set<Long> before) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> !before.contains(t.threadId()) && t.isAlive())
                .map(Thread::getName)
                .filter(name -> !name.startsWith("ForkJoinPool-"))
                .collect(Collectors.toSet());
    }
}
