package io.cudaloom.cuda;

import static jcuda.driver.CUresult.*;

import io.cudaloom.GpuFaultException;
import io.cudaloom.spi.FaultSink;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;
import org.jspecify.annotations.Nullable;

/** Driver initialisation and the one place CUresult codes become exceptions. */
public final class Cuda {
    private static volatile @Nullable String unavailableReason;
    /** Why the driver library could not be loaded, from the first attempt (later ones say less). */
    private static volatile @Nullable String noDriverReason;
    private static volatile boolean initialised;

    /** What a user of the CUDA backend adds; README.md ("Use it") gives the coordinates. */
    static final String JCUDA_MISSING = "JCuda is not on the class path: the CUDA backend needs "
            + "org.jcuda:jcuda and org.jcuda:jcuda-natives (classifier of the platform, e.g. linux-x86_64)";

    private Cuda() {}

    /**
     * Whether JCuda's driver binding is on this library's class path, whether or not a driver and a
     * device are there ({@link #isAvailable()} says that). Loads nothing, initialises nothing.
     */
    public static boolean isInstalled() {
        ClassLoader loader = Cuda.class.getClassLoader();
        String resource = "jcuda/driver/JCudaDriver.class";
        return loader != null ? loader.getResource(resource) != null : ClassLoader.getSystemResource(resource) != null;
    }

    /**
     * Loads the JCuda driver library and calls {@code cuInit}; returns the number of CUDA devices.
     *
     * @throws CudaDriverException if the driver cannot be initialised (no device), or cannot be
     *     loaded at all: then its message is one line, {@code "no CUDA driver: ..."}, and its cause
     *     the {@link LinkageError} of the failed load (e.g. libcuda.so.1 missing)
     * @throws IllegalStateException if JCuda itself is not on the class path (the message names the
     *     artifacts to add; not a missing driver)
     */
    public static synchronized int init() {
        if (!initialised) {
            if (!isInstalled()) {
                throw new IllegalStateException(JCUDA_MISSING);
            }
            try {
                JCudaDriver.setExceptionsEnabled(false); // every result is checked here, by name
            } catch (LinkageError e) {
                // The first attempt fails loading the native library (UnsatisfiedLinkError), every
                // later one only with "Could not initialize class" (NoClassDefFoundError).
                throw noDriver(e);
            }
            check(JCudaDriver.cuInit(0), "cuInit");
            initialised = true;
        }
        int[] count = new int[1];
        check(JCudaDriver.cuDeviceGetCount(count), "cuDeviceGetCount");
        return count[0];
    }

    /**
     * True if a CUDA device can be used; else {@link #unavailableReason()} says why (JCuda missing,
     * no driver, no device). Never throws.
     */
    public static boolean isAvailable() {
        if (!isInstalled()) {
            unavailableReason = JCUDA_MISSING;
            return false;
        }
        try {
            if (init() > 0) {
                return true;
            }
            unavailableReason = "the CUDA driver reports no device";
        } catch (Throwable t) { // CudaDriverException "no CUDA driver: ..." when there is no driver library
            if (unavailableReason == null) { // the first failure says why; later ones only repeat it
                unavailableReason = t instanceof CudaDriverException ? t.getMessage() : t.toString();
            }
        }
        return false;
    }

    /** Why {@link #isAvailable()} returned false (null if it did not). */
    public static @Nullable String unavailableReason() {
        return unavailableReason;
    }

    private static CudaDriverException noDriver(LinkageError e) {
        String reason = noDriverReason;
        if (reason == null) {
            reason = oneLine(e);
            noDriverReason = reason;
        }
        return new CudaDriverException("no CUDA driver: " + reason, e);
    }

    /**
     * JCuda's load error is many lines (nested stack traces); keep its first line and, where the
     * text names it, the missing driver library (e.g. "libcuda.so.1: cannot open shared object file").
     */
    private static String oneLine(Throwable e) {
        String head = null;
        String library = null;
        for (Throwable t = e; t != null && library == null; t = t.getCause()) {
            String message = t.getMessage();
            if (message == null) {
                continue;
            }
            for (String line : message.split("\\R")) {
                if (head == null && !line.isBlank()) {
                    head = line.strip();
                }
                int at = Math.max(line.indexOf("libcuda"), line.indexOf("nvcuda"));
                if (at >= 0) {
                    library = line.substring(at).strip();
                    break;
                }
            }
        }
        if (head == null) {
            head = e.getClass().getName();
        }
        return library == null || head.contains(library) ? head : head + " (" + library + ")";
    }

    /**
     * Throws unless {@code result} is CUDA_SUCCESS; sticky device faults become GpuFaultException.
     *
     * <p>The one {@code GpuFaultException} the library builds outside the fault owner
     * ({@code io.cudaloom.reactor.DeviceFaults}): a driver call not on a stream (the device's allocations,
     * module loads, {@code cuCtxSynchronize}, {@code cuStreamCreate}; calls made before the reactor
     * starts) has no stream to record the fault on. It has the owner's message shape
     * ({@link FaultSink#message}): {@code "<call>: failed with a sticky error: ... (<error>)"}. A
     * call on a stream goes through the owner instead ({@code CudaStream.check}), which records
     * the fault.
     */
    static void check(int result, String call) {
        if (result == CUDA_SUCCESS) {
            return;
        }
        if (isStickyFault(result)) {
            throw new GpuFaultException(FaultSink.message(call, "failed with " + STICKY, errorName(result)));
        }
        throw new CudaDriverException(call, result);
    }

    /** What a sticky error means, in a {@code GpuFaultException}'s message. */
    static final String STICKY = "a sticky error: the context is unusable until the device is closed";

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

    /** E.g. "CUDA_ERROR_ILLEGAL_ADDRESS (700)". */
    static String errorName(int result) {
        return CUresult.stringFor(result) + " (" + result + ")";
    }
}
