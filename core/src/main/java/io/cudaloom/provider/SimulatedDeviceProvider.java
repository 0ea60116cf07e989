package io.cudaloom.provider;

import io.cudaloom.GpuDevice;
import io.cudaloom.ReactorConfig;
import io.cudaloom.internal.GpuDeviceProvider;
import io.cudaloom.sim.SimulatedDevice;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The simulated device's provider: always available, the lowest priority. Public for
 * {@link java.util.ServiceLoader} only; its package is not exported.
 */
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
