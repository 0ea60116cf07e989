package io.cudaloom;

import org.jspecify.annotations.Nullable;

/**
 * The fault owner of one device. For now: the one factory of {@link GpuFaultException} and its
 * message shape, {@code "<stream> of <device>: <what happened> (<the error>)"}, with the fault's
 * cause (a simulated kernel's exception) attached.
 */
final class DeviceFaults {
    private DeviceFaults() {}

    /** The one message shape: {@code "<subject>: <what happened> (<error>)"}. */
    static String message(String subject, String what, String error) {
        return subject + ": " + what + " (" + error + ")";
    }

    /** Who a stream's fault is about: {@code "<stream> of <device>"}. */
    static String subject(GpuStream stream) {
        return stream + " of " + stream.device().name();
    }

    /**
     * A wait or registration on {@code stream}, which has faulted with {@code error}: its work can
     * never complete.
     */
    static GpuFaultException neverCompletes(GpuStream stream, String error, @Nullable Throwable cause) {
        return create(message(subject(stream), "its work can never complete", error), cause);
    }

    /** The scanner's probe could not query {@code stream} ({@code e}): its work is taken as failed. */
    static GpuFaultException queryFailed(GpuStream stream, RuntimeException e) {
        return create(message(subject(stream), "its work is taken as failed: the backend could not query it",
                e.toString()), e);
    }

    /**
     * {@code delivered} (made by this factory on another thread) made anew on the waiter's thread,
     * so that the stack trace is the waiter's: the same message and the same cause
     * ({@link Failures}).
     */
    static GpuFaultException anew(GpuFaultException delivered) {
        String message = java.util.Objects.requireNonNullElse(delivered.getMessage(), delivered.toString());
        return create(message, delivered.getCause());
    }

    /** The one place a {@link GpuFaultException} is constructed in the reactor (FaultFactoryOnlyTest). */
    private static GpuFaultException create(String message, @Nullable Throwable cause) {
        return cause != null ? new GpuFaultException(message, cause) : new GpuFaultException(message);
    }
}
