/**
 * The device backend SPI: what a backend implements so that the reactor can wait on its streams
 * ({@link io.cudaloom.spi.StreamBackend}, {@link io.cudaloom.spi.DeviceBackend}) and the types they
 * exchange. A backend is found through {@code io.cudaloom.internal.GpuDeviceProvider}. This package depends
 * on no other package of the project but the protocol core; callers of the API never need it.
 *
 * <p>Null-marked (JSpecify): every type here is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package io.cudaloom.spi;

import org.jspecify.annotations.NullMarked;
