package io.cudaloom.sim;

import io.cudaloom.GpuDevice;
import io.cudaloom.GpuDeviceProvider;
import io.cudaloom.ReactorConfig;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** The simulated device's provider: always available, the lowest priority. */
public final class SimulatedDeviceProvider implements GpuDeviceProvider {
    /** Made by {@link java.util.ServiceLoader} ({@code GpuDevice.open()}). */
    public SimulatedDeviceProvider() {}

    @Override
    public String name() {
        return "sim";
    }

    @Override
    public List<String> aliases() {
        return List.of("simulated");
    }

    @Override
    public int priority() {
        return 0;
    }

    @Override
    public boolean isAvailable() {
        return true;
    }

    @Override
    public @Nullable String unavailableReason() {
        return null;
    }

    @Override
    public GpuDevice open(ReactorConfig config) {
        return SimulatedDevice.create(config);
    }
}
