package io.cudaloom.internal;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuDevice;
import io.cudaloom.GpuKernel;
import io.cudaloom.HostMemory;
import io.cudaloom.LaunchLimits;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * For backends: the argument checks every backend makes before enqueueing work, so that bad input gets the
 * same clear exception on every backend.
 */
public final class WorkChecks {
    private WorkChecks() {}

    /**
     * Checks a launch's kernel, dimensions and arguments (count and types against the kernel's
     * {@link GpuKernel#params()}), and that memory is {@code device}'s. Allocates nothing unless it throws.
     */
    public static void launch(GpuDevice device, GpuKernel kernel, int gridX, int blockX, Object[] args) {
        Objects.requireNonNull(kernel, "kernel");
        Objects.requireNonNull(args, "args");
        if (gridX < 1 || blockX < 1) {
            throw new IllegalArgumentException("grid and block sizes must be >= 1, were " + gridX + " and " + blockX
                    + " (launching " + kernel.entry() + ")");
        }
        dimensions(device.launchLimits(), kernel.entry(), gridX, 1, 1, blockX, 1, 1, 0);
        List<GpuKernel.Param> params = kernel.params(); // immutable and random-access: get(i) allocates nothing
        if (args.length != params.size()) {
            throw wrongCount(kernel.entry(), params, args);
        }
        for (int i = 0; i < args.length; i++) {
            argument(device, kernel.entry(), i, params.get(i), args[i]);
        }
    }

    /**
     * Checks a launch's grid, block and dynamic shared memory against the device's {@code limits}
     * ({@link GpuDevice#launchLimits()}), each dimension at least 1. One message for each limit,
     * the same on every backend (it names the kernel, not the device). Allocates nothing unless it
     * throws.
     */
    public static void dimensions(LaunchLimits limits, String kernel, int gridX, int gridY, int gridZ, int blockX,
            int blockY, int blockZ, int sharedBytes) {
        if (gridX < 1 || gridY < 1 || gridZ < 1 || blockX < 1 || blockY < 1 || blockZ < 1) {
            throw new IllegalArgumentException("grid and block dimensions must be >= 1, were grid (" + gridX + ","
                    + gridY + "," + gridZ + ") block (" + blockX + "," + blockY + "," + blockZ + ") (launching " + kernel + ")");
        }
        long threads = (long) blockX * blockY * blockZ;
        if (threads > limits.maxThreadsPerBlock()) {
            throw new IllegalArgumentException("a block of " + threads + " threads (" + blockX + "," + blockY + ","
                    + blockZ + ") is over the device's limit of " + limits.maxThreadsPerBlock()
                    + " threads per block (launching " + kernel + ")");
        }
        over("block", 'x', blockX, limits.maxBlockDimX(), kernel);
        over("block", 'y', blockY, limits.maxBlockDimY(), kernel);
        over("block", 'z', blockZ, limits.maxBlockDimZ(), kernel);
        over("grid", 'x', gridX, limits.maxGridDimX(), kernel);
        over("grid", 'y', gridY, limits.maxGridDimY(), kernel);
        over("grid", 'z', gridZ, limits.maxGridDimZ(), kernel);
        if (sharedBytes < 0 || sharedBytes > limits.maxSharedMemoryPerBlock()) {
            throw new IllegalArgumentException(sharedBytes + " bytes of dynamic shared memory per block "
                    + (sharedBytes < 0 ? "is negative" : "is over the device's limit of " + limits.maxSharedMemoryPerBlock())
                    + " (launching " + kernel + ")");
        }
    }

    private static void over(String what, char axis, int value, int limit, String kernel) {
        if (value > limit) {
            throw new IllegalArgumentException("a " + what + " " + axis + " dimension of " + value
                    + " is over the device's limit of " + limit + " (launching " + kernel + ")");
        }
    }

