package io.cudaloom;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/** The batched blocking call on the simulated device: batching, every outcome, nothing leaked. */
class GpuBatcherTest {
    private static final Duration LONG = Duration.ofSeconds(60);

    /**
     * x -> 3x with the built-in SCALE_F32 over the batch, in place. An input of -1 makes the batch
     * fault (an injected fault, as a kernel's illegal address would), one of -2 makes its pack throw,
     * one above 1e9 makes the batch's work take 300 ms.
     */
    static final class Triple implements GpuBatcher.Step<Float, Float> {
        final AtomicInteger launches = new AtomicInteger();
        final AtomicInteger mostInBatch = new AtomicInteger();
        volatile boolean slowNext;

        @Override
        public void pack(Float x, ByteBuffer slot) {
            if (x == -2f) {
                throw new IllegalStateException("cannot pack -2");
            }
            if (x > 1e9f) {
                slowNext = true;
            }
            slot.putFloat(x);
        }

        @Override
        public void launch(GpuStream stream, DeviceMemory in, DeviceMemory out, int count) {
            launches.incrementAndGet();
            mostInBatch.accumulateAndGet(count, Math::max);
            if (slowNext) {
                slowNext = false;
                stream.launchKernel(Duration.ofMillis(300));
            }
            stream.launch(GpuKernel.SCALE_F32, (count + 255) / 256, 256, in, 3f, count);
        }

        @Override
        public Float unpack(ByteBuffer slot) {
            return slot.getFloat();
        }
    }

    /** Triple, and a fault injected into the batch that packs -1. */
    static final class Faulting implements GpuBatcher.Step<Float, Float> {
        final Triple t = new Triple();
        volatile boolean faultNext;

        @Override
        public void pack(Float x, ByteBuffer slot) {
            if (x == -1f) {
                faultNext = true;
            }
            t.pack(x, slot);
        }

        @Override
        public void launch(GpuStream stream, DeviceMemory in, DeviceMemory out, int count) {
            if (faultNext) {
                faultNext = false;
                ((SimulatedStream) stream).injectFault("ILLEGAL_ADDRESS in the batch's kernel");
            }
            t.launch(stream, in, out, count);
        }

        @Override
        public Float unpack(ByteBuffer slot) {
            return t.unpack(slot);
        }
    }

    private static GpuBatcher<Float, Float> batcher(GpuDevice d, GpuBatcher.Step<Float, Float> step, int maxBatch) {
        return GpuBatcher.builder(d, step).inPlace(4).maxBatch(maxBatch).streams(2).maxDelay(Duration.ofMillis(2)).build();
    }

    private static void assertNoMemoryLeft(GpuDevice d) {
        await().atMost(LONG).until(() -> d.liveResources().count(LiveResources.Kind.DEVICE_MEMORY)
                + d.liveResources().count(LiveResources.Kind.HOST_MEMORY)
                + d.liveResources().count(LiveResources.Kind.FREEING_MEMORY)
                + d.liveResources().count(LiveResources.Kind.STREAM) == 0);
    }

