package io.cudaloom.spi;

/**
 * What a backend's stream hands its work to: the reactor's own object for the stream (one per
 * stream, made with it, chosen once from the device's configuration: direct submission or submission
 * by combining), which a backend gets from {@code BackendAccess.Hooks#submission} and keeps. A launch,
 * copy or memset is checked, its memory lifetimes entered and its arguments packed at the call, made
 * into one {@link StreamOp}, and handed to {@link #submit}: the one path of every work call, whatever
 * the mode. Any thread may call it.
 */
public interface StreamSubmission {
    /**
     * Submits {@code op}, which is the reactor's from this call on: its {@link StreamOp#finish} runs
     * exactly once, whatever happens, so the caller never exits the lifetimes it entered for it.
     * Direct: on the calling thread, within the stream's admission bound (the caller may park there,
     * FIFO, while the stream is full): {@link StreamOp#call()}, which throws what the caller gets.
     * Combining: appended to the stream's submission queue; it never parks for room.
     *
     * @return false if the call raced the stream's close and came after it (combining): the caller
     *     throws the closed stream's exception
     */
    boolean submit(StreamOp op);

    /**
     * Where the backend reports that the stream faulted, and asks whether it has (the device's fault
     * owner keeps the fault; the backend keeps no copy). Report a fault before
     * {@link StreamBackend#queryState()} answers {@code FAULTED}; throw
     * {@link FaultSink#failure}{@code ("work refused, ...")} for a call refused after it.
     */
    FaultSink faults();

    /** Waits until everything submitted before the call is in the driver's queue (combining; at once when direct). */
    void flush();

    /** The stream's submission count ({@code GpuStream.submissionCount()}). */
    long submissionCount();

    /**
     * The first {@code count} counted submissions are known complete (a blocking synchronize returned
     * after {@link #submissionCount()} read {@code count}): a proof, which returns their room.
     */
    void completedThrough(long count);
}
