package io.cudaloom;

/**
 * How a stream's work, flag writes and host callbacks reach the driver
 * ({@link ReactorConfig.Builder#submission}).
 */
public enum Submission {
    /**
     * Each caller makes its own driver call, on its own thread, after taking room in the stream's
     * admission bound (a fair semaphore that parks it while {@link ReactorConfig#admissionLimit()}
     * entries are in flight). Flag writes and host callbacks go straight to the driver.
     */
    DIRECT,
    /**
     * Submission by combining (issue #37): a caller checks its arguments, appends one operation to
     * the stream's submission queue and returns; the thread that finds the queue not being drained
     * submits everything queued, in order, within the stream's room. No caller parks for room; at
     * most one thread per stream is in the driver. Flag writes and host callbacks take the same
     * queue, so a registration never blocks or spins. See {@code io.cudaloom.reactor.CombinedSubmission}.
     */
    COMBINING;

    /** The system property that picks the default ({@code DIRECT} or {@code COMBINING}; unset: {@code DIRECT}). */
    public static final String PROPERTY = "cudaloom.submission";

    /**
     * The default: the system property {@value #PROPERTY} if set, else {@link #DIRECT}. Combining is
     * not the default yet: on the H100 (s12-run10/12, docs/issue37/s12-run10-15-h100) it cut the
     * CPU per completion (the demo's 64.1 us to 35.9 us, the 10 us sweep's 26.4 us to 15.1 us) but
     * halved the completions/s (169,736 to 78,673; 367,055 to 167,319): the drainer stops when the
     * stream's room is used up and room comes back only when a proof lands, which then covers
     * everything drained, so the driver's queue empties between refills.
     */
    static Submission defaultMode() {
        String v = System.getProperty(PROPERTY);
        if (v == null || v.isBlank()) {
            return DIRECT;
        }
        try {
            return valueOf(v.trim().toUpperCase(java.util.Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(PROPERTY + " must be DIRECT or COMBINING, was " + v, e);
        }
    }
}
