/**
 * Awaiting GPU work from virtual threads: {@link io.cudaloom.GpuDevice}, {@link io.cudaloom.GpuStream},
 * {@link io.cudaloom.GpuEvent} and the {@link io.cudaloom.CompletionReactor} that serves them.
 *
 * <p>Null-marked (JSpecify): every type here is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package io.cudaloom;

import org.jspecify.annotations.NullMarked;
