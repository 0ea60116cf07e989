package io.cudaloom.spi;

import org.jspecify.annotations.Nullable;

/**
 * Where a backend reports that its stream faulted, and where it gets the exception for a call made
 * after that: the device's fault owner ({@code io.cudaloom.reactor.DeviceFaults}) keeps every stream's fault
 * and the device's first one, so a backend keeps no copy of its own. One per stream; a backend gets
 * its stream's from {@code BackendAccess.Hooks.faultSink}. Any thread may call it (the simulated stream's
 * worker, a thread whose driver call failed, the reactor's scanner); it never blocks.
 */
public interface FaultSink {
    /**
     * The stream faulted: its pending work will never complete (a sticky CUDA error, a simulated
     * kernel that threw). A backend reports it where it sees it, and before it answers
     * {@link StreamState#FAULTED} to {@link StreamBackend#queryState()}. Only the first report on a
     * stream is kept, which is also the device's first fault if no other stream of the device
     * faulted before; later reports are dropped. The stream's admission gate opens: submitters
     * parked for room are let through to find the fault.
     *
     * @param error what happened, e.g. {@code "CUDA_ERROR_ILLEGAL_ADDRESS (700)"}: every exception
     *     about the stream's fault names it from now on
     * @param cause the Java exception behind it, if there is one (a simulated kernel's): the cause
     *     of every such exception
     * @return whether this report is the one kept
     */
    boolean streamFaulted(String error, @Nullable Throwable cause);

    /** Whether a fault of the stream was reported: volatile reads, no driver call (cheap enough for every call). */
    boolean hasFaulted();

    /**
     * The exception for {@code what} on the faulted stream, e.g. {@code "work refused, the stream
     * faulted earlier"}: an {@code io.cudaloom.GpuFaultException} whose message is
     * {@link #message message}{@code ("<stream> of <device>", what, <the stream's fault>)}, with the
     * fault's cause.
     *
     * @throws IllegalStateException if no fault of the stream was reported
     */
    RuntimeException failure(String what);

    /**
     * The one shape of every {@code GpuFaultException} message: {@code "<subject>: <what happened>
     * (<error>)"}, e.g. {@code "sim-stream-1 of simulated device 3: its work can never complete
     * (CUDA_ERROR_ILLEGAL_ADDRESS (simulated))"}. The fault owner builds every one with it; so does
     * the CUDA backend's translation of a driver call that failed outside any stream.
     */
    static String message(String subject, String what, String error) {
        return subject + ": " + what + " (" + error + ")";
    }
}
