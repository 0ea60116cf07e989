/**
 * What the backends share that is no API: the argument checks every backend makes before it
 * enqueues work ({@link io.cudaloom.internal.WorkChecks}), so that bad input gets the same
 * exception on every backend. Not exported by the module {@code io.cudaloom}; on the class path
 * its classes are public but no API. It may name the API package, never a backend.
 *
 * <p>Null-marked (JSpecify): every type here is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package io.cudaloom.internal;

import org.jspecify.annotations.NullMarked;
