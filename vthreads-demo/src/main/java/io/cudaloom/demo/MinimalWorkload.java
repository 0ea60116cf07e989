package io.cudaloom.demo;

import io.cudaloom.GpuDevice;
import java.lang.reflect.InvocationTargetException;
import java.util.function.ObjDoubleConsumer;

/**
 * The servlet benchmark's {@code minimal} server's workload: the demo's step waited for by
 * {@code io.cudaloom.bench.MinimalReactor} (combining per stream, one flag write per drain, one
 * scanner: the fewest parts that wait the way the library does, no project code) instead of the
 * library. Against the {@code await()} server in the same run, its server CPU per request is what a
 * request costs without the library's own code: the library's share is the difference.
 *
 * <p>{@code MinimalReactor} is compiled for Java 22 ({@code src/main/java22}), so this class, compiled
 * for 21, reaches its {@code Service} by reflection, as a JDK interface. On a CUDA device it uses
 * device 0's primary context through its own downcalls; elsewhere ({@code standIn}) it runs on its
 * in-process stand-in, whose figures mean nothing. There is no {@link GpuDevice} and no reactor
 * here: {@link #device()} throws.
 */
final class MinimalWorkload implements DemoWorkload {
    private static final String SERVICE = "io.cudaloom.bench.MinimalReactor$Service";

    private final ObjDoubleConsumer<float[]> service;
    private final AutoCloseable closer;
    private final String description;
    private final LatencyHistogram awaitLatency = new LatencyHistogram();

    /**
     * Opens the service with {@code streams} streams, on the stand-in if {@code standIn}.
     *
     * @throws IllegalStateException if {@code MinimalReactor} is not compiled (a JDK below 22 built
     *     the module) or could not open the device (its message says why)
     */
    @SuppressWarnings("unchecked")
    MinimalWorkload(int streams, boolean standIn) {
        Object s;
        String text;
        try {
            Class<?> type = Class.forName(SERVICE);
            s = type.getMethod("open", int.class, boolean.class).invoke(null, streams, standIn);
            text = (String) type.getMethod("description").invoke(s);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("MinimalReactor is not compiled: the module was built with a JDK below 22", e);
        } catch (InvocationTargetException e) {
            throw new IllegalStateException("MinimalReactor could not open its device: " + e.getCause(), e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("MinimalReactor's service cannot be reached: " + e, e);
        }
        this.service = (ObjDoubleConsumer<float[]>) s;
        this.closer = (AutoCloseable) s;
        this.description = text;
    }

    @Override
    public String description() {
        return description;
    }

    /** None: MinimalReactor has no {@link GpuDevice} and no reactor. */
    @Override
    public GpuDevice device() {
        throw new UnsupportedOperationException("the minimal workload has no GpuDevice (MinimalReactor, no project code)");
    }

    @Override
    public LatencyHistogram awaitLatency() {
        return awaitLatency;
    }

    @Override
    public void scale(float[] data, float factor) throws InterruptedException {
        long start = System.nanoTime();
        service.accept(data, factor);
        awaitLatency.record(System.nanoTime() - start);
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted while the device scaled the vector (it finished)");
        }
    }

    @Override
    public void close() {
        try {
            closer.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("MinimalReactor's close failed: " + e, e);
        }
    }
}
