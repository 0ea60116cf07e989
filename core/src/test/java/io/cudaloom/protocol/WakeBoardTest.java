package io.cudaloom.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link WakeBoard} on one thread, with times given rather than read: what a post, a withdrawal, a
 * firing and a planned park do. The race of a post against the consumer's plan is jcstress's
 * ({@code WakeBoardPlanTest}, and its broken twin).
 */
class WakeBoardTest {
    /** A sleeper with a settable time. */
    static final class S implements WakeBoard.Sleeper {
        volatile long at;

        S(long at) {
            this.at = at;
        }

        @Override
        public long wakeAtNanos() {
            return at;
        }
    }

    @Test
    void aBoardNeedsAtLeastOneCell() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new WakeBoard<S>(0));
        assertTrue(e.getMessage().contains("cells"), e.getMessage());
    }

    @Test
    void aRequestIsFiredOnceWhenDueAndNotBefore() {
        WakeBoard<S> board = new WakeBoard<>(4);
        S s = new S(1_000);
        int cell = board.post(s, 7);
        assertTrue(cell >= 0, "posted");
        assertTrue(board.anyPosted());
        List<S> woken = new ArrayList<>();
        assertEquals(0, board.fireDue(999, woken::add), "not due yet");
        assertTrue(board.holds(WakeBoard.cellOf(cell), s));
        assertEquals(1, board.fireDue(1_000, woken::add));
        assertEquals(List.of(s), woken);
        assertFalse(board.anyPosted());
        assertEquals(0, board.fireDue(5_000, woken::add), "fired at most once");
        assertFalse(board.withdraw(WakeBoard.cellOf(cell), s), "taken by the consumer: the wake-up is made or coming");
    }

    @Test
    void aWithdrawnRequestIsNeverFired() {
        WakeBoard<S> board = new WakeBoard<>(2);
        S s = new S(10);
        int cell = WakeBoard.cellOf(board.post(s, 0));
        assertTrue(board.withdraw(cell, s));
        assertFalse(board.anyPosted());
        List<S> woken = new ArrayList<>();
        assertEquals(0, board.fireDue(1_000, woken::add));
        assertEquals(List.of(), woken);
    }

    @Test
    void aFullBoardPostsNothingAndAFreedCellIsUsedAgain() {
        WakeBoard<S> board = new WakeBoard<>(2);
        S a = new S(1);
        S b = new S(2);
        S c = new S(3);
        int ca = WakeBoard.cellOf(board.post(a, 0));
        int cb = WakeBoard.cellOf(board.post(b, 0)); // the hint's cell is taken: the next one
        assertTrue(ca != cb);
        assertEquals(WakeBoard.NOT_POSTED, board.post(c, 0));
        assertTrue(board.withdraw(ca, a));
        assertEquals(ca, WakeBoard.cellOf(board.post(c, 1)));
    }

    @Test
    void aPlannedParkIsCutToTheEarliestRequestAndSkippedWhenOneIsDue() {
        WakeBoard<S> board = new WakeBoard<>(4);
        assertEquals(50_000, board.planPark(0, 50_000), "nothing posted: the park as asked");
        board.awake();
        board.post(new S(30_000), 1);
        board.post(new S(20_000), 2);
        assertEquals(20_000, board.planPark(0, 50_000));
        board.awake();
        assertEquals(0, board.planPark(25_000, 50_000), "a request is due: no park");
        board.awake();
        assertEquals(10_000, board.planPark(10_000, 50_000), "20,000 - 10,000");
        board.awake();
    }

    @Test
    void aPostTellsItsCallerToWakeAConsumerThatPlansToSleepPastIt() {
        WakeBoard<S> board = new WakeBoard<>(4);
        int awake = board.post(new S(100), 0);
        assertEquals(0, awake & WakeBoard.WAKE_CONSUMER, "the consumer is awake: it reads the board before it parks");
        board.planPark(0, 1_000); // the consumer plans to sleep until 1,000
        int past = board.post(new S(500), 1);
        assertEquals(WakeBoard.WAKE_CONSUMER, past & WakeBoard.WAKE_CONSUMER, "planned past 500: wake it");
        int within = board.post(new S(2_000), 2);
        assertEquals(0, within & WakeBoard.WAKE_CONSUMER, "the consumer wakes before 2,000 anyway");
        board.awake();
        int afterwards = board.post(new S(600), 3);
        assertEquals(0, afterwards & WakeBoard.WAKE_CONSUMER, "awake again");
    }
}
