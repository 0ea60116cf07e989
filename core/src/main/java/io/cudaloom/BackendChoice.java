package io.cudaloom;

import io.cudaloom.internal.GpuDeviceProvider;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Which backend {@link GpuDevice#open(String, ReactorConfig)} opens: the device backends installed
 * ({@link GpuDeviceProvider#installed()}, found through the service loader), asked in priority
 * order in {@code auto} mode, or the one named. Its own class, apart from {@link GpuDevice}, so
 * that the provider interface (which names {@code GpuDevice}) is imported by no file it imports
 * back: the API reaches the unexported {@code internal} package from here and from
 * {@link BackendHooks} only.
 */
final class BackendChoice {
    /** Named after {@link GpuDevice}, as its users know it: the fallbacks are logged there. */
    private static final System.Logger LOG = System.getLogger(GpuDevice.class.getName());

    private BackendChoice() {}

    /** {@link GpuDevice#open(String, ReactorConfig)}, which documents it. */
    static GpuDevice open(String backend, ReactorConfig config) {
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(config, "config");
        String choice = backend.trim().toLowerCase(Locale.ROOT);
        List<GpuDeviceProvider> providers = GpuDeviceProvider.installed();
        if (choice.equals("auto") || choice.isEmpty()) {
            for (GpuDeviceProvider p : providers) {
                if (isAvailable(p)) {
                    return p.open(config);
                }
            }
            throw new IllegalStateException("no device backend is available: " + providers.stream()
                    .map(p -> p.name() + " (" + p.unavailableReason() + ")").toList());
        }
        for (GpuDeviceProvider p : providers) {
            if (p.name().equals(choice) || p.aliases().contains(choice)) {
                return p.open(config);
            }
        }
        throw new IllegalArgumentException(GpuDevice.BACKEND_PROPERTY + " must be auto or one of "
                + providers.stream().map(GpuDeviceProvider::name).toList() + ", was '" + choice + "'");
    }

    /**
     * {@link GpuDeviceProvider#isAvailable()}, which should never throw; one that does, e.g. with a
     * {@link LinkageError} because a library it needs is missing, counts as unavailable.
     */
    private static boolean isAvailable(GpuDeviceProvider p) {
        String reason;
        Throwable failure = null;
        try {
            if (p.isAvailable()) {
                return true;
            }
            reason = String.valueOf(p.unavailableReason());
        } catch (RuntimeException | LinkageError e) {
            failure = e;
            reason = "its availability check failed: " + e;
        }
        // Its libraries are there (JCuda on the class path): the user meant to use it, so say why
        // not, in one line (the cause, if any, goes with the record, not in the message).
        boolean installed;
        try {
            installed = p.isInstalled();
        } catch (RuntimeException | LinkageError e) {
            installed = false;
        }
        System.Logger.Level level = installed ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG;
        String message = "cuda-loom: device backend " + p.name() + " is unusable, " + GpuDevice.BACKEND_PROPERTY
                + "=auto falls back to the next one: " + reason.lines().findFirst().orElse("");
        if (failure != null) {
            LOG.log(level, message, failure);
        } else {
            LOG.log(level, message);
        }
        return false;
    }
}
