/**
 * Kotlin coroutine support, written in Kotlin: {@code GpuEvent.awaitSuspending()} and
 * {@code GpuStream.awaitSuspending()} suspend a coroutine until GPU work is done, blocking no
 * thread (compiled into the class {@code GpuEventCoroutines}; see its KDoc in the sources jar).
 * Built on {@link io.cudaloom.GpuEvent#subscribe}; cancelling the coroutine withdraws the
 * registration.
 *
 * <p>Needs {@code kotlin-stdlib} and {@code kotlinx-coroutines-core}, optional dependencies of
 * cuda-loom-core: Kotlin users have them already, Java users never load this package.
 *
 * <p>Null-marked (JSpecify): every type here is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package io.cudaloom.kotlin;

import org.jspecify.annotations.NullMarked;
