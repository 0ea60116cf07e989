package io.cudaloom.demo;

import io.cudaloom.GpuDevice;
import io.cudaloom.sim.SimulatedDevice;
import java.time.Duration;

/**
 * The GPU work of one demo step, written in plain blocking style: launch, {@code await()}, verify.
 * The demo's virtual threads and the servlet handler both call it; each device backend has its own
 * implementation ({@link #forDevice}).
 */
public interface DemoWorkload extends AutoCloseable {
    /** Length of the vector each {@link #runOnce} scales. */
    int VECTOR_LENGTH = 256;

    /**
     * How {@link #scale} waits for its device work. The demo and the servlet use {@link #AWAIT};
     * {@link #SYNCHRONIZE} is the classic blocking baseline the servlet benchmark compares it with
     * ({@code GpuBench servlet}).
     */
    enum WaitBy {
        /** {@code stream.event().await()}: the calling (virtual) thread parks; the reactor wakes it. */
        AWAIT,
        /**
         * Blocks the calling thread until the stream's work is done, without the reactor. On a GPU,
         * {@link io.cudaloom.cuda.CudaStream#synchronize()} ({@code cuStreamSynchronize}), which on
         * a virtual thread would pin its carrier: meant for platform threads. On the simulated
         * device, which has no synchronize, a latch counted down by a task queued behind the work.
         */
        SYNCHRONIZE,
        /**
         * No device work and no wait: {@link #scale} multiplies on the calling thread. The servlet
         * benchmark's floor: what the HTTP server (and its client) cost per request with nothing
         * to wait for, against which the two ways of waiting are read.
         */
        HOST_ONLY
    }

    /** What runs where, for the demo's header line. */
    String description();

    /** The device the work runs on. */
    GpuDevice device();

    /**
     * Multiplies every element of {@code data} by {@code factor} on the device, in place: copy to
     * the device, launch the kernel, copy back, {@code await()} the stream, return. The calling
     * thread (typically virtual) parks in the await; no platform thread waits for it. Each await's
     * latency is recorded in {@link #awaitLatency()}. A workload made with
     * {@link WaitBy#SYNCHRONIZE} blocks the calling thread instead (see there).
     *
     * @param data exactly {@link #VECTOR_LENGTH} floats (the CUDA workload's pooled block size;
     *     every backend checks it, so code tested on the simulated device runs on a GPU)
     * @throws IllegalArgumentException if {@code data.length != VECTOR_LENGTH}
     * @throws InterruptedException if interrupted while awaiting (data is then undefined)
     * @throws io.cudaloom.GpuFaultException if the device work faulted
     * @throws io.cudaloom.ReactorClosedException if the device was closed meanwhile
     */
    void scale(float[] data, float factor) throws InterruptedException;

    /** Latencies of the waits made by {@link #scale} (awaits, or synchronizes), nanoseconds. */
    LatencyHistogram awaitLatency();

    /**
     * One unit of the demo: fill a vector owned by the calling thread, {@link #scale} it on the
     * device (launch, await), verify every element on the calling thread.
     *
     * @return true if the result checked out
     */
    default boolean runOnce(int threadIndex, int iteration) throws InterruptedException {
        float[] data = new float[VECTOR_LENGTH];
        float base = threadIndex % 4096;           // all values stay exact in float
        float factor = 2 + (iteration % 3);
        for (int i = 0; i < data.length; i++) {
            data[i] = base + i;
        }
        scale(data, factor);
        for (int i = 0; i < data.length; i++) {
            if (data[i] != (base + i) * factor) {
                return false;
            }
        }
        return true;
    }

    /** {@link WaitBy#HOST_ONLY}'s whole step: {@code data[i] *= factor} on the calling thread. */
    static void scaleOnHost(float[] data, float factor) {
        for (int i = 0; i < data.length; i++) {
            data[i] *= factor;
        }
    }

    /** Releases the workload's streams and buffers; the device stays open (its owner closes it). */
    @Override
    void close();

    /**
     * The workload for {@code device}: {@link SimulatedWorkload} on the simulated device, the CUDA
     * workload on a GPU.
     *
     * @param streams streams shared round-robin by all callers
     * @param kernelTime extra device time per step on the simulated device (a GPU takes what it takes)
     */
    static DemoWorkload forDevice(GpuDevice device, int streams, Duration kernelTime) {
        return forDevice(device, streams, kernelTime, WaitBy.AWAIT);
    }

    /** {@link #forDevice(GpuDevice, int, Duration)} whose {@link #scale} waits {@code waitBy}. */
    static DemoWorkload forDevice(GpuDevice device, int streams, Duration kernelTime, WaitBy waitBy) {
        if (device instanceof SimulatedDevice simulated) {
            return new SimulatedWorkload(simulated, streams, kernelTime, waitBy);
        }
        return cuda(device, streams, waitBy);
    }

    /**
     * The CUDA workload: a PTX kernel that scales a device vector, with async copies host-to-device
     * and back on the same stream, then {@code stream.event().await()}.
     */
    static DemoWorkload cuda(GpuDevice device, int streams) {
        return cuda(device, streams, WaitBy.AWAIT);
    }

    /** {@link #cuda(GpuDevice, int)} whose {@link #scale} waits {@code waitBy}. */
    static DemoWorkload cuda(GpuDevice device, int streams, WaitBy waitBy) {
        if (!(device instanceof io.cudaloom.cuda.CudaDevice cuda)) {
            throw new IllegalArgumentException("not a CUDA device: " + device.name());
        }
        return new CudaWorkload(cuda, streams, waitBy);
    }
}
