package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * docs/SEMANTICS.md, "Semantics", its bullet on non-blocking callers:
 * <blockquote>Non-blocking callers: {@code event.subscribe(executor, onDone)},
 * {@code event.onComplete(executor, ...)}, {@code event.toCompletableFuture()} and Kotlin's
 * {@code awaitSuspending()} are served by the same reactor and slots and park no thread.</blockquote>
 * {@link #nonBlockingCallersParkNoThread}. Their fault and close outcomes are checked with the
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
        assertEquals(1, count(dump, "io.cudaloom.reactor.BlockingWait.parkUntilDelivered("),
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
