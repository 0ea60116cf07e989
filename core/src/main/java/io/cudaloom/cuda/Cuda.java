package io.cudaloom.cuda;

import static jcuda.driver.CUresult.*;

import io.cudaloom.GpuFaultException;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;
import org.jspecify.annotations.Nullable;

/** Driver initialisation and the one place CUresult codes become exceptions. */
public final class Cuda {
    private static volatile @Nullable String unavailableReason;
    private static volatile boolean initialised;

    private Cuda() {}

    /**
     * Loads the JCuda driver library and calls {@code cuInit}; returns the number of CUDA devices.
     *
     * @throws CudaDriverException if the driver cannot be initialised (no driver, no device)
     * @throws UnsatisfiedLinkError if the JCuda native library cannot be loaded
     */
    public static synchronized int init() {
        if (!initialised) {
            JCudaDriver.setExceptionsEnabled(false); // every result is checked here, by name
            check(JCudaDriver.cuInit(0), "cuInit");
            initialised = true;
        }
        int[] count = new int[1];
        check(JCudaDriver.cuDeviceGetCount(count), "cuDeviceGetCount");
        return count[0];
    }

    /** True if a CUDA device can be used; else {@link #unavailableReason()} says why. */
    public static boolean isAvailable() {
        try {
            if (init() > 0) {
                return true;
            }
            unavailableReason = "the CUDA driver reports no device";
        } catch (Throwable t) { // UnsatisfiedLinkError included: no driver library on this machine
            if (unavailableReason == null) { // the first failure says why; later ones only repeat it
                unavailableReason = t.toString();
            }
        }
        return false;
    }

    /** Why {@link #isAvailable()} returned false (null if it did not). */
    public static @Nullable String unavailableReason() {
        return unavailableReason;
    }

    /** Throws unless {@code result} is CUDA_SUCCESS; sticky device faults become GpuFaultException. */
    static void check(int result, String call) {
        if (result == CUDA_SUCCESS) {
            return;
        }
        if (isStickyFault(result)) {
            throw new GpuFaultException(call + " failed: " + errorName(result)
                    + " (a sticky error: the context is unusable until the device is closed)");
        }
        throw new CudaDriverException(call, result);
    }

    /** Errors after which the context is corrupt and must be torn down. */
    static boolean isStickyFault(int result) {
        return switch (result) {
            case CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_LAUNCH_FAILED,
                    CUDA_ERROR_HARDWARE_STACK_ERROR, CUDA_ERROR_ILLEGAL_INSTRUCTION,
                    CUDA_ERROR_INVALID_ADDRESS_SPACE, CUDA_ERROR_INVALID_PC, CUDA_ERROR_LAUNCH_TIMEOUT,
                    CUDA_ERROR_ASSERT, CUDA_ERROR_CONTEXT_IS_DESTROYED, CUDA_ERROR_ECC_UNCORRECTABLE -> true;
            default -> false;
        };
    }

    /** The numeric address of a device pointer (JCuda exposes it only through toString). */
    static long address(jcuda.driver.CUdeviceptr p) {
        String s = p.toString(); // "CUdeviceptr[nativePointer=0x7f...,byteOffset=0]"
        int i = s.indexOf("0x");
        if (i < 0) {
            throw new IllegalStateException("cannot read the address of " + s);
        }
        int end = i + 2;
        while (end < s.length() && Character.digit(s.charAt(end), 16) >= 0) {
            end++;
        }
        long base = Long.parseUnsignedLong(s.substring(i + 2, end), 16);
        int off = s.indexOf("byteOffset=");
        if (off >= 0) {
            int e = off + 11;
            while (e < s.length() && Character.isDigit(s.charAt(e))) {
                e++;
            }
            base += Long.parseLong(s.substring(off + 11, e));
        }
        return base;
    }

    /** E.g. "CUDA_ERROR_ILLEGAL_ADDRESS (700)". */
    static String errorName(int result) {
        return CUresult.stringFor(result) + " (" + result + ")";
    }
}
