package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static io.cudaloom.ReactorTestSupport.parkedOn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntSupplier;
import java.util.stream.Collectors;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The README's "Semantics", one test (or a few) per bullet, run over every backend: each concrete
 * subclass names one backend ({@link InstantSemanticsTest}, {@link SimulatedSemanticsTest},
 * {@link CudaSemanticsGpuTest}, tagged {@code gpu}), and every test runs once per
 * {@link CompletionStrategy} on it: the {@link BackendFixture}s of {@link #backends()}.
 *
 * <p>Bullets and tests:
 * <ol>
 *   <li>await conventions: {@link #awaitIsInterruptibleAndClearsTheInterruptStatus},
 *       {@link #timedAwaitsReturnWhetherTheWorkCompletedAndNeverGiveUpEarly},
 *       {@link #awaitUninterruptiblyIgnoresInterruptsAndKeepsTheStatus},
 *       {@link #spuriousUnparksNeverReturnEarly} (each on a virtual and a platform thread);
 *   <li>an event covers the work submitted before it, never less:
 *       {@link #anEventNeverCompletesBeforeTheWorkSubmittedBeforeIt},
 *       {@link #workWrittenByTheDeviceIsVisibleAfterTheAwait},
 *       {@link #anEventOfAnIdleStreamCompletesAtOnceAndRegistersNothing};
 *   <li>a waiter that gives up withdraws:
 *       {@link #aWaiterThatGivesUpWithdrawsAndItsLateCompletionNeverCompletesALaterAwait};
 *   <li>no slot free, or the write refused: host-callback fallback, counted:
 *       {@link #withNoSlotFreeAnAwaitCompletesThroughAHostCallbackAndIsCounted},
 *       {@link #aRefusedFlagWriteFallsBackToAHostCallback};
 *   <li>a device fault wakes the stream's waiters with the named error:
 *       {@link #aDeviceFaultWakesTheStreamsWaitersWithTheNamedErrorWithinOneSecond} (also: the
 *       faulted stream's slots come back with nothing else happening on the device);
 *   <li>close: {@link #closeWakesEveryWaiterAndFreesTheFlagsOnlyOnceNoWriteCanLand},
 *       {@link #closeWithNothingInFlightFreesTheFlagsAtOnce};
 *   <li>a stream's close: the events taken before it are still served, by every form:
 *       {@link #anEventTakenBeforeTheStreamsCloseCompletesOnceItsWorkIsDone} (conventions, forms,
 *       one registration, no new event),
 *       {@link #workWrittenBeforeTheStreamsCloseIsVisibleAfterAnAwaitOnTheClosedStream},
 *       {@link #aFaultAfterTheStreamsCloseFailsItsEventsWithTheNamedError},
 *       {@link #closingTheDeviceFailsTheEventsOfAClosedStreamWithReactorClosedException},
 *       {@link #anIdleStreamsCloseLeavesItsEventsDoneAtOnce};
 *   <li>coalescing: {@link #coalescedWaitersBehindTheSameWorkShareOneSlot},
 *       {@link #aCoalescedWaiterJoinsOnlyAWriteThatCoversAllTheWorkItNeeds};
 *   <li>non-blocking callers park no thread: {@link #nonBlockingCallersParkNoThread} (their fault
 *       and close outcomes are checked with the blocking ones, in 5 and 6);
 *   <li>every strategy keeps the contract: every test runs under each strategy, and
 *       {@link #theConfiguredStrategyIsThePathThatServesTheAwaits} checks that the strategy is
 *       really the one used.
 * </ol>
 * Two bullets are checked elsewhere: "every completer wakes its waiter with a volatile write before
 * the unpark" by the stress module's jcstress tests (WaiterHandoffTest and its broken twin), and the
 * quarantine of a faulted stream's slots while a write into them can still land by
 * {@link ReactorContractRegressionTest} (only the instant device can keep a dead stream's write
 * pending); here the fault test checks the recycling that follows, with the device otherwise idle.
 *
 * <p>Every test ends with an open gate and a check that no slot leaked, where it can. Nothing here
 * sleeps to synchronise: waits are Awaitility conditions, latches and joins, and "does not happen"
 * is checked over {@link #QUIET} with Awaitility's {@code during}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class SemanticsSuite {
    static final Duration LONG = Duration.ofSeconds(30);
    /** How long something that must not happen is watched for not happening. */
    static final Duration QUIET = Duration.ofMillis(150);
    /** The README's "within a few milliseconds", with room for a loaded two-core CI machine. */
    static final Duration FAULT_WAKE_BOUND = Duration.ofSeconds(1);
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

    // ---- 1. await conventions ------------------------------------------------------------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void awaitIsInterruptibleAndClearsTheInterruptStatus(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        List<Pending> waiters = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            waiters.add(start(kind, "interruptible await", () -> {
                try {
                    stream.event().await();
                    return "returned";
                } catch (InterruptedException e) {
                    return Thread.currentThread().isInterrupted() ? "InterruptedException, status set" : "InterruptedException";
                }
            }));
        }
        awaitParked(device, 2, waiters);
        waiters.forEach(w -> w.thread.interrupt());
        for (Pending w : waiters) {
            assertEquals("InterruptedException", w.result(), w + ": ended by the interrupt, status cleared");
        }
        ReactorStats s = device.reactor().stats();
        assertEquals(2, s.abandoned(), "both withdrew: " + s);
        assertEquals(0, s.completions(), s.toString());
        assertRegisteredThrough(b, s, 2);
        if (usesSlots(b)) {
            assertEquals(2, s.armedNow(), "the device writes are still in flight: the slots stay armed: " + s);
        }

        // Interrupted before it starts: every interruptible form throws at once and registers nothing.
        List<Callable<?>> forms = List.of(
                () -> { stream.event().await(); return null; },
                () -> stream.event().await(LONG),
                () -> stream.event().await(30, TimeUnit.SECONDS),
                () -> { stream.await(); return null; });
        for (Callable<?> form : forms) {
            Thread.currentThread().interrupt();
            assertThrows(InterruptedException.class, form::call);
            assertFalse(Thread.interrupted(), "the status is cleared, as java.util.concurrent does");
        }
        assertEquals(2, registered(device), "an await interrupted before it starts registers nothing");

        gate.open();
        assertNothingLeaked(device); // the withdrawn slots are recycled once their writes land
        assertEquals(2, device.reactor().stats().abandoned());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void timedAwaitsReturnWhetherTheWorkCompletedAndNeverGiveUpEarly(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        GpuEvent event = stream.event();
        assertFalse(event.await(Duration.ZERO), "zero timeout on busy work");
        assertFalse(event.await(0, TimeUnit.NANOSECONDS), "zero timeout on busy work");
        assertEquals(0, registered(device), "a zero timeout registers nothing");

        long timeoutNanos = Duration.ofMillis(50).toNanos();
        CountDownLatch timedOut = new CountDownLatch(2);
        List<Pending> waiters = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            boolean durationForm = kind == Kind.VIRTUAL; // each thread kind uses both forms, crossed
            waiters.add(start(kind, "timed await", () -> {
                long t0 = System.nanoTime();
                boolean first = durationForm ? event.await(Duration.ofNanos(timeoutNanos))
                        : event.await(timeoutNanos, TimeUnit.NANOSECONDS);
                long waited = System.nanoTime() - t0;
                timedOut.countDown();
                boolean second = durationForm ? event.await(LONG.toSeconds(), TimeUnit.SECONDS) : event.await(LONG);
                return first + (waited >= timeoutNanos ? " after the full timeout" : " after only " + waited + " ns")
                        + ", then " + second;
            }));
        }
        assertTrue(timedOut.await(LONG.toSeconds(), TimeUnit.SECONDS));
        awaitParked(device, 4, waiters); // two timed out, two waiting again
        ReactorStats s = device.reactor().stats();
        assertEquals(2, s.abandoned(), "the timed-out awaits withdrew: " + s);
        assertEquals(0, s.completions(), s.toString());
        assertRegisteredThrough(b, s, 4);

        gate.open();
        for (Pending w : waiters) {
            assertEquals("false after the full timeout, then true", w.result(), w.toString());
        }
        assertTrue(event.isDone());
        assertTrue(event.await(Duration.ZERO), "a completed event returns true at once");
        s = device.reactor().stats();
        assertEquals(2, s.completions(), "the two waiting awaits completed: " + s);
        assertEquals(2, s.abandoned(), s.toString());
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void awaitUninterruptiblyIgnoresInterruptsAndKeepsTheStatus(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        List<Pending> waiters = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            waiters.add(start(kind, "uninterruptible await", () -> {
                stream.event().awaitUninterruptibly();
                return Thread.currentThread().isInterrupted() ? "returned, status kept" : "returned, status lost";
            }));
        }
        awaitParked(device, 2, waiters);
        waiters.forEach(w -> w.thread.interrupt());
        stays("interrupts end no awaitUninterruptibly", () -> noneEnded(waiters));
        awaitParked(device, 2, waiters); // parked again, not spinning on the interrupt status
        assertEquals(0, device.reactor().stats().abandoned(), "nothing withdrawn");

        gate.open();
        for (Pending w : waiters) {
            assertEquals("returned, status kept", w.result(), w.toString());
        }
        ReactorStats s = device.reactor().stats();
        assertEquals(2, s.completions(), s.toString());
        assertRegisteredThrough(b, s, 2);
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void spuriousUnparksNeverReturnEarly(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        List<Pending> waiters = List.of(
                start(Kind.VIRTUAL, "untimed await", () -> {
                    stream.event().await();
                    return "returned";
                }),
                start(Kind.PLATFORM, "timed await", () -> stream.event().await(LONG)));
        awaitParked(device, 2, waiters);
        for (int i = 0; i < 1_000; i++) {
            for (Pending w : waiters) {
                LockSupport.unpark(w.thread);
            }
        }
        stays("spurious unparks end no await", () -> noneEnded(waiters));
        ReactorStats s = device.reactor().stats();
        assertEquals(2, registered(device), "no await gave up and registered again: " + s);
        assertEquals(0, s.abandoned(), s.toString());

        gate.open();
        assertEquals("returned", waiters.get(0).result());
        assertEquals(Boolean.TRUE, waiters.get(1).result(), "the timed await reports completion");
        assertEquals(2, device.reactor().stats().completions());
        assertNothingLeaked(device);
    }

    // ---- 2. an event covers the work submitted before it was taken, never less -----------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void anEventNeverCompletesBeforeTheWorkSubmittedBeforeIt(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate first = b.hold(stream);
        Pending early = start(Kind.VIRTUAL, "waits for the first work", () -> {
            stream.event().await();
            return "returned";
        });
        awaitParked(device, 1, List.of(early));
        GpuEvent takenBeforeSecond = stream.event();
        BackendFixture.Gate second = b.hold(stream);
        GpuEvent takenAfterSecond = stream.event();
        Pending late = start(Kind.PLATFORM, "waits for the second work", () -> {
            takenAfterSecond.await();
            return "returned";
        });
        Pending lateTaken = start(Kind.VIRTUAL, "event taken before the second work, awaited after it", () -> {
            takenBeforeSecond.await();
            return "returned";
        });
        List<Pending> all = List.of(early, late, lateTaken);
        awaitParked(device, 3, all);
        stays("nothing completes while all its work is held", () -> noneEnded(all));

        first.open();
        assertEquals("returned", early.result(), "registered before the second work: completes without it");
        stays("an event taken after the second work never completes before it", () -> !late.ended());

        second.open();
        assertEquals("returned", late.result());
        assertEquals("returned", lateTaken.result());
        ReactorStats s = device.reactor().stats();
        assertEquals(3, s.completions(), s.toString());
        assertEquals(0, s.abandoned(), s.toString());
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void workWrittenByTheDeviceIsVisibleAfterTheAwait(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream held = b.newStream(device);
        BackendFixture.Gate gate = b.hold(held);
        IntSupplier behindTheGate = b.write(held, 42);
        Pending parked = start(Kind.VIRTUAL, "parked until the write is done", () -> {
            held.event().await();
            return behindTheGate.getAsInt();
        });
        awaitParked(device, 1, List.of(parked));
        gate.open();
        assertEquals(42, parked.result(), "the device's write is visible after a parked await");

        // Then awaits on both kinds of thread, whatever path each takes (idle, inline spin, parked).
        List<Pending> rounds = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            GpuStream own = b.newStream(device);
            rounds.add(start(kind, "write and await", () -> {
                for (int i = 0; i < 20; i++) {
                    int value = kind.ordinal() * 1_000 + i;
                    IntSupplier result = b.write(own, value);
                    own.event().await();
                    int seen = result.getAsInt();
                    if (seen != value) {
                        return "round " + i + ": read " + seen + ", the device wrote " + value;
                    }
                }
                return "all seen";
            }));
        }
        for (Pending r : rounds) {
            assertEquals("all seen", r.result(), r.toString());
        }
        assertEquals(41, device.reactor().stats().completions());
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void anEventOfAnIdleStreamCompletesAtOnceAndRegistersNothing(BackendFixture b) throws Exception {
        if (!b.reportsIdle()) {
            b.unsupported("its streams report themselves busy even with nothing in flight, so no await"
                    + " takes the immediate path");
        }
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        GpuEvent event = stream.event();
        event.await();
        assertTrue(event.isDone());
        stream.await();
        assertTrue(stream.event().await(Duration.ZERO), "zero timeout on idle work: completed");
        CompletableFuture<?> future = stream.event().toCompletableFuture(Runnable::run);
        assertTrue(future.isDone() && !future.isCompletedExceptionally(), "completed before it was returned");
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        stream.event().onComplete(Runnable::run, () -> ranOn.set(Thread.currentThread()), e -> fail(e));
        assertSame(Thread.currentThread(), ranOn.get(), "ran at once, on the caller");
        ReactorStats s = device.reactor().stats();
        assertEquals(5, s.immediate(), s.toString());
        assertEquals(5, s.completions(), s.toString());
        assertEquals(0, s.registrations() + s.fallbacks() + s.coalesced(), "nothing registered: " + s);
    }

    // ---- 3. a waiter that gives up withdraws; its late completion completes nothing later -------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aWaiterThatGivesUpWithdrawsAndItsLateCompletionNeverCompletesALaterAwait(BackendFixture b)
            throws Exception {
        GpuDevice device = b.open();
        GpuStream abandonedA = b.newStream(device), laterA = b.newStream(device);
        GpuStream abandonedB = b.newStream(device), laterB = b.newStream(device);
        BackendFixture.Gate lateA = b.hold(abandonedA), lateB = b.hold(abandonedB);
        BackendFixture.Gate gateA = b.hold(laterA), gateB = b.hold(laterB);

        // B gives up by interrupt (a platform thread), A by timeout (a virtual thread); each then
        // awaits other work on the same thread, so with the same per-thread completion record.
        CountDownLatch gaveUp = new CountDownLatch(1);
        Pending byInterrupt = start(Kind.PLATFORM, "gives up by interrupt", () -> {
            String first;
            try {
                abandonedB.event().await();
                first = "returned";
            } catch (InterruptedException e) {
                first = "interrupted";
            }
            gaveUp.countDown();
            laterB.event().await();
            return first + ", then returned";
        });
        awaitParked(device, 1, List.of(byInterrupt));
        byInterrupt.thread.interrupt();
        assertTrue(gaveUp.await(LONG.toSeconds(), TimeUnit.SECONDS));
        Pending byTimeout = start(Kind.VIRTUAL, "gives up by timeout", () -> {
            boolean first = abandonedA.event().await(Duration.ofMillis(20));
            laterA.event().await();
            return (first ? "completed" : "timed out") + ", then returned";
        });
        List<Pending> both = List.of(byInterrupt, byTimeout);
        awaitParked(device, 4, both);
        ReactorStats s = device.reactor().stats();
        assertEquals(2, s.abandoned(), "both withdrew: " + s);
        assertRegisteredThrough(b, s, 4);
        if (usesSlots(b)) {
            assertEquals(4, s.armedNow(), "a withdrawn slot stays armed until its device write lands: " + s);
        }

        lateA.open(); // the late completions of the abandoned awaits now land
        lateB.open();
        if (usesSlots(b)) {
            awaitUntil("the late writes landed and their slots retired",
                    () -> device.reactor().stats().armedNow() == 2);
        }
        stays("a late completion completes no later await of the same thread", () -> noneEnded(both));

        gateA.open();
        gateB.open();
        assertEquals("interrupted, then returned", byInterrupt.result());
        assertEquals("timed out, then returned", byTimeout.result());
        s = device.reactor().stats();
        assertEquals(2, s.completions(), s.toString());
        assertEquals(2, s.abandoned(), s.toString());
        assertNothingLeaked(device);
    }

    // ---- 4. no slot free, or the write refused: a host callback, counted ------------------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void withNoSlotFreeAnAwaitCompletesThroughAHostCallbackAndIsCounted(BackendFixture b) throws Exception {
        GpuDevice device = b.open(b.config().capacity(2).build());
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        final int n = 12;
        List<Pending> waiters = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            waiters.add(start(Kind.values()[i % 2], "waiter " + i, () -> {
                stream.event().await();
                return "returned";
            }));
        }
        awaitParked(device, n, waiters);
        ReactorStats s = device.reactor().stats();
        int slotted = usesSlots(b) ? 2 : 0;
        assertEquals(slotted, s.registrations(), "the two slots, and no more: " + s);
        assertEquals(n - slotted, s.fallbacks(), "everyone else through a host callback: " + s);
        assertEquals(slotted, s.armedNow(), s.toString());
        CompletableFuture<?> future = stream.event().toCompletableFuture(Runnable::run);
        assertEquals(n - slotted + 1, device.reactor().stats().fallbacks(), "a future falls back the same way");

        gate.open();
        for (Pending w : waiters) {
            assertEquals("returned", w.result(), w.toString());
        }
        future.get(LONG.toSeconds(), TimeUnit.SECONDS);
        s = device.reactor().stats();
        assertEquals(n + 1, s.completions(), s.toString());
        assertEquals(0, s.abandoned(), s.toString());
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aRefusedFlagWriteFallsBackToAHostCallback(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        b.refuseFlagWrites(stream);
        BackendFixture.Gate gate = b.hold(stream);
        Pending waiter = start(Kind.VIRTUAL, "waiter", () -> {
            stream.event().await();
            return "returned";
        });
        awaitParked(device, 1, List.of(waiter));
        ReactorStats s = device.reactor().stats();
        assertEquals(0, s.registrations(), "the refused write armed nothing: " + s);
        assertEquals(1, s.fallbacks(), s.toString());
        assertEquals(0, s.armedNow(), "the claimed slot went back: " + s);
        gate.open();
        assertEquals("returned", waiter.result());
        assertEquals(1, device.reactor().stats().completions());
        assertNothingLeaked(device);
    }

    // ---- 5. a device fault wakes the stream's waiters with the named error ----------------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aDeviceFaultWakesTheStreamsWaitersWithTheNamedErrorWithinOneSecond(BackendFixture b) throws Exception {
        GpuDevice device = b.open(); // the default fault probe: at most once per millisecond
        GpuStream faulty = b.newStream(device);
        GpuStream healthy = b.newStream(device);
        BackendFixture.Fault fault = b.fault(faulty);
        BackendFixture.Gate healthyGate = b.hold(healthy);
        final int n = 8;
        List<Pending> waiters = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            waiters.add(start(Kind.values()[i % 2], "waiter " + i, () -> {
                faulty.event().await();
                return "returned";
            }));
        }
        CompletableFuture<?> future = faulty.event().toCompletableFuture();
        AtomicReference<RuntimeException> callbackError = new AtomicReference<>();
        CountDownLatch callbackRan = new CountDownLatch(1);
        faulty.event().onComplete(Runnable::run, callbackRan::countDown, e -> {
            callbackError.set(e);
            callbackRan.countDown();
        });
        Pending bystander = start(Kind.VIRTUAL, "waiter on a healthy stream", () -> {
            healthy.event().await();
            return "returned";
        });
        List<Pending> parked = new ArrayList<>(waiters);
        parked.add(bystander);
        awaitParked(device, n + 3, parked);

        long faultAt = System.nanoTime();
        fault.trigger();
        long worstWake = 0;
        for (Pending w : waiters) {
            GpuFaultException e = assertInstanceOf(GpuFaultException.class, w.failure(), w.toString());
            assertTrue(e.getMessage().contains(fault.errorName()), "names the error: " + e.getMessage());
            worstWake = Math.max(worstWake, w.endedAt - faultAt);
        }
        assertTrue(worstWake < FAULT_WAKE_BOUND.toNanos(), "the last waiter woke " + worstWake / 1_000_000
                + " ms after the fault, more than " + FAULT_WAKE_BOUND.toMillis() + " ms");
        ExecutionException viaFuture = assertThrows(ExecutionException.class,
                () -> future.get(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(GpuFaultException.class, viaFuture.getCause());
        assertTrue(viaFuture.getCause().getMessage().contains(fault.errorName()), viaFuture.getCause().getMessage());
        assertTrue(callbackRan.await(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(GpuFaultException.class, callbackError.get(), "onError got the fault, onDone did not run");
        assertEquals(n + 2, device.reactor().stats().faults(), "every registration failed with the fault");

        GpuFaultException later = assertThrows(GpuFaultException.class, () -> faulty.event().await(),
                "a later await fails at once");
        assertTrue(later.getMessage().contains(fault.errorName()), later.getMessage());
        assertFalse(bystander.ended(), "the healthy stream's waiter is not touched by the fault");
        healthyGate.open();
        assertEquals("returned", bystander.result());
        // With nothing else happening on the device, the dead stream's slots come back once no
        // write into them can land (the README's quarantine bullet).
        assertNothingLeaked(device);
    }

    // ---- 6. close ----------------------------------------------------------------------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void closeWakesEveryWaiterAndFreesTheFlagsOnlyOnceNoWriteCanLand(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        final int n = 6;
        List<Pending> waiters = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            boolean timed = i % 3 == 2;
            waiters.add(start(Kind.values()[i % 2], (timed ? "timed " : "") + "waiter " + i, () -> {
                if (timed) {
                    return stream.event().await(LONG);
                }
                stream.event().await();
                return "returned";
            }));
        }
        CompletableFuture<?> future = stream.event().toCompletableFuture();
        AtomicReference<RuntimeException> callbackError = new AtomicReference<>();
        CountDownLatch callbackRan = new CountDownLatch(1);
        stream.event().onComplete(Runnable::run, callbackRan::countDown, e -> {
            callbackError.set(e);
            callbackRan.countDown();
        });
        awaitParked(device, n + 2, waiters);

        long t0 = System.nanoTime();
        device.close();
        long closeNanos = System.nanoTime() - t0;
        assertTrue(closeNanos < CLOSE_BOUND.toNanos(), "close() waited " + closeNanos / 1_000_000
                + " ms: it must return without waiting for the GPU work");
        for (Pending w : waiters) {
            assertInstanceOf(ReactorClosedException.class, w.failure(), w.toString());
        }
        ExecutionException viaFuture = assertThrows(ExecutionException.class,
                () -> future.get(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(ReactorClosedException.class, viaFuture.getCause());
        assertTrue(callbackRan.await(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(ReactorClosedException.class, callbackError.get(), "onError got the closure");
        assertTrue(device.reactor().isClosed());
        assertFalse(device.reactor().scannerThread().isAlive(), "the scanner stopped");
        assertThrows(ReactorClosedException.class, stream::event, "no new event after close");

        if (usesSlots(b)) {
            stays("the flags are kept while the device's writes can still land",
                    () -> !device.reactor().isMemoryReleased());
            gate.open();
            awaitUntil("the flags freed once the writes landed", () -> device.reactor().isMemoryReleased());
        } else {
            // No flag write was ever enqueued: nothing can land, so nothing holds the flags.
            awaitUntil("the flags freed though the work still runs", () -> device.reactor().isMemoryReleased());
            gate.open();
        }
        long late = b.writesAfterRelease(device);
        assertTrue(late == 0 || late == -1, late + " flag writes landed in freed memory");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void closeWithNothingInFlightFreesTheFlagsAtOnce(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        GpuEvent takenBefore = stream.event();
        device.close();
        assertTrue(device.reactor().isMemoryReleased(), "nothing in flight: freed by close() itself");
        device.close(); // idempotent
        assertThrows(ReactorClosedException.class, takenBefore::await);
        CompletableFuture<?> future = takenBefore.toCompletableFuture(Runnable::run);
        assertTrue(future.isCompletedExceptionally(), "reported through the future, not thrown");
        assertInstanceOf(ReactorClosedException.class, future.exceptionNow());
        assertTrue(b.writesAfterRelease(device) <= 0);
    }

    // ---- 7. a stream's close: the events taken before it are still served ------------------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void anEventTakenBeforeTheStreamsCloseCompletesOnceItsWorkIsDone(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        GpuEvent event = stream.event();
        long t0 = System.nanoTime();
        stream.close();
        long closeNanos = System.nanoTime() - t0;
        assertTrue(closeNanos < CLOSE_BOUND.toNanos(), "close() waited " + closeNanos / 1_000_000
                + " ms: it must return without waiting for the GPU work");
        stream.close(); // idempotent
        assertTrue(stream.isClosed());
        IllegalStateException noEvent = assertThrows(IllegalStateException.class, stream::event);
        assertEquals("stream " + stream + " is closed", noEvent.getMessage(), "no new event after the close");
        assertFalse(noEvent instanceof ReactorClosedException, "the device is open");
        assertThrows(IllegalStateException.class, stream::await, "nor a wait for all of the stream's work");
        assertFalse(event.await(Duration.ZERO), "zero timeout on held work");
        assertFalse(event.await(-1, TimeUnit.SECONDS), "negative timeout on held work");

        long timeoutNanos = Duration.ofMillis(50).toNanos();
        CountDownLatch timedOut = new CountDownLatch(1);
        List<Pending> returning = List.of(
                start(Kind.VIRTUAL, "await on a closed stream", () -> {
                    event.await();
                    return "returned";
                }),
                start(Kind.PLATFORM, "await on a closed stream", () -> {
                    event.await();
                    return "returned";
                }),
                start(Kind.VIRTUAL, "timed await on a closed stream", () -> {
                    long t = System.nanoTime();
                    boolean first = event.await(Duration.ofNanos(timeoutNanos));
                    long waited = System.nanoTime() - t;
                    timedOut.countDown();
                    boolean second = event.await(Long.MAX_VALUE, TimeUnit.DAYS); // saturates
                    return first + (waited >= timeoutNanos ? " after the full timeout" : " after only " + waited
                            + " ns") + ", then " + second;
                }));
        Pending uninterruptible = start(Kind.PLATFORM, "uninterruptible await on a closed stream", () -> {
            event.awaitUninterruptibly();
            return Thread.currentThread().isInterrupted() ? "returned, status kept" : "returned, status lost";
        });
        Pending interruptible = start(Kind.VIRTUAL, "interrupted await on a closed stream", () -> {
            try {
                event.await();
                return "returned";
            } catch (InterruptedException e) {
                return Thread.currentThread().isInterrupted() ? "InterruptedException, status set" : "InterruptedException";
            }
        });
        CompletableFuture<?> future = event.toCompletableFuture();
        Set<Thread> dependentRanOn = ConcurrentHashMap.newKeySet();
        CompletableFuture<?> dependent = future.thenRun(() -> dependentRanOn.add(Thread.currentThread()));
        AtomicReference<Thread> callbackRanOn = new AtomicReference<>();
        AtomicReference<RuntimeException> callbackError = new AtomicReference<>();
        CountDownLatch callbackRan = new CountDownLatch(1);
        event.onComplete(Runnable::run, () -> {
            callbackRanOn.set(Thread.currentThread());
            callbackRan.countDown();
        }, e -> {
            callbackError.set(e);
            callbackRan.countDown();
        });
        AtomicInteger cancelledRan = new AtomicInteger();
        GpuEvent.Subscription cancelled = event.subscribe(Runnable::run, e -> cancelledRan.incrementAndGet());
        assertTrue(cancelled.cancel(), "withdrawn before the delivery");
        CompletableFuture<?> cancelledFuture = event.toCompletableFuture(Runnable::run);
        assertTrue(cancelledFuture.cancel(false));

        assertTrue(timedOut.await(LONG.toSeconds(), TimeUnit.SECONDS));
        List<Pending> all = new ArrayList<>(returning);
        all.add(uninterruptible);
        all.add(interruptible);
        awaitParkedOnDrain(all);
        interruptible.thread.interrupt();
        uninterruptible.thread.interrupt();
        assertEquals("InterruptedException", interruptible.result(), "ended by the interrupt, status cleared");
        all.remove(interruptible);
        stays("nothing completes while the work is held", () -> noneEnded(all) && !future.isDone()
                && callbackRan.getCount() == 1);
        awaitParkedOnDrain(all); // the uninterruptible one parked again, not spinning on the status
        ReactorStats s = device.reactor().stats();
        assertRegisteredThrough(b, s, 1); // the close's own registration serves them all
        assertEquals(0, s.abandoned(), "the withdrawals were the drain's, not the reactor's: " + s);

        gate.open();
        for (Pending w : returning.subList(0, 2)) {
            assertEquals("returned", w.result(), w.toString());
        }
        assertEquals("false after the full timeout, then true", returning.get(2).result());
        assertEquals("returned, status kept", uninterruptible.result());
        // Not future.get() first: a thread waiting in get() may run the dependents itself.
        awaitUntil("the dependent stage ran", () -> !dependentRanOn.isEmpty());
        future.get(LONG.toSeconds(), TimeUnit.SECONDS);
        dependent.get(LONG.toSeconds(), TimeUnit.SECONDS);
        assertTrue(callbackRan.await(LONG.toSeconds(), TimeUnit.SECONDS));
        assertNull(callbackError.get(), "onDone ran, not onError");
        assertTrue(event.isDone());
        assertTrue(event.await(Duration.ZERO));
        for (Thread t : dependentRanOn) {
            assertTrue(t.isVirtual() && t.getName().startsWith("cuda-loom-callback-"),
                    "a future's dependents run on the reactor's callback threads, not on " + t);
        }
        if (usesSlots(b)) {
            assertSame(device.reactor().scannerThread(), callbackRanOn.get(),
                    "a direct executor runs onComplete on the scanner that retired the close's slot");
        }
        assertEquals(0, cancelledRan.get(), "a cancelled subscription never runs");
        s = device.reactor().stats();
        assertEquals(1, s.completions(), "the close's registration: " + s);
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void workWrittenBeforeTheStreamsCloseIsVisibleAfterAnAwaitOnTheClosedStream(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        IntSupplier behindTheGate = b.write(stream, 42);
        GpuEvent event = stream.event();
        stream.close();
        Pending parked = start(Kind.VIRTUAL, "parked until the closed stream's write is done", () -> {
            event.await();
            return behindTheGate.getAsInt();
        });
        CompletableFuture<Integer> viaFuture = event.toCompletableFuture().thenApply(ignored -> behindTheGate.getAsInt());
        awaitParkedOnDrain(List.of(parked));
        gate.open();
        assertEquals(42, parked.result(), "the device's write is visible after an await on the closed stream");
        assertEquals(42, viaFuture.get(LONG.toSeconds(), TimeUnit.SECONDS), "and in the future's dependent");
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aFaultAfterTheStreamsCloseFailsItsEventsWithTheNamedError(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Fault fault = b.fault(stream);
        GpuEvent event = stream.event();
        stream.close();
        List<Pending> waiters = List.of(
                start(Kind.VIRTUAL, "await on a closed stream that faults", () -> {
                    event.await();
                    return "returned";
                }),
                start(Kind.PLATFORM, "timed await on a closed stream that faults", () -> event.await(LONG)));
        CompletableFuture<?> future = event.toCompletableFuture();
        AtomicReference<RuntimeException> callbackError = new AtomicReference<>();
        CountDownLatch callbackRan = new CountDownLatch(1);
        event.onComplete(Runnable::run, callbackRan::countDown, e -> {
            callbackError.set(e);
            callbackRan.countDown();
        });
        awaitParkedOnDrain(waiters);

        fault.trigger();
        for (Pending w : waiters) {
            GpuFaultException e = assertInstanceOf(GpuFaultException.class, w.failure(), w.toString());
            assertTrue(e.getMessage().contains(fault.errorName()), "names the error: " + e.getMessage());
        }
        ExecutionException viaFuture = assertThrows(ExecutionException.class,
                () -> future.get(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(GpuFaultException.class, viaFuture.getCause());
        assertTrue(callbackRan.await(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(GpuFaultException.class, callbackError.get(), "onError got the fault, onDone did not run");
        GpuFaultException later = assertThrows(GpuFaultException.class, event::await, "a later await fails at once");
        assertTrue(later.getMessage().contains(fault.errorName()), later.getMessage());
        assertFalse(event.isDone());
        assertEquals(1, device.reactor().stats().faults(), "the close's registration failed with the fault");
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void closingTheDeviceFailsTheEventsOfAClosedStreamWithReactorClosedException(BackendFixture b)
            throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        GpuEvent event = stream.event();
        stream.close();
        List<Pending> waiters = List.of(
                start(Kind.VIRTUAL, "await on a closed stream", () -> {
                    event.await();
                    return "returned";
                }),
                start(Kind.PLATFORM, "timed await on a closed stream", () -> event.await(LONG)));
        CompletableFuture<?> future = event.toCompletableFuture();
        awaitParkedOnDrain(waiters);

        device.close();
        for (Pending w : waiters) {
            ReactorClosedException e = assertInstanceOf(ReactorClosedException.class, w.failure(), w.toString());
            assertTrue(e.getMessage().contains(device.name()), e.getMessage());
        }
        ExecutionException viaFuture = assertThrows(ExecutionException.class,
                () -> future.get(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(ReactorClosedException.class, viaFuture.getCause());
        assertThrows(ReactorClosedException.class, event::await, "a later await: the device's closure first");
        CompletableFuture<?> late = event.toCompletableFuture(Runnable::run);
        assertInstanceOf(ReactorClosedException.class, late.exceptionNow(), "reported through the future at once");

        gate.open();
        awaitUntil("the flags freed once nothing can land", () -> device.reactor().isMemoryReleased());
        long writes = b.writesAfterRelease(device);
        assertTrue(writes == 0 || writes == -1, writes + " flag writes landed in freed memory");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void anIdleStreamsCloseLeavesItsEventsDoneAtOnce(BackendFixture b) throws Exception {
        if (!b.reportsIdle()) {
            b.unsupported("its streams report themselves busy even with nothing in flight, so the close registers"
                    + " and its events complete only once the scanner delivers that registration");
        }
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        GpuEvent event = stream.event();
        GpuEvent other = stream.event();
        stream.close();
        assertTrue(event.await(Duration.ZERO), "zero timeout: done");
        CompletableFuture<?> future = other.toCompletableFuture(Runnable::run);
        assertTrue(future.isDone() && !future.isCompletedExceptionally(), "completed before it was returned");
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        other.onComplete(Runnable::run, () -> ranOn.set(Thread.currentThread()), e -> fail(e));
        assertSame(Thread.currentThread(), ranOn.get(), "ran at once, on the caller");
        other.await();
        ReactorStats s = device.reactor().stats();
        assertEquals(0, s.registrations() + s.fallbacks() + s.coalesced(), "nothing registered: " + s);
        assertThrows(IllegalStateException.class, stream::event);
    }

    // ---- 8. coalescing -------------------------------------------------------------------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void coalescedWaitersBehindTheSameWorkShareOneSlot(BackendFixture b) throws Exception {
        requireSlots(b);
        // One shared write in flight: racing waiters then never arm a second one (with the default
        // of 2, two that both found no armed group may each arm one, as the H200 showed).
        GpuDevice device = b.open(b.config().coalesce(true).flagWritesInFlight(1).build());
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        final int n = 64;
        List<Pending> waiters = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            waiters.add(start(i % 8 == 0 ? Kind.PLATFORM : Kind.VIRTUAL, "waiter " + i, () -> {
                stream.event().await();
                return "returned";
            }));
        }
        awaitParked(device, n, waiters);
        ReactorStats s = device.reactor().stats();
        assertEquals(1, s.registrations(), "one slot, one device write: " + s);
        assertEquals(n - 1, s.coalesced(), "everyone else joined it: " + s);
        assertEquals(0, s.fallbacks(), s.toString());
        assertEquals(1, s.armedNow(), s.toString());

        gate.open();
        for (Pending w : waiters) {
            assertEquals("returned", w.result(), w.toString());
        }
        assertEquals(n, device.reactor().stats().completions());
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aCoalescedWaiterJoinsOnlyAWriteThatCoversAllTheWorkItNeeds(BackendFixture b) throws Exception {
        requireSlots(b);
        // Room for two writes, so that the later waiter can arm its own (with one it gathers for the next).
        GpuDevice device = b.open(b.config().coalesce(true).flagWritesInFlight(2).build());
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate first = b.hold(stream);
        Pending early = start(Kind.VIRTUAL, "needs the first work", () -> {
            stream.event().await();
            return "returned";
        });
        awaitParked(device, 1, List.of(early));
        BackendFixture.Gate second = b.hold(stream); // submitted after the first group's write
        Pending late = start(Kind.PLATFORM, "needs the second work", () -> {
            stream.event().await();
            return "returned";
        });
        awaitParked(device, 2, List.of(early, late));
        ReactorStats s = device.reactor().stats();
        assertEquals(2, s.registrations(), "the later waiter armed its own slot: " + s);
        assertEquals(0, s.coalesced(), "it did not join a write that misses the second work: " + s);

        first.open();
        assertEquals("returned", early.result());
        stays("the later waiter waits for the second work", () -> !late.ended());
        second.open();
        assertEquals("returned", late.result());
        assertNothingLeaked(device);
    }

    // ---- 9. non-blocking callers park no thread ------------------------------------------------

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
        assertEquals(1, count(dump, "io.cudaloom.BlockingWait.parkUntilDelivered("),
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

    // ---- 10. every strategy keeps the contract --------------------------------------------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void theConfiguredStrategyIsThePathThatServesTheAwaits(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        assertEquals(b.strategy(), device.reactor().config().strategy());
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        Pending waiter = start(Kind.VIRTUAL, "waiter", () -> {
            stream.event().await();
            return "returned";
        });
        awaitParked(device, 1, List.of(waiter));
        CompletableFuture<?> future = stream.event().toCompletableFuture(Runnable::run);
        ReactorStats s = device.reactor().stats();
        assertRegisteredThrough(b, s, 2);
        assertEquals(usesSlots(b) ? 2 : 0, s.armedNow(), s.toString());
        gate.open();
        assertEquals("returned", waiter.result());
        future.get(LONG.toSeconds(), TimeUnit.SECONDS);
        s = device.reactor().stats();
        assertEquals(2, s.completions(), s.toString());
        assertEquals(0, s.inlineCompletions(), "parked, so woken by the completer, not by its own spin: " + s);
        assertNothingLeaked(device);
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
            if (e.getClassName().equals(StreamDrain.class.getName()) && e.getMethodName().equals("await")) {
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

    static void requireSlots(BackendFixture b) {
        if (!usesSlots(b)) {
            String reason = "coalesced waiters share a slot; " + b.strategy() + " uses none (coalescing is off there)";
            System.out.println("SKIPPED semantics test on " + b + ": " + reason);
            org.junit.jupiter.api.Assumptions.abort(reason);
        }
    }

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
