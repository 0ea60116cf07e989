package io.cudaloom.internal;

import io.cudaloom.GpuDevice;
import io.cudaloom.ReactorConfig;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import org.jspecify.annotations.Nullable;

/**
 * A device backend, found by {@link GpuDevice#open()} through {@link ServiceLoader} (the module's
 * {@code provides}, and {@code META-INF/services/io.cudaloom.internal.GpuDeviceProvider} on the
 * class path), in the manner of the JDK's {@code PollerProvider}. The API names the backends
 * nowhere else, so a backend whose libraries are absent (JCuda, for instance) is simply
 * unavailable, and no package of the API depends on a backend package.
 *
 * <p>Not API: a backend is one of the library's own (only they may subclass {@code GpuDevice}), so
 * nobody else has a use for this interface; it lives in this unexported package, and the two
 * providers in the unexported {@code io.cudaloom.provider}. The two shipped: {@code cuda}
 * (priority 100, available when the CUDA driver loads and reports a device) and {@code sim}, the
 * simulated device (priority 0, always available).
 */
public interface GpuDeviceProvider {
    /** At most this many failed providers in a row are skipped before {@link #installed()} gives up. */
    int MAX_PROVIDER_FAILURES = 16;

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

    /**
     * The backends installed, the highest priority first. A provider that cannot be loaded or
     * instantiated (a {@link ServiceConfigurationError}, or a {@link LinkageError} when a library
     * it needs is absent) is left out and logged at DEBUG; the others are still returned.
     */
    static List<GpuDeviceProvider> installed() {
        System.Logger log = System.getLogger(GpuDevice.class.getName());
        List<GpuDeviceProvider> found = new ArrayList<>();
        Iterator<GpuDeviceProvider> it =
                ServiceLoader.load(GpuDeviceProvider.class, GpuDeviceProvider.class.getClassLoader()).iterator();
        int failures = 0;
        while (true) {
            try {
                if (!it.hasNext()) {
                    break;
                }
                found.add(it.next());
                failures = 0;
            } catch (ServiceConfigurationError | LinkageError e) {
                // ServiceLoader goes on with the next provider after an error, "best effort": bound
                // the retries in case it keeps failing on the same one.
                log.log(System.Logger.Level.DEBUG, "a device backend could not be loaded; skipped", e);
                if (++failures >= MAX_PROVIDER_FAILURES) {
                    break;
                }
            }
        }
        found.sort(Comparator.comparingInt(GpuDeviceProvider::priority).reversed());
        return List.copyOf(found);
    }
}
