package io.cudaloom.stress.jcstress;

import io.cudaloom.protocol.SlotTable.HeapFlagArray;
import io.cudaloom.protocol.SlotTable.RetiredBatch;
import io.cudaloom.protocol.SlotTable;

/**
 * State of the claim/recycle tests: a real two-slot table in which slot 0 is armed and its flag has
 * landed (the next scan retires and recycles it) and slot 1 is free. Claims report the slot index,
 * or -1 for {@link SlotTable#NO_SLOT}.
 */
abstract class TwoSlotsOneRetiring {
    final HeapFlagArray flags = new HeapFlagArray(2);
    final SlotTable<Payload> table = new SlotTable<>(2, flags);
    final RetiredBatch<Payload> batch = new RetiredBatch<>(2);

    TwoSlotsOneRetiring() {
        long t0 = table.claim(); // slot 0 (the stack hands out 0 first)
        table.resetFlag(t0);
        table.publish(t0, Payload.published());
        flags.setRelease(SlotTable.slotOf(t0), 1);
    }

    final int claimSlot() {
        long t = table.claim();
        return t == SlotTable.NO_SLOT ? -1 : SlotTable.slotOf(t);
    }

    final void scanAndRecycle() {
        table.scanOnce(batch);
        batch.clear();
    }

    /**
     * The arbiter's drain: claims until the pool is empty. Returns how many slots it got, or 100 +
     * that number if one of them is already owned by an actor or comes twice (a slot handed to two
     * owners), and 200 + that number if the free list is not empty afterwards.
     */
    final int drain(int... owned) {
        boolean[] seen = new boolean[table.capacity()];
        for (int s : owned) {
            if (s >= 0) {
                seen[s] = true;
            }
        }
        int n = 0;
        boolean duplicate = false;
        for (int s = claimSlot(); s >= 0; s = claimSlot()) {
            duplicate |= seen[s];
            seen[s] = true;
            if (++n > table.capacity()) {
                break; // a corrupted (cyclic) free list: stop, graded below
            }
        }
        return n + (duplicate ? 100 : 0) + (table.freeCount() != 0 ? 200 : 0);
    }
}
