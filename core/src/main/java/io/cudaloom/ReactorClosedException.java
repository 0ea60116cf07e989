package io.cudaloom;

/**
 * The completion reactor (or its device) was closed before, or while, the caller waited. Thrown to
 * every waiter that was parked when {@link CompletionReactor#close()} ran, and to any later await.
 */
public class ReactorClosedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public ReactorClosedException(String message) {
        super(message);
    }

    public ReactorClosedException(String message, Throwable cause) {
        super(message, cause);
    }
}
