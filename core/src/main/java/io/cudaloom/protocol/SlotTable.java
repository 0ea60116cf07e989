package io.cudaloom.protocol;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;
import org.jspecify.annotations.Nullable;

/**
 * The lock-free completion-slot protocol at the heart of the reactor, with no CUDA in it.
 *
 * <p>A slot is a completion flag (in a {@link FlagArray}), a payload (what to wake) and an active
 * bit. A registrant {@link #claim claims} a slot, {@link #resetFlag resets} its flag, arranges for
 * the device to write {@code 1} into the flag behind its work, and {@link #publish publishes} the
 * payload. The single consumer (the scanner) calls {@link #scanOnce}: every armed slot whose flag
 * reads 1 is retired, its payload handed out, and the slot recycled.
 *
 * <h2>Tickets</h2>
 * {@link #claim} returns a <em>ticket</em>: the slot index in the low 32 bits and the slot's
 * generation (incremented by every claim) in the high bits. A ticket names one registration, so a
 * late completion of an abandoned registration can never be taken for the completion of a later
 * registration that reuses the slot (the ABA guard); retirements report tickets, not slots.
 *
 * <h2>Roles</h2>
 * Between claim and recycle a slot has exactly one producer (the claimant) and one consumer (the
 * scanner). {@link #claim}, {@link #release}, {@link #resetFlag}, {@link #publish} and
 * {@link #cancel} may be called from any thread; {@link #scanOnce}, {@link #failArmed},
 * {@link #recycle} and {@link #forEachArmed} from the single consumer only (a second consumer
 * must first establish happens-before with the first, e.g. by joining it).
 *
 * <h2>Orderings, and where each is enforced</h2>
 * <ol>
 *   <li><b>Payload before bit.</b> {@link #publish} stores the payload, then sets the active bit
 *       with a volatile read-modify-write (release). {@link #scanOnce} acquire-loads the bit word
 *       before it reads the payload, so it sees the payload (and the generation written by
 *       {@link #claim}) of the registration whose bit it saw.
 *   <li><b>Count before bit.</b> {@link #publish} increments {@code nArmed} before setting the
 *       bit; the consumer decrements only for bits it observed, after recycling those slots. Every
 *       decrement is therefore preceded by its increment: {@code nArmed} never goes negative, and
 *       {@code nArmed == 0} means no slot is armed, which makes it the scanner's park gate.
 *   <li><b>Idle-to-active.</b> {@link #publish} returns whether its increment took {@code nArmed}
 *       from 0 to 1: only then may the scanner be parked (it parks only after reading 0), so only
 *       then must the caller unpark it. An unpark that races ahead of the park is kept as the
 *       thread's park permit, so no wake-up is lost; the increment is a volatile read-modify-write
 *       made before that unpark, as ordering 9 requires.
 *   <li><b>Flag reset before device write.</b> {@link #resetFlag} is a release store made before
 *       the caller enqueues the device write, so a stale 0 can never land after the device's 1.
 *   <li><b>Flag then payload.</b> {@link #scanOnce} acquire-loads the flag before it retires:
 *       whatever the device (or modelled device) wrote before its flag write is visible to the
 *       consumer, and through the payload's own hand-off (ordering 9) to the woken thread.
 *   <li><b>Cancel vs. retire.</b> The payload cell is taken by the consumer with an atomic
 *       get-and-set and cleared by {@link #cancel} with a compare-and-set, so exactly one of them
 *       wins: a cancelled payload is never delivered, a delivered one was never cancelled.
 *   <li><b>Free list.</b> A Treiber stack of slot indices with a 32-bit stamp in its head word;
 *       every push and pop advances the stamp, so a pop whose view of the head is stale (the top
 *       was popped and pushed back meanwhile) fails its compare-and-set instead of corrupting the
 *       stack. The successful CAS of a pop synchronizes with the CAS of the push that put the slot
 *       there: the previous use of a slot (its retirement) happens-before its next claim. No lock
 *       is taken anywhere, so none is ever held while a payload is woken.
 *   <li><b>Only the consumer recycles a published slot.</b> Between the consumer's flag read and
 *       its bit clear in {@link #scanOnce} nobody else can recycle the slot ({@link #release} takes
 *       only never-published slots), so the bit it clears is the registration whose flag it read.
 *       A registrant that sees its own flag land must not retire the slot itself: its view of the
 *       flag may be stale (the slot already retired, recycled and re-published by someone else),
 *       and clearing the bit then would destroy the other registration. It {@link #cancel cancels}
 *       its payload instead, which is safe by payload identity.
 *   <li><b>Volatile write before unpark</b> (the rule for every payload, and for everyone in the
 *       project who stores something and then unparks a thread). Whatever a woken thread must see
 *       is written with a volatile write or an atomic read-modify-write <em>before</em>
 *       {@code LockSupport.unpark}; a release store (or a plain one) is not enough.
 *       {@code LockSupport} orders park/unpark only with volatile accesses, and {@code unpark} of a
 *       virtual thread that already holds a permit does no write at all: it reads the permit
 *       (a volatile load) and returns ({@code VirtualThread.getAndSetParkPermit}, JDK 21-25). A
 *       release store followed by a volatile load of another variable may be reordered (store-load,
 *       x86 too, through the store buffer), so the thread can consume its stale permit, read the
 *       old value and park again while the unparker believes it is done: a lost wake-up. With a
 *       volatile write the two form a Dekker pair: either the unparker's read sees the permit
 *       already consumed (and its read-modify-write sets it again, waking the second park), or
 *       the thread's read after its permit-consuming read-modify-write sees the write. Applied in
 *       {@code Waiter.complete} (the ticket), {@code Waiter.Group} (the member stack swap, then each
 *       member's own {@code Waiter.complete}), {@code FallbackRegistration} (get-and-set of its
 *       target, then {@code Waiter.complete}), close (the volatile stop flag, then unpark of the
 *       scanner) and {@link #publish} (ordering 3). Checked by the jcstress
 *       {@code WaiterHandoffTest}; its twin with the release store is caught.
 * </ol>
 *
 * @param <P> what a slot wakes (a waiting thread's record, a callback)
 */
