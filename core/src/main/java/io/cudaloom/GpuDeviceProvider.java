package io.cudaloom;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A device backend, found by {@link GpuDevice#open()} through {@link java.util.ServiceLoader}
 * (register the implementation in {@code META-INF/services/io.cudaloom.GpuDeviceProvider}), in
 * the manner of the JDK's {@code PollerProvider}. The API names the backends nowhere else, so a
 * backend whose libraries are absent (JCuda, for instance) is simply unavailable, and no package of
 * the API depends on a backend package.
 *
 * <p>The two backends shipped: {@code cuda} (priority 100, available when the CUDA driver loads
 * and reports a device) and {@code sim}, the simulated device (priority 0, always available).
 */
public interface GpuDeviceProvider {
    /** The name {@value GpuDevice#BACKEND_PROPERTY} selects it by, e.g. {@code cuda}. */
    String name();

    /** Other names accepted for it, e.g. {@code gpu}. */
    default List<String> aliases() {
        return List.of();
    }

    /** {@code auto} picks the available provider with the highest priority. */
    int priority();

    /**
     * Whether this backend's libraries are on the class path (for {@code cuda}: JCuda), whether or
     * not it can open a device. When they are and it is not {@link #isAvailable() available},
     * {@link GpuDevice#open()} in {@code auto} mode logs a WARNING saying why before it falls back:
     * whoever put the libraries there meant to use the backend. Never throws; true by default.
     */
    default boolean isInstalled() {
        return true;
    }

    /** Whether {@link #open} can be expected to succeed now; never throws. */
    boolean isAvailable();

    /** Why {@link #isAvailable()} is false (null when it is true or the reason is unknown). */
    @Nullable String unavailableReason();

    /** Opens this backend's default device with its reactor started. */
    GpuDevice open(ReactorConfig config);
}
