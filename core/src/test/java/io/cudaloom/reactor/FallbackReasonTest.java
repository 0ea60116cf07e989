package io.cudaloom.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.protocol.SlotTable;
import io.cudaloom.reactor.metrics.FallbackEvent;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;
import jdk.jfr.EventType;
import org.junit.jupiter.api.Test;

/**
 * {@link FallbackReason}: the reasons a {@link FallbackEvent} records, one to one, and the one
 * encoding of a reason in {@link Registrar#tryArm}'s answer.
 */
class FallbackReasonTest {
    @Test
    void everyReasonIsAnAnswerThatIsNoTicketAndDecodesToItself() {
        for (FallbackReason r : FallbackReason.values()) {
            assertFalse(Registrar.armed(r.answer()), r + ": no ticket");
            assertSame(r, FallbackReason.of(r.answer()));
        }
        assertEquals(FallbackReason.values().length, Arrays.stream(FallbackReason.values())
                .map(FallbackReason::answer).distinct().count(), "distinct answers");
        assertTrue(Registrar.armed(0L));
        assertTrue(Registrar.armed((0x7fffffffL << 32) | 5), "a slot ticket of the highest generation");
        assertFalse(Registrar.armed(SlotTable.NO_SLOT));
    }

    @Test
    void aTicketOrAnUnknownValueIsNoReason() {
        assertThrows(IllegalArgumentException.class, () -> FallbackReason.of(0L));
        assertThrows(IllegalArgumentException.class, () -> FallbackReason.of(42L));
        assertThrows(IllegalArgumentException.class, () -> FallbackReason.of(-1L - FallbackReason.values().length));
        assertThrows(IllegalArgumentException.class, () -> FallbackReason.of(Long.MIN_VALUE + 1), "a synthetic ticket");
    }

    @Test
    void theEventsReasonsAreTheEnumsOneToOneAndDocumented() {
        Set<String> reasons = Arrays.stream(FallbackReason.values()).map(r -> r.eventReason).collect(Collectors.toSet());
        assertEquals(FallbackReason.values().length, reasons.size(), "one event reason each");
        String description = EventType.getEventType(FallbackEvent.class).getField("reason").getDescription();
        for (String reason : reasons) {
            assertTrue(description.contains(reason + ":"), "the event's description explains '" + reason + "': "
                    + description);
        }
    }
}
