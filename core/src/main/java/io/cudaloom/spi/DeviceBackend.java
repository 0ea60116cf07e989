package io.cudaloom.spi;

/** A backend's side of a device: what the reactor asks of it when it starts. */
@FunctionalInterface
public interface DeviceBackend {
    /** Zeroed flag memory for {@code count} slots (pinned and device-mapped on a real GPU). */
    FlagMemory allocateFlags(int count);
}
