package io.cudaloom.cuda;

/** A CUDA driver call failed (other than a device fault, which is a GpuFaultException). */
public class CudaDriverException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int result;

    public CudaDriverException(String call, int result) {
        super(call + " failed: " + Cuda.errorName(result));
        this.result = result;
    }

    /** The CUresult code. */
    public int result() {
        return result;
    }
}
