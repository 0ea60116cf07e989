package io.cudaloom.cuda;

import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;
import org.jspecify.annotations.Nullable;

/**
 * The driver calls {@link CudaStream} makes for every unit of work, in one place, so that they can
 * go through another binding than JCuda: {@code cuLaunchKernel}, {@code cuMemcpyHtoDAsync},
 * {@code cuMemcpyDtoHAsync} and {@code cuStreamWriteValue32}. Each returns the driver's
 * {@code CUresult} as JCuda does, so the callers' error handling is the same for both bindings.
 *
 * <p>Two versions of this class (a multi-release JAR): this one, for Java 21, calls JCuda; the one
 * in {@code src/main/java22} (META-INF/versions/22 of core's JAR, loaded on Java 22 and later)
 * calls libcuda through {@code java.lang.foreign} downcalls unless the system property
 * {@value DriverCalls#PROPERTY} is {@code jcuda} or they cannot be made there, and JCuda otherwise. Both have the same members.
 * Everything else (and every call users make on the raw handles) stays on JCuda. docs/TUNING.md,
 * "Driver calls: JCuda or FFM downcalls".
 */
final class HotCalls {
    private static final String BINDING;

    static {
        // This version always says why not (unavailable), so the binding is jcuda whatever was asked.
        BINDING = DriverCalls.Decision.make(HotCalls::unavailable)
                .binding(System.getLogger(HotCalls.class.getName()), () -> "");
    }

    private HotCalls() {}

    /** Why this version cannot make the downcalls. */
    private static String unavailable() {
        int feature = Runtime.version().feature();
        return feature < 22 ? "Java " + feature + " has no java.lang.foreign (the downcalls need Java 22 or later)"
                : "the Java 21 version of " + HotCalls.class.getName() + " is loaded on Java " + feature
                        + ": core's classes are not read from its multi-release JAR (a directory of classes has"
                        + " no META-INF/versions overlay)";
    }

    /** Which version of this class is loaded: 21 (this one) or 22 (the overlay). */
    static int implementation() {
        return 21;
    }

    /** The binding of the hot calls: {@code ffm}, or {@code jcuda (why)}. */
    static String binding() {
        return BINDING;
    }

    /** The native address a JCuda handle holds, for the downcalls; 0 where JCuda makes the calls (here always). */
    static long handleAddress(NativePointerObject handle) {
        return 0;
    }

    /**
     * A launch's arguments as the binding takes them, packed at the call (the checks of
     * {@link KernelArgs#pack}): here JCuda's pointer-to-pointers. Null where the downcall packs them
     * itself when it launches (the overlay with {@code ffm}).
     *
     * @throws IllegalArgumentException as {@link KernelArgs#pack}
     */
    static @Nullable Pointer params(String kernel, Object[] args) {
        return KernelArgs.pack(kernel, args);
    }

    /** {@code cuLaunchKernel} on the stream, with {@code params} from {@link #params} for {@code args}. */
    static int launchKernel(CudaKernel kernel, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
            int sharedBytes, StreamHandle stream, @Nullable Pointer params, Object[] args) {
        return JCudaDriver.cuLaunchKernel(kernel.function(), gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes,
                stream.raw(), params, null);
    }

    /** {@code cuMemcpyHtoDAsync}: {@code bytes} from {@code src + srcOffset} to {@code dst + dstOffset}. */
    static int memcpyHtoDAsync(DeviceBuffer dst, long dstOffset, PinnedBuffer src, long srcOffset, long bytes,
            StreamHandle stream) {
        return JCudaDriver.cuMemcpyHtoDAsync(dst.rawPointer().withByteOffset(dstOffset),
                src.rawPointer().withByteOffset(srcOffset), bytes, stream.raw());
    }

    /** {@code cuMemcpyDtoHAsync}: {@code bytes} from {@code src + srcOffset} to {@code dst + dstOffset}. */
    static int memcpyDtoHAsync(PinnedBuffer dst, long dstOffset, DeviceBuffer src, long srcOffset, long bytes,
            StreamHandle stream) {
        return JCudaDriver.cuMemcpyDtoHAsync(dst.rawPointer().withByteOffset(dstOffset),
                src.rawPointer().withByteOffset(srcOffset), bytes, stream.raw());
    }

    /** {@code cuStreamWriteValue32}: writes {@code value} to {@code address} once the stream's earlier work is done. */
    static int streamWriteValue32(StreamHandle stream, CUdeviceptr address, int value, int flags) {
        return JCudaDriver.cuStreamWriteValue32(stream.raw(), address, value, flags);
    }

    /**
     * For the tests: the kernel-parameter block the downcall would pass for {@code args}, read back:
     * for each argument the offset of its value from the block's start (read from the block's
     * pointer array), then each value's bits as a long (an int or a float zero-extended), or an
     * empty array for no argument. Null here: this version packs no block.
     */
    static long @Nullable [] paramsLayout(Object... args) {
        return null;
    }
}
