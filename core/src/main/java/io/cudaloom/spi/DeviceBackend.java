package io.cudaloom.spi;

/** A backend's side of a device: what the reactor asks of it when it starts. */
@FunctionalInterface
public interface DeviceBackend {
    /** Zeroed flag memory for {@code count} slots (pinned and device-mapped on a real GPU). */
    FlagMemory allocateFlags(int count);

    /**
     * What to undo if the device becomes unreachable without being closed (e.g. stop the
     * backend's own threads). The action must not reference the device, or the device would
     * never become unreachable; it runs once, on a cleaner thread.
     */
    default Runnable cleanupIfUnclosed() {
        return () -> { };
    }

    /** The backend's own counters, for the library's tests ({@link DeviceProbes#NONE} by default). */
    default DeviceProbes probes() {
        return DeviceProbes.NONE;
    }
}
