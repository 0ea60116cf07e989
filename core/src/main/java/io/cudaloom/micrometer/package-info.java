/**
 * Micrometer support: {@link io.cudaloom.micrometer.CudaLoomMetrics}, a {@code MeterBinder} for a
 * {@link io.cudaloom.GpuDevice}. Needs {@code io.micrometer:micrometer-core} (an optional dependency
 * of core); no other package of the library names this one or Micrometer, so nothing here is
 * loaded unless the application calls it.
 *
 * <p>Null-marked (JSpecify): every type here is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package io.cudaloom.micrometer;

import org.jspecify.annotations.NullMarked;
