/**
 * The backends' {@link io.cudaloom.internal.GpuDeviceProvider}s, which {@code GpuDevice.open()}
 * finds through {@link java.util.ServiceLoader} (the module's {@code provides}, and
 * {@code META-INF/services} on the class path). Not exported: a provider class must be public for
 * the service loader, and nobody but the loader calls it. The only package that names both
 * backends; nothing of the library names it.
 *
 * <p>Null-marked (JSpecify): every type here is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package io.cudaloom.provider;

import org.jspecify.annotations.NullMarked;