    @Test
    void aLoneCallerIsServedAtOnceByABatchOfOne() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            Triple step = new Triple();
            // maxDelay 5 s: a lone caller must not wait for it (the batch closes at once when idle).
            try (GpuBatcher<Float, Float> b = GpuBatcher.builder(d, step).inPlace(4).maxBatch(64)
                    .maxDelay(Duration.ofSeconds(5)).build()) {
                long t0 = System.nanoTime();
                for (int i = 0; i < 5; i++) {
                    assertEquals(3f * i, b.call((float) i));
                }
                long millis = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(millis < 2_500, "5 lone calls took " + millis + " ms: one waited for maxDelay (5 s)");
                assertEquals(5, b.stats().batches(), "nothing in flight when each call came: a batch each, no delay");
                assertEquals(1.0, b.stats().meanBatchSize());
            }
            assertNoMemoryLeft(d);
        }
    }

    @Test
    void tenThousandVirtualThreadsCostFewLaunches() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            Triple step = new Triple();
            try (GpuBatcher<Float, Float> b = batcher(d, step, 256);
                 ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<Float>> out = new ArrayList<>();
                for (int i = 0; i < 10_000; i++) {
                    float x = i;
                    out.add(threads.submit(() -> b.call(x)));
                }
                for (int i = 0; i < out.size(); i++) {
                    assertEquals(3f * i, out.get(i).get(), "call " + i);
                }
                GpuBatcher.Stats s = b.stats();
                System.out.println("GpuBatcherTest: 10,000 calls in " + s.batches() + " batches (mean "
                        + s.meanBatchSize() + ", largest " + step.mostInBatch.get() + ")");
                assertEquals(10_000, s.itemsLaunched());
                assertTrue(s.batches() < 2_000, "batched: " + s);
                assertTrue(step.mostInBatch.get() <= 256, "never more than maxBatch in one batch");
            }
            assertNoMemoryLeft(d);
        }
    }

    @Test
    void aCallerThatTimesOutLeavesWithoutDisturbingItsBatch() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            Triple step = new Triple();
            try (GpuBatcher<Float, Float> b = GpuBatcher.builder(d, step).inPlace(4).maxBatch(64).streams(1)
                    .maxDelay(Duration.ofMillis(50)).build()) {
                CompletableFuture<Float> slow = b.submit(2e9f); // a batch of one whose work takes 300 ms
                // These arrive while it is in flight: they form the next batch, after it.
                CompletableFuture<Float> other = b.submit(5f);
                assertThrows(TimeoutException.class, () -> b.call(7f, Duration.ofMillis(20)));
                assertEquals(15f, other.get());
                assertEquals(6e9f, slow.get());
                assertEquals(1, b.stats().left(), "the caller that timed out left while waiting");
                assertEquals(2, b.stats().itemsLaunched(), "its input never reached a batch");
            }
            assertNoMemoryLeft(d);
        }
    }

    @Test
    void anInterruptedCallerLeavesWithInterruptedException() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            Triple step = new Triple();
            try (GpuBatcher<Float, Float> b = GpuBatcher.builder(d, step).inPlace(4).maxBatch(64).streams(1)
                    .maxDelay(Duration.ofSeconds(5)).build()) {
                CompletableFuture<Float> slow = b.submit(2e9f);
                CountDownLatch calling = new CountDownLatch(1);
                AtomicInteger outcome = new AtomicInteger();
                Thread t = Thread.ofVirtual().start(() -> {
                    try {
                        calling.countDown();
                        b.call(1f);
                        outcome.set(1);
                    } catch (InterruptedException e) {
                        outcome.set(2);
                    }
                });
                calling.await();
                await().atMost(LONG).until(() -> t.getState() == Thread.State.WAITING);
                t.interrupt();
                t.join(LONG.toMillis());
                assertEquals(2, outcome.get(), "InterruptedException");
                assertEquals(6e9f, slow.get());
            }
            assertNoMemoryLeft(d);
        }
    }

    /**
     * A lone caller launches its own batch and waits for it itself (it leads the batch): if it times
     * out, it hands the delivery on and leaves; the lane still frees when the work is done, so the
     * next batch runs and its caller is served.
     */
    @Test
    void aCallerThatLedItsBatchAndTimesOutHandsTheDeliveryOn() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            Triple step = new Triple();
            try (GpuBatcher<Float, Float> b = GpuBatcher.builder(d, step).inPlace(4).maxBatch(64).streams(1)
                    .maxDelay(Duration.ofMillis(50)).build()) {
                CompletableFuture<@Nullable Throwable> lone = new CompletableFuture<>();
                Thread.ofVirtual().start(() -> {
                    try {
                        b.call(2e9f, Duration.ofMillis(20)); // a batch of one whose work takes 300 ms
                        lone.complete(null);
                    } catch (Exception e) {
                        lone.complete(e);
                    }
                });
                await().atMost(LONG).until(() -> step.launches.get() == 1); // premise: its batch is launched
                CompletableFuture<Float> other = b.submit(5f); // the next batch, after it (one stream)
                assertInstanceOf(TimeoutException.class, lone.get());
                assertEquals(15f, other.get(LONG.toSeconds(), TimeUnit.SECONDS));
                assertEquals(2, b.stats().batches());
                assertEquals(2, b.stats().itemsLaunched(), "both inputs ran, each in its own batch");
            }
            assertNoMemoryLeft(d);
        }
    }

    /**
     * Callers past {@code maxDelay} while every lane is busy wait for a lane, not for the timer: the
     * timer does not fire again and again while the batch in flight runs (it did: a timer due at
     * once rescheduled itself without pause, a core spent for nothing under load).
     */
    @Test
    void aTimerDueWhileEveryLaneIsBusyDoesNotSpin() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            Triple step = new Triple();
            try (GpuBatcher<Float, Float> b = GpuBatcher.builder(d, step).inPlace(4).maxBatch(128).streams(1)
                    .maxDelay(Duration.ofMillis(1)).build()) {
                CompletableFuture<Float> slow = b.submit(2e9f); // the only lane busy for 300 ms
                List<CompletableFuture<Float>> waiting = new ArrayList<>();
                for (int i = 0; i < 100; i++) {
                    waiting.add(b.submit((float) i)); // past their 1 ms long before the lane is free
                }
                assertEquals(6e9f, slow.get(LONG.toSeconds(), TimeUnit.SECONDS));
                for (int i = 0; i < 100; i++) {
                    assertEquals(3f * i, waiting.get(i).get(LONG.toSeconds(), TimeUnit.SECONDS));
                }
                assertEquals(1, step.launches.get() - 1, "the 100 waiting calls ran as one batch when the lane came free");
                assertTrue(b.timerRuns.get() < 20, "the timer ran " + b.timerRuns.get() + " times in 300 ms");
            }
            assertNoMemoryLeft(d);
        }
    }

    /** As above, interrupted instead of timed out. */
    @Test
    void aCallerThatLedItsBatchAndIsInterruptedHandsTheDeliveryOn() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            Triple step = new Triple();
            try (GpuBatcher<Float, Float> b = GpuBatcher.builder(d, step).inPlace(4).maxBatch(64).streams(1)
                    .maxDelay(Duration.ofMillis(50)).build()) {
                AtomicInteger outcome = new AtomicInteger();
                Thread t = Thread.ofVirtual().start(() -> {
                    try {
                        b.call(2e9f);
                        outcome.set(1);
                    } catch (InterruptedException e) {
                        outcome.set(2);
                    }
                });
                await().atMost(LONG).until(() -> step.launches.get() == 1 && t.getState() == Thread.State.WAITING);
                CompletableFuture<Float> other = b.submit(5f);
                t.interrupt();
                t.join(LONG.toMillis());
                assertEquals(2, outcome.get(), "InterruptedException");
                assertEquals(15f, other.get(LONG.toSeconds(), TimeUnit.SECONDS));
                assertEquals(2, b.stats().itemsLaunched());
            }
            assertNoMemoryLeft(d);
        }
    }

    /** A lone caller whose own batch faults gets the fault from call() (it led the batch). */
    @Test
    void aCallerThatLedAFaultingBatchGetsTheFault() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            try (GpuBatcher<Float, Float> b = GpuBatcher.builder(d, new Faulting()).inPlace(4).maxBatch(64).streams(2)
                    .maxDelay(Duration.ZERO).build()) {
                GpuFaultException e = assertThrows(GpuFaultException.class, () -> b.call(-1f));
                assertTrue(e.getMessage().contains("ILLEGAL_ADDRESS in the batch's kernel"), e.getMessage());
                assertEquals(1, b.stats().failedBatches());
            }
        }
    }

    @Test
    void aFaultFailsExactlyThatBatchsCallersWithTheFault() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            Faulting step = new Faulting();
            try (GpuBatcher<Float, Float> b = GpuBatcher.builder(d, step).inPlace(4).maxBatch(64).streams(2)
                    .maxDelay(Duration.ZERO).build()) {
                assertEquals(3f, b.call(1f));
                ExecutionException e = assertThrows(ExecutionException.class, () -> b.submit(-1f).get());
                assertInstanceOf(GpuFaultException.class, e.getCause());
                assertTrue(e.getCause().getMessage().contains("ILLEGAL_ADDRESS in the batch's kernel"), e.getCause().getMessage());
                assertEquals(1, b.stats().failedBatches());
            }
        }
    }

    @Test
    void badInputFailsThatCallerOnly() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            Triple step = new Triple();
            GpuBatcher.Step<float[], Float> wide = new GpuBatcher.Step<>() {
                @Override
                public void pack(float[] xs, ByteBuffer slot) {
                    for (float x : xs) {
                        slot.putFloat(x);
                    }
                }

                @Override
                public void launch(GpuStream stream, DeviceMemory in, DeviceMemory out, int count) {
                    step.launch(stream, in, out, count);
                }

                @Override
                public Float unpack(ByteBuffer slot) {
                    return slot.getFloat();
                }
            };
            try (GpuBatcher<float[], Float> b = GpuBatcher.builder(d, wide).inPlace(4).maxBatch(8).streams(1).build()) {
                IllegalArgumentException tooBig = assertThrows(IllegalArgumentException.class, () -> b.call(new float[] {1, 2}));
                assertTrue(tooBig.getMessage().startsWith("the input does not fit its staging slot of 4 bytes"),
                        tooBig.getMessage());
                assertEquals(6f, b.call(new float[] {2}), "the batcher goes on");
                assertEquals("input", assertThrows(NullPointerException.class, () -> b.call(null)).getMessage());
            }
            try (GpuBatcher<Float, Float> b = batcher(d, step, 8)) {
                assertEquals("cannot pack -2", assertThrows(IllegalStateException.class, () -> b.call(-2f)).getMessage());
                assertEquals(9f, b.call(3f));
            }
            assertNoMemoryLeft(d);
        }
    }

    @Test
    void closingFailsTheWaitingCallersAndWaitsForTheBatchInFlight() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            Triple step = new Triple();
            GpuBatcher<Float, Float> b = GpuBatcher.builder(d, step).inPlace(4).maxBatch(64).streams(1)
                    .maxDelay(Duration.ofSeconds(5)).build();
            CompletableFuture<Float> inFlight = b.submit(2e9f); // 300 ms of work
            CompletableFuture<Float> waiting = b.submit(1f);   // waits for the next batch
            b.close();
            assertTrue(inFlight.isDone(), "close waited for the batch in flight");
            assertEquals(6e9f, inFlight.get());
            ExecutionException e = assertThrows(ExecutionException.class, waiting::get);
            assertInstanceOf(IllegalStateException.class, e.getCause());
            assertTrue(e.getCause().getMessage().endsWith("is closed"), e.getCause().getMessage());
            assertThrows(IllegalStateException.class, () -> b.call(1f), "no call after the close");
            b.close(); // idempotent
            assertNoMemoryLeft(d);
        }
    }

    @Test
    void badSettingsAreRefusedByName() {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            Triple step = new Triple();
            assertEquals("maxBatch must be between 1 and 1048576, was 0",
                    assertThrows(IllegalArgumentException.class, () -> GpuBatcher.builder(d, step).maxBatch(0)).getMessage());
            assertEquals("streams must be between 1 and 64, was 0",
                    assertThrows(IllegalArgumentException.class, () -> GpuBatcher.builder(d, step).streams(0)).getMessage());
            assertEquals("set inputBytes and outputBytes before build()",
                    assertThrows(IllegalStateException.class, () -> GpuBatcher.builder(d, step).build()).getMessage());
            assertEquals("maxDelay must be between 0 and 10 s, was PT-1S", assertThrows(IllegalArgumentException.class,
                    () -> GpuBatcher.builder(d, step).maxDelay(Duration.ofSeconds(-1))).getMessage());
        }
    }

    /**
     * The soak: 20,000 virtual threads call one batcher with random timeouts, and some are
     * interrupted; every call ends with exactly one documented outcome (its correct output, a
     * timeout, an interrupt), and nothing is left after the close.
     */
    @Test
    void twentyThousandCallersWithTimeoutsAndInterruptsEachGetExactlyOneOutcome() throws Exception {
        try (SimulatedDevice d = SimulatedDevice.create()) {
            Triple step = new Triple();
            LongAdder ok = new LongAdder();
            LongAdder timedOut = new LongAdder();
            LongAdder interrupted = new LongAdder();
            try (GpuBatcher<Float, Float> b = GpuBatcher.builder(d, step).inPlace(4).maxBatch(128).streams(4)
                    .maxDelay(Duration.ofMillis(1)).build()) {
                List<Thread> threads = new ArrayList<>();
                for (int i = 0; i < 20_000; i++) {
                    float x = i % 1000;
                    // Every 7th call gives up at once (a timeout of 0: its batch cannot be back yet), every
                    // 13th after 1-500 us (it may or may not be served), the others wait 2-200 ms.
                    ThreadLocalRandom rnd = ThreadLocalRandom.current();
                    Duration timeout = i % 7 == 3 ? Duration.ZERO : Duration.ofNanos(i % 13 == 5
                            ? rnd.nextLong(1_000, 500_000) : rnd.nextLong(2_000_000, 200_000_000));
                    threads.add(Thread.ofVirtual().start(() -> {
                        try {
                            Float y = b.call(x, timeout);
                            if (y != 3f * x) {
                                fail("call(" + x + ") gave " + y);
                            }
                            ok.increment();
                        } catch (TimeoutException e) {
                            timedOut.increment();
                        } catch (InterruptedException e) {
                            interrupted.increment();
                        }
                    }));
                    if (i % 10 == 5) {
                        threads.get(i - 3).interrupt();
                    }
                }
                for (Thread t : threads) {
                    t.join(LONG.toMillis());
                    assertTrue(!t.isAlive(), "a caller never ended");
                }
                long total = ok.sum() + timedOut.sum() + interrupted.sum();
                System.out.printf("GpuBatcherTest soak: %,d ok, %,d timed out, %,d interrupted; %s%n", ok.sum(),
                        timedOut.sum(), interrupted.sum(), b.stats());
                assertEquals(20_000, total, "exactly one outcome each");
                assertTrue(ok.sum() > 1_000, "the premise: many calls completed");
                assertTrue(timedOut.sum() > 1_000, "the premise: many calls timed out");
            }
            assertNoMemoryLeft(d);
        }
    }
}
