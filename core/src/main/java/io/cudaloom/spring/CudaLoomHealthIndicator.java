package io.cudaloom.spring;

import io.cudaloom.GpuDevice;
import java.util.Objects;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

/**
 * A {@link GpuDevice}'s health for Spring Boot Actuator: {@code UP} while the device is open and
 * none of its streams has faulted; {@code DOWN} with the fault ({@link GpuDevice#fault()}, e.g.
 * {@code "CUDA_ERROR_ILLEGAL_ADDRESS (700) on cuda-stream@1b6d3586"}) once one has, or once the
 * device is closed. A device fault is sticky (on a GPU the context is unusable until the device is
 * closed), so the component stays {@code DOWN}: the instance wants replacing. Details: {@code device}
 * (its name), {@code simulated}, and {@code fault} or {@code closed} when DOWN.
 *
 * <p>Reads two fields of the device (its fault and its reactor's state): no driver call, no lock,
 * cheap enough for a liveness probe.
 */
public class CudaLoomHealthIndicator implements HealthIndicator {
    private final GpuDevice device;

    /** The health of {@code device}. */
    public CudaLoomHealthIndicator(GpuDevice device) {
        this.device = Objects.requireNonNull(device, "device");
    }

    @Override
    public Health health() {
        String fault = device.fault();
        Health.Builder health;
        if (fault != null) {
            health = Health.down().withDetail("fault", fault);
        } else if (device.reactor().isClosed()) {
            health = Health.down().withDetail("closed", true);
        } else {
            health = Health.up();
        }
        return health.withDetail("device", device.name()).withDetail("simulated", device.isSimulated()).build();
    }
}