public final class SlotTable<P> {

    /** Returned by {@link #claim} when every slot is in use. */
    public static final long NO_SLOT = -1L;

    private static final VarHandle ACTIVE = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle PAYLOAD = MethodHandles.arrayElementVarHandle(Object[].class);
    private static final long GENERATION_MASK = 0x7fff_ffffL; // tickets stay non-negative

    private final FlagArray flags;
    private final int capacity;
    /** One bit per slot: set = armed, the consumer watches the flag. */
    private final long[] active;
    /** Written by the producer before the bit; taken by the consumer or cleared by cancel. */
    private final @Nullable Object[] payload;
    /** Per-slot generation; written only by the slot's claimant (see ordering 1 and 7). */
    private final int[] generation;
    /** Free-list links: nextFree[i] is the index below i on the stack, -1 at the bottom. */
    private final int[] nextFree;
    /** Free-list head: stamp in the high 32 bits, (top index + 1) in the low 32 (0 = empty). */
    private final PaddedAtomicLong freeHead = new PaddedAtomicLong();
    /** Armed-but-not-retired slots: the park gate and the idle-to-active detector. */
    private final PaddedAtomicLong nArmed = new PaddedAtomicLong();

    public SlotTable(FlagArray flags) {
        this(flags.length(), flags);
    }

