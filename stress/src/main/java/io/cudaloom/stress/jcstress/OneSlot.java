package io.cudaloom.stress.jcstress;

import io.cudaloom.protocol.SlotTable.HeapFlagArray;
import io.cudaloom.protocol.SlotTable.RetiredBatch;
import io.cudaloom.protocol.SlotTable;
import org.openjdk.jcstress.infra.results.IIIII_Result;

/**
 * State shared by the payload hand-off tests: a real one-slot {@link SlotTable} whose slot has been
 * claimed and reset (the registrant's steps before the device write is enqueued), a modelled device
 * that writes the flag, and the single consumer's scan.
 *
 * <p>Result fields: r1 = slots the racing scan retired, r2 = the value it read from the payload
 * ({@link Payload#PUBLISHED}, 0 for a stale payload, -1 when it retired nothing, -2 when it retired
 * the slot but got no payload), r3 = retirements in total (racing scan + the arbiter's final scan;
 * +100 if a retirement reported another ticket than the one claimed), r4 = armed count at the end,
 * r5 = free slots at the end.
 */
abstract class OneSlot {
    final HeapFlagArray flags = new HeapFlagArray(1);
    final SlotTable<Payload> table = new SlotTable<>(1, flags);
    final RetiredBatch<Payload> batch = new RetiredBatch<>(1);
    final long ticket;
    /** Retirements so far; consumer-only (the racing scanner actor, then the arbiter). */
    private int retired;
    private boolean wrongTicket;

    OneSlot() {
        ticket = table.claim();
        table.resetFlag(ticket);
    }

    /** The registrant's publish: payload written with plain stores, then {@link SlotTable#publish}. */
    final boolean publish() {
        return table.publish(ticket, Payload.published());
    }

    /** The device's write behind the work (cuStreamWriteValue32 in production). */
    final void deviceWritesFlag() {
        flags.setRelease(SlotTable.slotOf(ticket), 1);
    }

    /** One scan pass of the consumer racing the others; records r1, r2. */
    final void racingScan(IIIII_Result r) {
        table.scanOnce(batch);
        r.r1 = batch.size();
        r.r2 = batch.isEmpty() ? -1 : valueOf(batch.payload(0));
        account();
    }

    /** The arbiter: everything else has finished; a final pass must retire what is left. */
    final void finalScan(IIIII_Result r) {
        table.scanOnce(batch);
        account();
        r.r3 = retired + (wrongTicket ? 100 : 0);
        r.r4 = (int) table.armedCount();
        r.r5 = table.freeCount();
    }

    private void account() {
        for (int i = 0; i < batch.size(); i++) {
            retired++;
            wrongTicket |= batch.ticket(i) != ticket;
        }
        batch.clear();
    }

    private static int valueOf(Payload p) {
        return p == null ? -2 : p.value;
    }
}
