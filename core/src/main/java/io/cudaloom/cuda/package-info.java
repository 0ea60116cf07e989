/**
 * The CUDA backend, through the driver API (JCuda).
 *
 * <p>Null-marked (JSpecify): every type here is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package io.cudaloom.cuda;

import org.jspecify.annotations.NullMarked;
