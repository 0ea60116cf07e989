package io.cudaloom.demo;

import io.cudaloom.GpuDevice;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@link DemoWorkload} on the embedded simulated device: the "kernel" is a Java task that runs on
 * the stream's own thread (in order with the rest of the stream's work) and scales the caller's
 * array in place, followed by a simulated kernel of {@code kernelTime}. The caller then awaits the
 * stream's event exactly as it would on a GPU, and reads the array the device thread wrote.
 *
 * <p>Made with {@link DemoWorkload.WaitBy#SYNCHRONIZE}, the caller instead blocks on a latch that
 * a task queued behind the work counts down: a blocking wait that bypasses the reactor, standing
 * in for {@code cuStreamSynchronize}, which the simulated device does not have. (Unlike
 * {@code cuStreamSynchronize} it parks rather than pins a virtual thread, and a faulted stream
 * discards the task, so the wait gives up after {@link #SYNCHRONIZE_LIMIT}.)
 */
final class SimulatedWorkload implements DemoWorkload {
    private final SimulatedDevice device;
    private final SimulatedStream[] streams;
    private final Duration kernelTime;
    private final StreamChoice choice;
    private final LatencyHistogram awaitLatency = new LatencyHistogram();
    private final WaitBy waitBy;

    /** How long a {@link DemoWorkload.WaitBy#SYNCHRONIZE} wait lasts at most before it fails. */
    static final Duration SYNCHRONIZE_LIMIT = Duration.ofSeconds(60);

    SimulatedWorkload(SimulatedDevice device, int streams, Duration kernelTime) {
        this(device, streams, kernelTime, WaitBy.AWAIT);
    }

    SimulatedWorkload(SimulatedDevice device, int streams, Duration kernelTime, WaitBy waitBy) {
        this.device = Objects.requireNonNull(device, "device");
        this.waitBy = Objects.requireNonNull(waitBy, "waitBy");
        this.kernelTime = Objects.requireNonNull(kernelTime, "kernelTime");
        if (streams < 1) {
            throw new IllegalArgumentException("streams must be >= 1, was " + streams);
        }
        this.choice = new StreamChoice(streams, waitBy);
        this.streams = new SimulatedStream[streams];
        for (int i = 0; i < streams; i++) {
            this.streams[i] = device.newStream();
        }
    }

    @Override
    public String description() {
        return device.name() + ", " + streams.length + " streams, "
                + kernelTime.toNanos() / 1000 + " us simulated kernel per step"
                + (waitBy == WaitBy.SYNCHRONIZE ? ", blocking wait (simulated synchronize)"
                        : waitBy == WaitBy.HOST_ONLY ? ", but no device work: scaled on the request's thread" : "");
    }

    @Override
    public GpuDevice device() {
        return device;
    }

    @Override
    public LatencyHistogram awaitLatency() {
        return awaitLatency;
    }

    @Override
    public void scale(float[] data, float factor) throws InterruptedException {
        if (data.length != VECTOR_LENGTH) {
            throw new IllegalArgumentException("vector length must be " + VECTOR_LENGTH + ", was " + data.length);
        }
        if (waitBy == WaitBy.HOST_ONLY) {
            DemoWorkload.scaleOnHost(data, factor);
            return;
        }
        SimulatedStream stream = streams[choice.next()];
        stream.launch(() -> DemoWorkload.scaleOnHost(data, factor)); // on the device's thread, in stream order
        if (!kernelTime.isZero()) {
            stream.launchKernel(kernelTime);
        }
        long start = System.nanoTime();
        if (waitBy == WaitBy.SYNCHRONIZE) {
            CountDownLatch done = new CountDownLatch(1);
            stream.launch(done::countDown);        // runs once the work above is done, in stream order
            if (!done.await(SYNCHRONIZE_LIMIT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("simulated synchronize: " + stream + " did not finish within "
                        + SYNCHRONIZE_LIMIT.toSeconds() + " s (a faulted stream discards its work)");
            }
        } else {
            stream.event().await();                // parks this (virtual) thread, nothing else
        }
        awaitLatency.record(System.nanoTime() - start);
    }

    @Override
    public void close() {
        for (SimulatedStream s : streams) {
            s.close();
        }
    }
}
