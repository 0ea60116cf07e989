package io.cudaloom.demo;

import io.cudaloom.GpuDevice;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * The servlet benchmark's HTTP floor at the {@code await()} server's rate ({@code GpuBench servlet},
 * server {@code held}): no device work, as the floor ({@link DemoWorkload.WaitBy#HOST_ONLY}: the
 * vector scaled on the request's thread), then the request's thread sleeps for {@link #hold()}
 * ({@code Thread.sleep}: a virtual thread parks, and the JDK's timer unparks it). With 10,000
 * connections each waiting for its answer, a request held for long enough (the servlet benchmark
 * calibrates the hold, {@code ServletBench.heldLevels}) makes the HTTP server answer at about the
 * {@code await()} server's rate, with as many requests parked at once: the floor for what HTTP and
 * one park and unpark per request cost at that rate, which the plain floor (at its own, higher
 * rate) is not.
 */
final class HeldFloorWorkload implements DemoWorkload {
    private final DemoWorkload floor;
    private volatile long holdNanos;

    /** Holds each request of {@code floor} (a {@link DemoWorkload.WaitBy#HOST_ONLY} workload) for {@code hold}. */
    HeldFloorWorkload(DemoWorkload floor, Duration hold) {
        this.floor = Objects.requireNonNull(floor, "floor");
        hold(hold);
    }

    /** How long each request is held from now on (0: not at all). */
    void hold(Duration hold) {
        if (hold.isNegative()) {
            throw new IllegalArgumentException("hold must be >= 0, was " + hold);
        }
        this.holdNanos = hold.toNanos();
    }

    Duration hold() {
        return Duration.ofNanos(holdNanos);
    }

    @Override
    public String description() {
        return floor.description() + String.format(Locale.ROOT, ", then held for %.2f ms (Thread.sleep)", holdNanos / 1e6);
    }

    @Override
    public GpuDevice device() {
        return floor.device();
    }

    @Override
    public void scale(float[] data, float factor) throws InterruptedException {
        floor.scale(data, factor);
        long hold = holdNanos;
        if (hold > 0) {
            Thread.sleep(Duration.ofNanos(hold));
        }
    }

    @Override
    public LatencyHistogram awaitLatency() {
        return floor.awaitLatency();
    }

    @Override
    public void close() {
        floor.close();
    }
}
