package io.cudaloom.demo;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuBatcher;
import io.cudaloom.GpuDevice;
import io.cudaloom.GpuKernel;
import io.cudaloom.GpuStream;
import java.nio.ByteBuffer;
import java.time.Duration;

/**
 * The demo's step through {@link GpuBatcher}s: each caller's vector of {@link #VECTOR_LENGTH}
 * floats is one call, and a batch of up to {@code maxBatch} vectors costs one copy in, one
 * {@code scale_f32} launch over the whole batch and one copy out. The demo's factor (2, 3 or 4,
 * from the iteration) is the kernel's argument, so there is one batcher per factor, each with its
 * own streams and staging. Runs on a GPU and on the simulated device alike (the built-in kernel
 * runs on both).
 */
final class BatchedWorkload implements DemoWorkload {
    /** The demo's factors: {@code 2 + iteration % 3} ({@link DemoWorkload#runOnce}). */
    static final int DEMO_FIRST_FACTOR = 2;
    static final int DEMO_FACTORS = 3;

    /** x -> factor * x over the batch's vectors, in place. */
    private record Scale(float factor) implements GpuBatcher.Step<float[], float[]> {
        @Override
        public void pack(float[] data, ByteBuffer slot) {
            slot.asFloatBuffer().put(data);
        }

        @Override
        public void launch(GpuStream stream, DeviceMemory in, DeviceMemory out, int count) {
            int n = count * VECTOR_LENGTH;
            stream.launch(GpuKernel.SCALE_F32, (n + 255) / 256, 256, in, factor, n);
        }

        @Override
        public float[] unpack(ByteBuffer slot) {
            float[] out = new float[VECTOR_LENGTH];
            slot.asFloatBuffer().get(out);
            return out;
        }
    }

    private final GpuDevice device;
    private final int firstFactor;
    private final GpuBatcher<float[], float[]>[] batchers;
    private final LatencyHistogram latency = new LatencyHistogram();
    private final int maxBatch;
    private final int streams;

    /**
     * @param streams streams of each batcher (batches in flight at once per factor)
     * @param maxBatch vectors per batch at most
     */
    BatchedWorkload(GpuDevice device, int streams, int maxBatch) {
        this(device, streams, maxBatch, DEMO_FIRST_FACTOR, DEMO_FACTORS);
    }

    /**
     * A batched workload for the integer factors {@code firstFactor .. firstFactor + factors - 1},
     * one batcher each (the servlet benchmark's load asks for factors 1 to 7).
     *
     * @param streams streams of each batcher (batches in flight at once per factor)
     * @param maxBatch vectors per batch at most
     * @throws IllegalArgumentException if {@code factors} is not 1..64
     */
    @SuppressWarnings("unchecked")
    BatchedWorkload(GpuDevice device, int streams, int maxBatch, int firstFactor, int factors) {
        if (factors < 1 || factors > 64) {
            throw new IllegalArgumentException("factors must be 1..64, was " + factors);
        }
        this.device = device;
        this.maxBatch = maxBatch;
        this.streams = streams;
        this.firstFactor = firstFactor;
        this.batchers = new GpuBatcher[factors];
        try {
            for (int i = 0; i < factors; i++) {
                batchers[i] = GpuBatcher.builder(device, new Scale(firstFactor + i)).inPlace(4 * VECTOR_LENGTH)
                        .maxBatch(maxBatch).streams(streams).maxDelay(Duration.ofMillis(1)).build();
            }
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    @Override
    public String description() {
        return device.name() + ", batched: GpuBatcher, up to " + maxBatch + " vectors of " + VECTOR_LENGTH
                + " floats per launch, " + streams + " streams per factor (factors " + firstFactor + " to "
                + (firstFactor + batchers.length - 1) + ")";
    }

    @Override
    public GpuDevice device() {
        return device;
    }

    /** One call of the factor's batcher: blocks (parks) until this vector's batch is back. */
    @Override
    public void scale(float[] data, float factor) throws InterruptedException {
        if (data.length != VECTOR_LENGTH) {
            throw new IllegalArgumentException("vector length must be " + VECTOR_LENGTH + ", was " + data.length);
        }
        int i = Math.round(factor) - firstFactor;
        if (i < 0 || i >= batchers.length || factor != firstFactor + i) {
            throw new IllegalArgumentException("this batched workload scales by " + firstFactor + " to "
                    + (firstFactor + batchers.length - 1) + ", not " + factor);
        }
        long start = System.nanoTime();
        float[] out = batchers[i].call(data);
        latency.record(System.nanoTime() - start);
        System.arraycopy(out, 0, data, 0, VECTOR_LENGTH);
    }

    @Override
    public LatencyHistogram awaitLatency() {
        return latency;
    }

    /** Batches launched so far, over all factors. */
    long batches() {
        long n = 0;
        for (GpuBatcher<float[], float[]> b : batchers) {
            if (b != null) {
                n += b.stats().batches();
            }
        }
        return n;
    }

    @Override
    public void close() {
        for (GpuBatcher<float[], float[]> b : batchers) {
            if (b != null) {
                b.close();
            }
        }
    }
}
