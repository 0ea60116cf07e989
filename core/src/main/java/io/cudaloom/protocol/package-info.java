/**
 * The lock-free completion-slot protocol of the reactor ({@link io.cudaloom.protocol.SlotTable}),
 * with no CUDA in it.
 *
 * <p>Null-marked (JSpecify): every type here is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package io.cudaloom.protocol;

import org.jspecify.annotations.NullMarked;
