package io.cudaloom.reactor;

import io.cudaloom.spi.FlagMemory;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A stream as the reactor's parts see it: its counts and proof, its state, its backend's
 * submissions of flag writes and host callbacks, and its per-stream records. Each
 * {@link io.cudaloom.GpuStream} has one (a private adapter, {@code GpuStream.port()}), so the parts name this
 * interface and never the public stream, which names them: the parts stand outside the API's
 * cycle. What the stream record and the fault owner ask of a stream is declared by them
 * ({@link StreamRecord.Stream}, {@link DeviceFaults.Stream}) and inherited here. Identity is the
 * stream's: one port per stream, for its whole life; {@code toString()} is the stream's.
 */
public interface ReactorStream extends StreamRecord.Stream, DeviceFaults.Stream {
    /** Counted submissions so far ({@link io.cudaloom.GpuStream#submissionCount()}). */
    long submissionCount();

    /** Records a proof that the first {@code count} counted submissions are complete. */
    void completedThrough(long count);

    /** Whether the first {@code required} counted submissions are proven complete. */
    boolean isKnownComplete(long required);

    /** Whether counted work was submitted after the last proof. */
    boolean hasWorkNotKnownComplete();

    boolean isClosed();

    /** Whether the calling thread is the one that runs this stream's own work (a simulated kernel). */
    boolean isOwnWorkerThread();

    boolean enqueueFlagWrite(FlagMemory memory, int slot);

    boolean enqueueHostCallback(Runnable callback);

    void drained();

    /** Registers {@code onDone} with the device's reactor for the work so far (the drain's registration). */
    Registration registerCompletion(Consumer<@Nullable RuntimeException> onDone);

}