    public SlotTable(int capacity, FlagArray flags) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity must be positive, was " + capacity);
        }
        if (flags.length() < capacity) {
            throw new IllegalArgumentException(
                    "flag array has " + flags.length() + " flags, capacity " + capacity + " needs as many");
        }
        this.flags = flags;
        this.capacity = capacity;
        this.active = new long[(capacity + 63) >>> 6];
        this.payload = new Object[capacity];
        this.generation = new int[capacity];
        this.nextFree = new int[capacity];
        // Stack with slot 0 on top, so the first claims come out 0, 1, 2, ...
        for (int i = 0; i < capacity; i++) {
            nextFree[i] = i + 1 < capacity ? i + 1 : -1;
        }
        freeHead.set(1); // stamp 0, top = slot 0
    }

    public int capacity() {
        return capacity;
    }

    public FlagArray flags() {
        return flags;
    }

    /** The slot index named by a ticket. */
    public static int slotOf(long ticket) {
        return (int) ticket;
    }

    /** The generation named by a ticket. */
    public static int generationOf(long ticket) {
        return (int) (ticket >>> 32);
    }

    private long ticketOf(int slot) {
        return ((generation[slot] & GENERATION_MASK) << 32) | slot;
    }

    private int checkedSlot(long ticket) {
        int slot = slotOf(ticket);
        if (ticket < 0 || slot < 0 || slot >= capacity) {
            throw new IllegalArgumentException("not a ticket of this table: " + ticket);
        }
        return slot;
    }

    /**
     * True when no slot is armed: the scanner's park gate. An acquire read, so a registration's
     * {@link #publish} (which increments the count before setting its bit) is seen.
     */
    public boolean isIdle() {
        return nArmed.getAcquire() == 0;
    }

    /** Slots armed and not yet retired (a snapshot). */
    public long armedCount() {
        return nArmed.getAcquire();
    }

    /**
     * Reserve a free slot. Returns its ticket, or {@link #NO_SLOT} when the pool is exhausted
     * (the caller falls back; exhaustion is not an error).
     */
    public long claim() {
        for (;;) {
            long head = freeHead.get();
            int top = (int) head - 1;
            if (top < 0) {
                return NO_SLOT;
            }
            // Possibly stale if another thread pops `top` concurrently; then the stamp in `head`
            // is stale too and the CAS below fails (ordering 7).
            int below = nextFree[top];
            long next = (((head >>> 32) + 1) << 32) | ((below + 1) & 0xffff_ffffL);
            if (freeHead.compareAndSet(head, next)) {
                generation[top]++; // sole owner from here until recycle
                return ticketOf(top);
            }
            Thread.onSpinWait();
        }
    }

    /** Return a claimed slot that was never published (the device write could not be enqueued). */
    public void release(long ticket) {
        int slot = checkedSlot(ticket);
        push(slot, slot);
    }

    /** Zero the slot's flag; must precede the device write (ordering 4). */
    public void resetFlag(long ticket) {
        flags.setRelease(checkedSlot(ticket), 0);
    }

    /** Acquire load of the slot's flag: whether the device write has landed. */
    public boolean flagSet(long ticket) {
        return flags.getAcquire(checkedSlot(ticket)) == 1;
    }

    /**
     * Hand a claimed, reset and device-armed slot to the consumer: store the payload, count the slot
     * as armed, then set its active bit (orderings 1-3).
     *
     * @return true when this publish took the table from idle to active: the caller must then
     *     wake the consumer, which may be parked
     */
    public boolean publish(long ticket, P waker) {
        int slot = checkedSlot(ticket);
        payload[slot] = waker; // plain store, published by the volatile bit update below
        boolean wasIdle = nArmed.getAndIncrement() == 0; // before the bit: no underflow
        ACTIVE.getAndBitwiseOr(active, slot >>> 6, 1L << slot);
        return wasIdle;
    }

    /**
     * Withdraw the payload of a published registration, so that the consumer will not deliver it
     * (ordering 6). The slot stays armed until its flag lands and is then recycled as usual:
     * the device write may still be in flight, so the slot must not be reused before that.
     *
     * <p>Sound as long as the same payload object is not published twice at once (true for a
     * waiting thread's record, which is registered once at a time, and for per-registration
     * callbacks).
     *
     * @return true if the payload was withdrawn; false if the consumer had already taken it (it is
     *     being, or has been, delivered)
     */
    public boolean cancel(long ticket, P waker) {
        return PAYLOAD.compareAndSet(payload, checkedSlot(ticket), waker, null);
    }

    /**
     * One scan pass (consumer only). Retires every armed slot whose flag reads 1: clears its bit,
     * takes its payload, reports {@code (ticket, payload)} into {@code into}, and recycles the slot.
     * The caller wakes the payloads afterwards; nothing is locked then or now.
     *
     * @return whether any slot was armed at the start of its word's visit
     */
    public boolean scanOnce(RetiredBatch<P> into) {
        if (!into.isEmpty()) {
            // A batch that was not drained would overflow once retirements pile up to capacity.
            throw new IllegalArgumentException("scanOnce needs an empty batch; clear() it after delivering");
        }
        boolean anyActive = false;
        int chainTop = -1;
        int chainBottom = -1;
        int retired = 0;
        for (int word = 0; word < active.length; word++) {
            // Acquire pairs with the release bit update in publish (ordering 1).
            long bits = (long) ACTIVE.getAcquire(active, word);
            if (bits == 0) {
                continue;
            }
            anyActive = true;
            while (bits != 0) {
                int bit = Long.numberOfTrailingZeros(bits);
                bits &= bits - 1;
                int slot = (word << 6) | bit;
                if (flags.getAcquire(slot) != 1) { // ordering 5
                    continue;
                }
                ACTIVE.getAndBitwiseAnd(active, word, ~(1L << bit));
                @SuppressWarnings("unchecked")
                P taken = (P) PAYLOAD.getAndSet(payload, slot, null); // ordering 6
                into.add(ticketOf(slot), taken); // before recycling: the next claim bumps it
                nextFree[slot] = chainTop;
                chainTop = slot;
                if (chainBottom < 0) {
                    chainBottom = slot;
                }
                retired++;
            }
        }
        if (retired > 0) {
            push(chainTop, chainBottom);
            // After recycling, and only for bits observed set: publish counted them first (ordering 2).
            long before = nArmed.getAndAdd(-retired);
            assert before >= retired : "nArmed underflow: " + before + " < " + retired;
        }
        return anyActive;
    }

    /**
     * Retire an armed slot whose flag has not landed, without recycling it (consumer only): used
     * when the device can no longer write it (a faulted stream) or the table is shutting down. The
     * slot is quarantined until {@link #recycle} is called, which the caller may do only once no
     * device write into the slot can still land.
     *
     * @return true if the slot was armed and is now retired (reported into {@code into})
     */
    public boolean failArmed(int slot, RetiredBatch<P> into) {
        if (slot < 0 || slot >= capacity) {
            throw new IndexOutOfBoundsException("slot " + slot + " outside 0.." + (capacity - 1));
        }
        int word = slot >>> 6;
        long bit = 1L << slot;
        long before = (long) ACTIVE.getAndBitwiseAnd(active, word, ~bit);
        if ((before & bit) == 0) {
            return false;
        }
        @SuppressWarnings("unchecked")
        P taken = (P) PAYLOAD.getAndSet(payload, slot, null);
        into.add(ticketOf(slot), taken);
        long armedBefore = nArmed.getAndAdd(-1);
        assert armedBefore >= 1 : "nArmed underflow";
        return true;
    }

    /** Put a slot quarantined by {@link #failArmed} back on the free list (consumer only). */
    public void recycle(int slot) {
        if (slot < 0 || slot >= capacity) {
            throw new IndexOutOfBoundsException("slot " + slot + " outside 0.." + (capacity - 1));
        }
        push(slot, slot);
    }

    /**
     * Visit the armed slots (consumer only): all of them, or only those whose flag has not landed.
     * A snapshot; slots published during the visit may or may not be seen.
     */
    public void forEachArmed(boolean pendingOnly, IntConsumer visitor) {
        for (int word = 0; word < active.length; word++) {
            long bits = (long) ACTIVE.getAcquire(active, word);
            while (bits != 0) {
                int slot = (word << 6) | Long.numberOfTrailingZeros(bits);
                bits &= bits - 1;
                if (!pendingOnly || flags.getAcquire(slot) != 1) {
                    visitor.accept(slot);
                }
            }
        }
    }

    /** Free slots, counted by walking the free list: exact only while no one claims or recycles. */
    public int freeCount() {
        int n = 0;
        for (int i = (int) freeHead.get() - 1; i >= 0 && n <= capacity; i = nextFree[i]) {
            n++;
        }
        return n;
    }

    /** Push the chain top..bottom (linked through nextFree, bottom not yet linked) in one CAS. */
    private void push(int top, int bottom) {
        for (;;) {
            long head = freeHead.get();
            nextFree[bottom] = (int) head - 1; // plain: published by the CAS below (ordering 7)
            long next = (((head >>> 32) + 1) << 32) | ((top + 1) & 0xffff_ffffL);
            if (freeHead.compareAndSet(head, next)) {
                return;
            }
            Thread.onSpinWait();
        }
    }

    /** An AtomicLong on a cache line of its own, so registrants contending on one hot word do not
     *  also invalidate the other. */
    @SuppressWarnings("unused")
    private static final class PaddedAtomicLong extends AtomicLong {
        private static final long serialVersionUID = 1L;
        long p1, p2, p3, p4, p5, p6, p7;
    }

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

    /** Plain heap atomics: the flag backend for tests, written by a modelled device thread. */
    public static final class HeapFlagArray implements FlagArray {
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
    public static final class OffHeapFlagArray implements FlagArray {
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

    /**
     * The slots one scan pass retired: their tickets and the payloads taken out of them. Reused from
     * pass to pass by the single consumer, so a scan allocates nothing.
     *
     * <p>A payload is {@code null} when the registrant cancelled it before retirement (a waiter that
     * gave up or completed inline); the ticket is reported anyway so the consumer can drop its own
     * per-slot bookkeeping.
     */
    public static final class RetiredBatch<P> {
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
}
