package io.cudaloom;

import java.util.Locale;

/**
 * How a stream's work, flag writes and host callbacks reach the driver
 * ({@link ReactorConfig.Builder#submission}).
 */
public enum Submission {
    /**
     * Each caller makes its own driver call, on its own thread, after taking room in the stream's
     * admission bound (a fair semaphore that parks it while {@link ReactorConfig#admissionLimit()}
     * entries are in flight). Flag writes and host callbacks go straight to the driver. Kept for
     * comparison and for users who call raw JCuda on the same streams from many threads.
     */
    DIRECT,
    /**
     * Submission by combining (issue #37): a caller checks its arguments, appends one operation to
     * the stream's submission queue and returns; the thread that finds the queue not being drained
     * submits everything queued, in order, within the stream's room. No caller parks for room; at
     * most one thread per stream is in the driver. Flag writes and host callbacks take the same
     * queue, so a registration never blocks or spins. The default. See
     * {@code io.cudaloom.reactor.CombinedSubmission}.
     */
    COMBINING;

    /** The system property that picks the default ({@code DIRECT} or {@code COMBINING}; unset: {@code COMBINING}). */
    public static final String PROPERTY = "cudaloom.submission";

    /**
     * The default: the system property {@value #PROPERTY} if set, else {@link #COMBINING}. In one
     * run on an H100 (s13-run17, docs/issue37/s13-run16-17-h100) combining gave the demo 190,046
     * completions/s at 57.5 us of CPU each against direct's 160,077 at 72.6 us, and the 10 us sweep
     * 447,819/s at 24.1 us against 337,184/s at 29.4 us, once its drainer paced trackers a quarter
     * of the room apart and the scanner handed its drains off (before that it ran at half direct's rate).
     */
    static Submission defaultMode() {
        String v = System.getProperty(PROPERTY);
        if (v == null || v.isBlank()) {
            return COMBINING;
        }
        try {
            return valueOf(v.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(PROPERTY + " must be DIRECT or COMBINING, was " + v, e);
        }
    }
}
