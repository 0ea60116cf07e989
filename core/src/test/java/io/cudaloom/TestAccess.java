package io.cudaloom;

/** Reactor internals that tests in other packages (the CUDA backend's, the reactor's parts) may look at. Not API. */
public final class TestAccess {
    private TestAccess() {}

    /** How the reactor makes its {@link AwaitLatency} snapshots (the facade's own factory). */
    public static io.cudaloom.reactor.LatencyRecorder.Snapshots awaitLatencies() {
        return AwaitLatency::new;
    }

    /** Parked in a park whose blocker is {@code blocker}. */
    public static boolean parkedOn(Thread t, Object blocker) {
        return ReactorTestSupport.parkedOn(t, blocker);
    }

    /** The backend's own counters (what it still holds, calls it should never have seen). */
    public static io.cudaloom.spi.DeviceProbes probes(GpuDevice device) {
        return io.cudaloom.internal.BackendAccess.hooks().probes(device);
    }

    public static Thread scannerThread(GpuDevice device) {
        return device.reactor().scannerThread();
    }
}
