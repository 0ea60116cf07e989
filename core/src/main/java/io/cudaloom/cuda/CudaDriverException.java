package io.cudaloom.cuda;

/** A CUDA driver call failed (other than a device fault, which is a GpuFaultException). */
public class CudaDriverException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    /** {@link #result()} when no driver call could be made: the driver library did not load. */
    public static final int NO_DRIVER = -1;
    private final int result;

    public CudaDriverException(String call, int result) {
        super(call + " failed: " + Cuda.errorName(result));
        this.result = result;
    }

    /** The driver could not be loaded at all ({@link #result()} is {@link #NO_DRIVER}). */
    CudaDriverException(String message, Throwable cause) {
        super(message, cause);
        this.result = NO_DRIVER;
    }

    /** The CUresult code, or {@link #NO_DRIVER}. */
    public int result() {
        return result;
    }
}
