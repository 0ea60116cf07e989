package io.cudaloom;

/**
 * The GPU work an await was waiting for can never complete: the stream (for CUDA: the context)
 * hit a device fault, e.g. a kernel's illegal memory access. The message names the error, in one
 * shape, {@code "<stream> of <device>: <what happened> (<error>)"}, e.g.
 * {@code "cuda-stream@1b6d3586 of NVIDIA H200 (cuda:0): its work can never complete
 * (CUDA_ERROR_ILLEGAL_ADDRESS (700))"} (a CUDA driver call on no stream names the call instead:
 * {@code "cuMemAlloc(4096): failed with a sticky error: ... (CUDA_ERROR_ILLEGAL_ADDRESS (700))"});
 * the cause is the Java exception behind the fault, if there is one (a simulated kernel's).
 */
public class GpuFaultException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public GpuFaultException(String message) {
        super(message);
    }

    public GpuFaultException(String message, Throwable cause) {
        super(message, cause);
    }
}
