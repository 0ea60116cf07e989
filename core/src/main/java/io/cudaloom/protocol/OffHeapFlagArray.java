package io.cudaloom.protocol;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flags in off-heap memory, read and written through a direct {@link ByteBuffer} with acquire and
 * release accesses: the production flag backend.
 *
 * <p>The CUDA backend points the buffer at pinned, device-mapped host memory
 * ({@code cuMemHostAlloc(PORTABLE | DEVICEMAP)}); the GPU writes {@code 1} into a flag through the
 * memory's device alias with {@code cuStreamWriteValue32}, and the scanner observes it here with an
 * acquire load. The simulated device uses the same class over ordinary direct memory, so the real
 * protocol path runs end to end without a GPU.
 *
 * <p>Flags are 32-bit words in native byte order, 4-byte aligned (the buffer's base address must be
 * 4-byte aligned, which both pinned allocations and {@link ByteBuffer#allocateDirect} guarantee);
 * aligned 32-bit accesses are single-copy atomic on every platform the JDK supports, which the
 * acquire/release access modes of a byte-buffer view require.
 */
public final class OffHeapFlagArray implements FlagArray {
    private static final VarHandle INT =
            MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

    private final ByteBuffer memory;
    private final int length;

    /**
     * @param memory a direct buffer of at least {@code 4 * length} bytes; position and limit are
     *     ignored (absolute accesses from index 0)
     */
    public OffHeapFlagArray(ByteBuffer memory, int length) {
        if (!memory.isDirect()) {
            throw new IllegalArgumentException("flag memory must be a direct (off-heap) buffer");
        }
        if (length <= 0) {
            throw new IllegalArgumentException("flag count must be positive, was " + length);
        }
        if (memory.capacity() < 4L * length) {
            throw new IllegalArgumentException("flag memory holds " + memory.capacity()
                    + " bytes, " + (4L * length) + " needed for " + length + " flags");
        }
        this.memory = memory;
        this.length = length;
    }

    /** A fresh, zeroed, off-heap flag array (the simulated device's flag memory). */
    public static OffHeapFlagArray allocate(int length) {
        if (length <= 0) {
            throw new IllegalArgumentException("flag count must be positive, was " + length);
        }
        return new OffHeapFlagArray(
                ByteBuffer.allocateDirect(4 * length).order(ByteOrder.nativeOrder()), length);
    }

    @Override
    public int length() {
        return length;
    }

    @Override
    public int getAcquire(int slot) {
        return (int) INT.getAcquire(memory, checkedOffset(slot));
    }

    @Override
    public void setRelease(int slot, int value) {
        INT.setRelease(memory, checkedOffset(slot), value);
    }

    /** Zero every flag (plain stores; call before the memory is shared). */
    public void clear() {
        for (int i = 0; i < length; i++) {
            INT.set(memory, 4 * i, 0);
        }
    }

    private int checkedOffset(int slot) {
        // An out-of-range slot would read neighbouring memory; the byte-buffer view checks the
        // upper end of the buffer, this checks the table's own length.
        if (slot < 0 || slot >= length) {
            throw new IndexOutOfBoundsException("slot " + slot + " outside 0.." + (length - 1));
        }
        return slot << 2;
    }
}