    /**
     * For backends with kernels of their own: checks {@code args} against {@code params} (count and
     * types), and that memory is {@code device}'s. Allocates nothing unless it throws.
     */
    public static void arguments(GpuDevice device, String kernel, List<GpuKernel.Param> params, Object[] args) {
        Objects.requireNonNull(args, "args");
        if (args.length != params.size()) {
            throw wrongCount(kernel, params, args);
        }
        for (int i = 0; i < args.length; i++) {
            argument(device, kernel, i, params.get(i), args[i]);
        }
    }

    private static void argument(GpuDevice device, String kernel, int i, GpuKernel.Param param, @Nullable Object a) {
        if (!param.accepts(a)) {
            throw new IllegalArgumentException("kernel " + kernel + ": argument " + i + " must be " + param.takes()
                    + " (parameter " + param + "), was " + describe(a));
        }
        if (a instanceof DeviceMemory m && m.device() != device) { // the message built on failure only
            sameDevice(device, m, "argument " + i + " of kernel " + kernel);
        }
    }

    private static IllegalArgumentException wrongCount(String kernel, List<GpuKernel.Param> params, Object[] args) {
        return new IllegalArgumentException("kernel " + kernel + " takes " + params.size() + " argument(s) "
                + params + ", was given " + args.length);
    }

    private static String describe(@Nullable Object a) {
        if (a == null) {
            return "null";
        }
        if (a instanceof DeviceMemory) {
            return "DeviceMemory";
        }
        String type = a.getClass().getSimpleName();
        return (type.matches("[AEIOU].*") ? "an " : "a ") + type + " (" + a + ")";
    }

    /** Checks a busy kernel's duration: 0 to 1 hour. */
    public static long durationNanos(Duration duration) {
        Objects.requireNonNull(duration, "duration");
        if (duration.isNegative() || duration.compareTo(Duration.ofHours(1)) > 0) {
            throw new IllegalArgumentException("kernel duration must be between 0 and 1 hour, was " + duration);
        }
        return duration.toNanos();
    }

    /** Checks a copy's ranges and that both sides belong to {@code device}. */
    public static void copy(GpuDevice device, HostMemory host, long hostOffset, DeviceMemory memory, long memoryOffset,
            long bytes) {
        Objects.requireNonNull(host, "host memory");
        Objects.requireNonNull(memory, "device memory");
        sameDevice(device, memory, "the copy's device memory");
        if (host.device() != device) {
            throw new IllegalArgumentException("the copy's host memory was allocated by " + host.device().name()
                    + ", not by " + device.name() + " (allocate it with that device's allocateHost)");
        }
        range("host memory", host.bytes(), hostOffset, bytes);
        range("device memory", memory.bytes(), memoryOffset, bytes);
    }

    /** Checks a 32-bit fill of {@code count} words. */
    public static void memset32(GpuDevice device, DeviceMemory dst, long count) {
        Objects.requireNonNull(dst, "dst");
        sameDevice(device, dst, "memset's memory");
        if (count < 0 || count > dst.bytes() / 4) {
            throw new IllegalArgumentException("memset of " + count + " words does not fit " + dst.bytes() + " bytes");
        }
    }

    /** Checks an allocation size: positive, and at most {@code max}. */
    public static void allocation(String what, long bytes, long max) {
        if (bytes <= 0 || bytes > max) {
            throw new IllegalArgumentException(what + " size must be 1.." + max + " bytes, was " + bytes);
        }
    }

    private static void sameDevice(GpuDevice device, DeviceMemory m, String what) {
        if (m.device() != device) {
            throw new IllegalArgumentException(what + " belongs to " + m.device().name() + ", not to " + device.name());
        }
    }

    private static void range(String what, long size, long offset, long bytes) {
        if (offset < 0 || bytes < 0 || offset > size || bytes > size - offset) {
            throw new IllegalArgumentException("copy of " + bytes + " bytes at offset " + offset + " is out of the "
                    + size + " bytes of " + what);
        }
    }
}
