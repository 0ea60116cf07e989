package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.parkedOn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.cudaloom.reactor.BlockingWait;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.TestInstance;

/**
 * docs/SEMANTICS.md, "Semantics", one test (or a few) per bullet, run over every backend and strategy:
 * the shared base of its section suites, each of which checks one bullet or a few neighbouring ones
 * and quotes them in its class comment:
 * <ol>
 *   <li>{@link AwaitSemantics}: the await conventions (interruptible, timed, uninterruptible,
 *       spurious unparks, platform threads), and a waiter that gives up withdraws;
 *   <li>{@link EventCoverageSemantics}: an event covers the work submitted before it, never less;
 *       and {@code isDone()} reports that work, awaited or not;
 *   <li>{@link FallbackAndStrategySemantics}: no slot free, or the write refused: a host callback,
 *       counted; and every strategy keeps the contract (the strategy is really the one used);
 *   <li>{@link FaultAndCloseSemantics}: a device fault wakes the stream's waiters with the named
 *       error (and the faulted stream's slots come back); the device's close wakes every waiter and
 *       frees the flags only once no write can land;
 *   <li>{@link StreamCloseSemantics}: a stream's close: the events taken before it are still
 *       served, by every form;
 *   <li>{@link CoalescingSemantics}: shared flag writes (under load): coalesced waiters share one
 *       slot, and join only a write that covers all they need;
 *   <li>{@link NonBlockingSemantics}: non-blocking callers park no thread; a callback that throws
 *       harms nothing.
 * </ol>
 * Each backend's test ({@link InstantSemanticsTest}, {@link SimulatedSemanticsTest},
 * {@link CudaSemanticsGpuTest}, tagged {@code gpu}) has one {@code @Nested} class per section suite,
 * which names the backend's {@link BackendFixture}; every test runs once per
 * {@link CompletionStrategy} on it: the fixtures of {@link #backends()}. A new section suite needs a
 * nested class in each of the three ({@link SemanticsSectionsTest} fails until it has them, and if a
 * test is put here, where it would run once per section). On the GPU, {@code @GpuTest} on the outer
 * class skips all its nested classes at once where no CUDA device is present, printing the reason
 * once.
 *
 * <p>Two bullets are checked elsewhere: "every completer wakes its waiter with a volatile write before
 * the unpark" by the stress module's jcstress tests (WaiterHandoffTest and its broken twin), and the
 * quarantine of a faulted stream's slots while a write into them can still land by
 * {@link ReactorContractRegressionTest} (only the instant device can keep a dead stream's write
 * pending); {@link FaultAndCloseSemantics} checks the recycling that follows, with the device
 * otherwise idle. The bullets on an unreachable device and the other parts of "Under load waiting
 * stays free" (admission, the scanner's sleep, relayed wake-ups, the lone waiter's sleep) are not
 * part of this suite.
 *
 * <p>This base holds what the sections share: the fixtures and their cleanup, the bounds, the
 * waiter threads ({@link Pending}) and the conditions that watch them. Every test ends with an open
 * gate and a check that no slot leaked, where it can. Nothing here sleeps to synchronise: waits are
 * Awaitility conditions, latches and joins, and "does not happen" is checked over {@link #QUIET}
 * with Awaitility's {@code during}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class SemanticsSuite {
    static final Duration LONG = Duration.ofSeconds(30);
    /** How long something that must not happen is watched for not happening. */
    static final Duration QUIET = Duration.ofMillis(150);
    /** close() returns without waiting for GPU work: a generous bound for "at once". */
    static final Duration CLOSE_BOUND = Duration.ofSeconds(5);

    private final List<BackendFixture> made = Collections.synchronizedList(new ArrayList<>());

    /** This class's backend, under {@code strategy}. */
    abstract BackendFixture fixture(CompletionStrategy strategy);

    /** The arguments of every test: this class's backend under each strategy. */
    final List<BackendFixture> backends() {
        List<BackendFixture> list = new ArrayList<>();
        for (CompletionStrategy s : CompletionStrategy.values()) {
            list.add(fixture(s));
        }
        made.addAll(list);
        return list;
    }

    @AfterEach
    void cleanUp() {
        for (BackendFixture b : List.copyOf(made)) {
            b.cleanup(); // idempotent, and the fixture stays usable (the next invocation may use it)
        }
    }

    // ---- helpers -------------------------------------------------------------------------------

    enum Kind { VIRTUAL, PLATFORM }

    /** A thread running one test body; its outcome is the body's result or what it threw. */
    static final class Pending {
        final Thread thread;
        final CompletableFuture<Object> outcome = new CompletableFuture<>();
        /** System.nanoTime() when the body ended (returned or threw). */
        volatile long endedAt;

        Pending(Kind kind, String name, Callable<?> body) {
            Runnable run = () -> {
                Object result = null;
                Throwable thrown = null;
                try {
                    result = body.call();
                } catch (Throwable t) {
                    thrown = t;
                }
                endedAt = System.nanoTime();
                if (thrown != null) {
                    outcome.completeExceptionally(thrown);
                } else {
                    outcome.complete(result == null ? "null" : result);
                }
            };
            String fullName = "semantics " + name + " (" + kind.name().toLowerCase() + ")";
            thread = kind == Kind.VIRTUAL ? Thread.ofVirtual().name(fullName).start(run)
                    : Thread.ofPlatform().daemon(true).name(fullName).start(run);
        }

        boolean ended() {
            return outcome.isDone();
        }

        private void join() throws InterruptedException {
            if (!thread.join(LONG)) {
                fail(this + " is still running after " + LONG + ", in " + Arrays.toString(thread.getStackTrace()));
            }
            assertTrue(outcome.isDone(), this + " ended without an outcome");
        }

        /** Waits for the thread; its body's result, or fails with what it threw. */
        Object result() throws InterruptedException {
            join();
            if (outcome.isCompletedExceptionally()) {
                throw new AssertionError(this + " threw", outcome.exceptionNow());
            }
            return outcome.resultNow();
        }

        /** Waits for the thread; what its body threw, or fails if it returned. */
        Throwable failure() throws InterruptedException {
            join();
            if (!outcome.isCompletedExceptionally()) {
                fail(this + " returned " + outcome.resultNow() + " instead of throwing");
            }
            return outcome.exceptionNow();
        }

        @Override
        public String toString() {
            return thread.getName();
        }
    }

    static Pending start(Kind kind, String name, Callable<?> body) {
        return new Pending(kind, name, body);
    }

    static boolean noneEnded(List<Pending> pending) {
        return pending.stream().noneMatch(Pending::ended);
    }

    /** Registrations of every kind: armed slots, host-callback fallbacks, joins of a coalesced group. */
    static long registered(GpuDevice device) {
        ReactorStats s = device.reactor().stats();
        return s.registrations() + s.fallbacks() + s.coalesced();
    }

    /** Until {@code n} registrations were made and every one of {@code waiters} is parked in its await. */
    static void awaitParked(GpuDevice device, long n, List<Pending> waiters) {
        try {
            eventually().alias(n + " registered and " + waiters.size() + " waiters parked on the reactor").until(() -> {
                for (Pending w : waiters) {
                    if (w.ended()) { // fail now, not after LONG: it will never park again
                        throw new AssertionError(w + " ended while it should wait: " + w.outcome);
                    }
                }
                return registered(device) == n && waiters.stream().allMatch(w -> parkedOn(w.thread, device.reactor()));
            });
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            StringBuilder why = new StringBuilder(e.getMessage()).append("; registered ").append(registered(device))
                    .append(", ").append(device.reactor().stats());
            for (Pending w : waiters) {
                if (!parkedOn(w.thread, device.reactor())) {
                    StackTraceElement[] st = w.thread.getStackTrace();
                    why.append("; not parked on the reactor: ").append(w).append(' ').append(w.thread.getState())
                            .append(st.length > 0 ? " at " + java.util.Arrays.toString(java.util.Arrays.copyOf(st, Math.min(6, st.length))) : "");
                }
            }
            throw new AssertionError(why.toString(), e);
        }
        for (Pending w : waiters) {
            assertFalse(w.ended(), w + " ended");
        }
    }

    /** Until every one of {@code waiters} is parked in the wait on a closed stream's drain. */
    static void awaitParkedOnDrain(List<Pending> waiters) {
        eventually().alias(waiters + " parked on a closed stream's drain").until(() -> {
            for (Pending w : waiters) {
                if (w.ended()) {
                    throw new AssertionError(w + " ended while it should wait: " + w.outcome);
                }
            }
            return waiters.stream().allMatch(w -> ReactorTestSupport.parked(w.thread) && inDrainWait(w.thread));
        });
    }

    private static boolean inDrainWait(Thread t) {
        for (StackTraceElement e : t.getStackTrace()) {
            // The drain is a registration in the one wait: its waiters park in BlockingWait.acquire.
            if (e.getClassName().equals(BlockingWait.class.getName()) && e.getMethodName().equals("acquire")) {
                return true;
            }
        }
        return false;
    }

    static void awaitUntil(String what, Callable<Boolean> condition) {
        eventually().alias(what).until(condition);
    }

    /** {@code condition} holds, and keeps holding for {@link #QUIET} (fails soon after it stops holding). */
    static void stays(String what, Callable<Boolean> condition) {
        Awaitility.await(what).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(5))
                .during(QUIET).atMost(QUIET.plusMillis(500)).until(condition);
    }

    private static ConditionFactory eventually() {
        return Awaitility.await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(2)).atMost(LONG);
    }

    static boolean usesSlots(BackendFixture b) {
        return b.strategy() == CompletionStrategy.REACTOR;
    }

    /** The registrations went through the fixture's strategy: one slot each, or one host callback each. */
    static void assertRegisteredThrough(BackendFixture b, ReactorStats s, long n) {
        if (usesSlots(b)) {
            assertEquals(n, s.registrations(), "one slot each: " + s);
            assertEquals(0, s.fallbacks(), "no host callback: " + s);
        } else {
            assertEquals(n, s.fallbacks(), "one host callback each: " + s);
            assertEquals(0, s.registrations(), "no slot: " + s);
        }
        assertEquals(0, s.coalesced(), s.toString());
    }
}
