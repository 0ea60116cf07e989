package io.cudaloom.protocol;

/**
 * Host-visible per-slot completion flags: {@code 0} = pending, {@code 1} = done.
 *
 * <p>In production the flags live in pinned, device-mapped host memory that the GPU writes
 * {@code 1} into ({@link OffHeapFlagArray}); in unit tests they are plain heap atomics written by
 * a modelled device thread ({@link HeapFlagArray}). The protocol in {@link SlotTable} is the same
 * for both.
 *
 * <p>Ordering contract for implementations: {@link #getAcquire} must be an acquire load and
 * {@link #setRelease} a release store, so that everything the writer did before setting the flag
 * (for a GPU: the work that preceded the flag write on its stream) is visible to a reader that
 * observed the new value.
 */
public interface FlagArray {

    /** Number of flags; valid slot indices are {@code 0 .. length()-1}. */
    int length();

    /** Acquire load of the flag of {@code slot}. */
    int getAcquire(int slot);

    /** Release store into the flag of {@code slot} (host side: reset to 0; modelled device: 1). */
    void setRelease(int slot, int value);
}
