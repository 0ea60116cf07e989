package io.cudaloom.protocol;

import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The slots one scan pass retired: their tickets and the payloads taken out of them. Reused from
 * pass to pass by the single consumer, so a scan allocates nothing.
 *
 * <p>A payload is {@code null} when the registrant cancelled it before retirement (a waiter that
 * gave up or completed inline); the ticket is reported anyway so the consumer can drop its own
 * per-slot bookkeeping.
 */
public final class RetiredBatch<P> {
    private final long[] tickets;
    private final @Nullable Object[] payloads;
    private int size;

    public RetiredBatch(int capacity) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("batch capacity must be positive, was " + capacity);
        }
        this.tickets = new long[capacity];
        this.payloads = new Object[capacity];
    }

    void add(long ticket, @Nullable P payload) {
        tickets[size] = ticket;
        payloads[size] = payload;
        size++;
    }

    public int size() {
        return size;
    }

    public boolean isEmpty() {
        return size == 0;
    }

    public long ticket(int i) {
        return tickets[checked(i)];
    }

    @SuppressWarnings("unchecked")
    public @Nullable P payload(int i) {
        return (P) payloads[checked(i)];
    }

    /** Forget the entries (and drop the payload references, so they can be collected). */
    public void clear() {
        Arrays.fill(payloads, 0, size, null);
        size = 0;
    }

    private int checked(int i) {
        if (i < 0 || i >= size) {
            throw new IndexOutOfBoundsException("entry " + i + " of " + size);
        }
        return i;
    }
}
