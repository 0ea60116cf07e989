/**
 * What the backends share that is no API: the argument checks every backend makes before it
 * enqueues work ({@link io.cudaloom.internal.WorkChecks}), so that bad input gets the same
 * exception on every backend; how the simulated device runs a kernel body
 * ({@link io.cudaloom.internal.KernelRuns}); the service interface by which {@code GpuDevice.open()}
 * finds the backends ({@link io.cudaloom.internal.GpuDeviceProvider}); and the API's hooks for its
 * backends ({@link io.cudaloom.internal.BackendAccess}), so that the API classes carry no member for
 * them. Not exported by the module {@code io.cudaloom}; on the class path its classes are public
 * but no API. It may name the API package and the SPI, never a backend.
 *
 * <p>Null-marked (JSpecify): every type here is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package io.cudaloom.internal;

import org.jspecify.annotations.NullMarked;
