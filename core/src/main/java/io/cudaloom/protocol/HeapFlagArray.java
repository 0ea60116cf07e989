package io.cudaloom.protocol;

import java.util.concurrent.atomic.AtomicIntegerArray;

/** Plain heap atomics: the flag backend for tests, written by a modelled device thread. */
public final class HeapFlagArray implements FlagArray {
    private final AtomicIntegerArray flags;

    public HeapFlagArray(int length) {
        if (length <= 0) {
            throw new IllegalArgumentException("flag count must be positive, was " + length);
        }
        this.flags = new AtomicIntegerArray(length);
    }

    @Override
    public int length() {
        return flags.length();
    }

    @Override
    public int getAcquire(int slot) {
        return flags.getAcquire(slot);
    }

    @Override
    public void setRelease(int slot, int value) {
        flags.setRelease(slot, value);
    }
}
