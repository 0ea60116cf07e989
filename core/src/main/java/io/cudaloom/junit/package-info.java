/**
 * JUnit Jupiter support for GPU integration tests: {@link io.cudaloom.junit.GpuTest} skips a test
 * where no CUDA device is present (or runs it on the simulated device, where the test allows it),
 * injects a {@link io.cudaloom.GpuDevice} and {@link io.cudaloom.GpuStream}s, and checks after each
 * test that nothing of the device was left behind ({@link io.cudaloom.junit.GpuExtension}).
 *
 * <p>This package needs {@code org.junit.jupiter:junit-jupiter-api} (5.13 or newer) on the class
 * path, which cuda-loom declares as an optional dependency: a project that uses it has JUnit
 * already. No other package of cuda-loom refers to JUnit.
 *
 * <p>Null-marked (JSpecify): every type here is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package io.cudaloom.junit;

import org.jspecify.annotations.NullMarked;
