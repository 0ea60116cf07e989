package io.cudaloom;

/** Reactor internals that tests in other packages (the CUDA backend's, the reactor's parts) may look at. Not API. */
public final class TestAccess {
    private TestAccess() {}

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

    /**
     * Whether the scanner thread {@code t} is in its idle park: the untimed park, which its runner
     * boxes (a timed park of 1 s, so TIMED_WAITING) with the runner as the blocker; the scanner's
     * timed parks while work is armed have the reactor as theirs.
     */
    public static boolean scannerParkedIdle(Thread t) {
        Object blocker = java.util.concurrent.locks.LockSupport.getBlocker(t);
        return ReactorTestSupport.parked(t) && blocker != null
                && blocker.getClass().getName().equals("io.cudaloom.reactor.Scanner$Runner");
    }
}
