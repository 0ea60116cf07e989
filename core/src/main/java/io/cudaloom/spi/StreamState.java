package io.cudaloom.spi;

/** What a stream reports when queried without blocking. */
public enum StreamState {
    /** Every command submitted so far has completed. */
    IDLE,
    /** Some submitted command has not completed yet. */
    BUSY,
    /**
     * The stream hit a device fault; its pending commands will never complete. A backend answers it
     * only after reporting the fault to the stream's {@link FaultSink}.
     */
    FAULTED
}
