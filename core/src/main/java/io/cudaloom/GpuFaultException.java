package io.cudaloom;

/**
 * The GPU work an await was waiting for can never complete: the stream (for CUDA: the context)
 * hit a device fault, e.g. a kernel's illegal memory access. The message names the error.
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
