package io.cudaloom.reactor;

import io.cudaloom.GpuFaultException;
import io.cudaloom.ReactorClosedException;
import java.util.Objects;

/**
 * A failure delivered to a waiter (by the scanner, a host callback, the closing thread or a closed
 * stream's drain), thrown anew on the waiter's own thread so that its stack trace is the waiter's.
 * The same for every blocking form (parked, timed, uninterruptible, coalesced, a closed stream's
 * drain): a {@link GpuFaultException} is thrown with the delivered one's cause (a simulated
 * kernel's exception, or what the fault probe caught), exactly the cause that the non-blocking
 * forms ({@code toCompletableFuture}, {@code onComplete}, {@code subscribe}) hand over with the
 * delivered exception itself. Other failures keep the delivered exception as the cause.
 */
final class Failures {
    private Failures() {}

    static RuntimeException anew(RuntimeException delivered) {
        if (delivered instanceof GpuFaultException fault) {
            return DeviceFaults.anew(fault); // the fault's one factory
        }
        String message = Objects.requireNonNullElse(delivered.getMessage(), delivered.toString());
        if (delivered instanceof ReactorClosedException) {
            return new ReactorClosedException(message, delivered);
        }
        return new IllegalStateException(message, delivered); // e.g. a shared registration refused
    }
}
