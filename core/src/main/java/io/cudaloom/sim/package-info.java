/**
 * The simulated device: the whole protocol end to end on the CPU, with injectable faults.
 *
 * <p>Null-marked (JSpecify): every type here is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package io.cudaloom.sim;

import org.jspecify.annotations.NullMarked;
