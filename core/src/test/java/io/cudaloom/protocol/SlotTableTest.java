package io.cudaloom.protocol;

import static org.junit.jupiter.api.Assertions.*;

import io.cudaloom.protocol.SlotTable.HeapFlagArray;
import io.cudaloom.protocol.SlotTable.OffHeapFlagArray;
import io.cudaloom.protocol.SlotTable.RetiredBatch;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The seed's three slot-table tests, ported, plus the Java port's additions (tickets, cancel). */
class SlotTableTest {

    private static final int POISON = -1;

    /**
     * Seed test 1: 8 producers x 500 registrations into 256 slots, a modelled device thread that
     * writes the flags, one scanner draining concurrently. Every payload is delivered exactly once
     * and no slot leaks.
     */
    @Test
    void manyProducersOneScannerDeliverEveryPayloadOnce() throws Exception {
        final int slots = 256, threads = 8, perThread = 500, total = threads * perThread;
        SlotTable<Integer> table = new SlotTable<>(new HeapFlagArray(slots));
        LinkedBlockingQueue<Integer> armed = new LinkedBlockingQueue<>();
        AtomicIntegerArray seen = new AtomicIntegerArray(total);

        Thread device = Thread.ofPlatform().start(() -> {
            try {
                for (int slot; (slot = armed.take()) != POISON; ) {
                    table.flags().setRelease(slot, 1);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        AtomicLong delivered = new AtomicLong();
        Thread scanner = Thread.ofPlatform().start(() -> {
            RetiredBatch<Integer> batch = new RetiredBatch<>(slots);
            while (delivered.get() < total) {
                table.scanOnce(batch);
                for (int i = 0; i < batch.size(); i++) {
                    seen.incrementAndGet(batch.payload(i));
                    delivered.incrementAndGet();
                }
                batch.clear();
                Thread.onSpinWait();
            }
        });
        List<Thread> producers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int base = t * perThread;
            producers.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; i < perThread; i++) {
                    long ticket;
                    while ((ticket = table.claim()) == SlotTable.NO_SLOT) {
                        Thread.onSpinWait(); // the scanner recycles concurrently
                    }
                    table.resetFlag(ticket);
                    table.publish(ticket, base + i);
                    armed.add(SlotTable.slotOf(ticket));
                }
            }));
        }
        for (Thread p : producers) {
            p.join();
        }
        armed.add(POISON);
        device.join();
        scanner.join(TimeUnit.SECONDS.toMillis(30));
        assertFalse(scanner.isAlive(), "scanner did not receive every payload");
        for (int token = 0; token < total; token++) {
            assertEquals(1, seen.get(token), "token " + token + " not delivered exactly once");
        }
        assertEquals(slots, table.freeCount(), "slots leaked");
        assertTrue(table.isIdle(), "nArmed back to 0");
    }

    /** Seed test 2: exhaustion is signalled, and one recycle restores exactly one slot. */
    @Test
    void claimSignalsExhaustionAndOneRecycleRestoresOneSlot() {
        final int slots = 4;
        SlotTable<Integer> table = new SlotTable<>(new HeapFlagArray(slots));
        Set<Integer> claimedSlots = new HashSet<>();
        List<Long> tickets = new ArrayList<>();
        for (int i = 0; i < slots; i++) {
            long t = table.claim();
            assertNotEquals(SlotTable.NO_SLOT, t, "slot available");
            tickets.add(t);
            claimedSlots.add(SlotTable.slotOf(t));
        }
        assertEquals(slots, claimedSlots.size(), "claims must be distinct");
        assertEquals(SlotTable.NO_SLOT, table.claim(), "exhausted pool must signal NO_SLOT");

        long ticket = tickets.get(0);
        table.resetFlag(ticket);
        assertTrue(table.publish(ticket, 99), "first publish is idle-to-active");
        table.flags().setRelease(SlotTable.slotOf(ticket), 1);
        RetiredBatch<Integer> batch = new RetiredBatch<>(slots);
        assertTrue(table.scanOnce(batch));
        assertEquals(1, batch.size());
        assertEquals(99, batch.payload(0), "completed slot delivered");
        assertEquals(ticket, batch.ticket(0), "retirement reports the registration's ticket");

        long again = table.claim();
        assertNotEquals(SlotTable.NO_SLOT, again, "recycled slot must be claimable");
        assertEquals(SlotTable.slotOf(ticket), SlotTable.slotOf(again));
        assertNotEquals(ticket, again, "a reused slot gets a new generation");
        assertEquals(SlotTable.NO_SLOT, table.claim(), "only the recycled slot returned");
    }

    /**
     * Seed test 3 (the loom model, run as a stress loop): one slot, the scanner started before the
     * device write and the publish, so it races both. The payload is delivered exactly once with
     * the published value, the slot recycles, and the idle-to-active report and nArmed are right.
     */
    @Test
    void singleSlotHandoffWithScannerRacingDeviceAndPublish() throws Exception {
        SlotTable<Integer> table = new SlotTable<>(new HeapFlagArray(1));
        RetiredBatch<Integer> batch = new RetiredBatch<>(1);
        CyclicBarrier start = new CyclicBarrier(3);
        for (int round = 0; round < 2_000; round++) {
            long ticket = table.claim();
            assertNotEquals(SlotTable.NO_SLOT, ticket);
            table.resetFlag(ticket);
            int value = round;
            List<Integer> woken = new ArrayList<>();
            Thread scanner = Thread.ofPlatform().start(() -> {
                await(start);
                while (woken.isEmpty()) {
                    table.scanOnce(batch);
                    for (int i = 0; i < batch.size(); i++) {
                        woken.add(batch.payload(i));
                    }
                    batch.clear();
                    Thread.onSpinWait();
                }
            });
            Thread device = Thread.ofPlatform().start(() -> {
                await(start);
                table.flags().setRelease(SlotTable.slotOf(ticket), 1);
            });
            await(start);
            assertTrue(table.publish(ticket, value), "publish from an idle table is idle-to-active");
            device.join();
            scanner.join();
            assertEquals(List.of(value), woken, "payload delivered exactly once, value intact");
            assertEquals(1, table.freeCount(), "slot recycled");
            assertTrue(table.isIdle(), "nArmed back to 0");
        }
    }

    @Test
    void cancelWithdrawsThePayloadButKeepsTheSlotArmedUntilItsFlagLands() {
        SlotTable<String> table = new SlotTable<>(new HeapFlagArray(2));
        RetiredBatch<String> batch = new RetiredBatch<>(2);
        long ticket = table.claim();
        table.resetFlag(ticket);
        table.publish(ticket, "waiter");
        assertTrue(table.cancel(ticket, "waiter"));
        assertFalse(table.cancel(ticket, "waiter"), "a payload is withdrawn once");

        table.scanOnce(batch);
        assertEquals(0, batch.size(), "not retired before the flag lands: the write is in flight");
        assertEquals(1, table.armedCount());
        assertEquals(1, table.freeCount(), "the cancelled slot is not reusable yet");

        table.flags().setRelease(SlotTable.slotOf(ticket), 1);
        table.scanOnce(batch);
        assertEquals(1, batch.size());
        assertNull(batch.payload(0), "a withdrawn payload is never delivered");
        assertEquals(2, table.freeCount());
        assertTrue(table.isIdle());
    }

    @Test
    void cancelLosesToARetirementThatTookThePayload() {
        SlotTable<String> table = new SlotTable<>(new HeapFlagArray(1));
        RetiredBatch<String> batch = new RetiredBatch<>(1);
        long ticket = table.claim();
        table.resetFlag(ticket);
        table.publish(ticket, "waiter");
        table.flags().setRelease(0, 1);
        table.scanOnce(batch);
        assertEquals("waiter", batch.payload(0));
        assertFalse(table.cancel(ticket, "waiter"), "delivered payloads cannot be withdrawn");
    }

    @Test
    void failArmedQuarantinesUntilRecycled() {
        SlotTable<String> table = new SlotTable<>(new HeapFlagArray(1));
        RetiredBatch<String> batch = new RetiredBatch<>(1);
        long ticket = table.claim();
        table.resetFlag(ticket);
        table.publish(ticket, "waiter");
        assertTrue(table.failArmed(0, batch));
        assertEquals("waiter", batch.payload(0));
        assertFalse(table.failArmed(0, batch), "not armed any more");
        assertTrue(table.isIdle());
        assertEquals(SlotTable.NO_SLOT, table.claim(), "quarantined, not free");
        table.recycle(0);
        assertNotEquals(SlotTable.NO_SLOT, table.claim());
    }

    @Test
    void releaseReturnsAnUnpublishedSlot() {
        SlotTable<String> table = new SlotTable<>(new HeapFlagArray(1));
        long ticket = table.claim();
        table.release(ticket);
        assertEquals(1, table.freeCount());
        assertTrue(table.isIdle());
    }

    @Test
    void badInputIsRejectedWithClearMessages() {
        SlotTable<String> table = new SlotTable<>(new HeapFlagArray(2));
        var e = assertThrows(IllegalArgumentException.class, () -> table.publish(-5L, "x"));
        assertTrue(e.getMessage().contains("not a ticket"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> table.resetFlag(7L));
        assertThrows(IndexOutOfBoundsException.class, () -> table.recycle(2));
        assertThrows(IllegalArgumentException.class, () -> new SlotTable<>(0, new HeapFlagArray(1)));
        var tooFew = assertThrows(IllegalArgumentException.class, () -> new SlotTable<>(4, new HeapFlagArray(2)));
        assertTrue(tooFew.getMessage().contains("capacity 4"), tooFew.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new HeapFlagArray(0));
        assertEquals(2, table.freeCount(), "nothing leaked by the rejected calls");
    }

    @Test
    void offHeapFlagsRoundTripAndCheckBounds() {
        OffHeapFlagArray flags = OffHeapFlagArray.allocate(70);
        assertEquals(0, flags.getAcquire(69));
        flags.setRelease(69, 1);
        assertEquals(1, flags.getAcquire(69));
        assertThrows(IndexOutOfBoundsException.class, () -> flags.getAcquire(70));
        assertThrows(IllegalArgumentException.class,
                () -> new OffHeapFlagArray(java.nio.ByteBuffer.allocate(16), 4), "heap buffers refused");
        // 70 slots span two bitmap words: the second word works too.
        SlotTable<Integer> table = new SlotTable<>(flags);
        RetiredBatch<Integer> batch = new RetiredBatch<>(70);
        List<Long> tickets = new ArrayList<>();
        for (int i = 0; i < 70; i++) {
            long t = table.claim();
            table.resetFlag(t);
            table.publish(t, i);
            tickets.add(t);
        }
        for (long t : tickets) {
            flags.setRelease(SlotTable.slotOf(t), 1);
        }
        table.scanOnce(batch);
        assertEquals(70, batch.size());
        assertEquals(70, table.freeCount());
    }

    private static void await(CyclicBarrier b) {
        try {
            b.await();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
