package io.cudaloom.protocol;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The combining queue on its own (no stream, no driver): order, exclusion, room, the ring's bound. */
class SubmissionQueueTest {
    /** A submission: who appended it and its index in that thread's appends. */
    record Op(int thread, int index) {}

    /** Records what is submitted, how many threads submit at once, and whether there is room. */
    static final class Recorder implements SubmissionQueue.Sink<Op> {
        final List<Op> submitted = new ArrayList<>(); // guarded by the queue's exclusion (checked below)
        final List<Long> positions = new ArrayList<>();
        final AtomicInteger inside = new AtomicInteger();
        final AtomicInteger mostInside = new AtomicInteger();
        final AtomicBoolean room = new AtomicBoolean(true);

        @Override
        public boolean hasRoom(Op op) {
            return room.get();
        }

        @Override
        public void submit(Op op, long position) {
            int now = inside.incrementAndGet();
            mostInside.accumulateAndGet(now, Math::max);
            submitted.add(op);
            positions.add(position);
            inside.decrementAndGet();
        }
    }

    @Test
    void oneThreadsAppendsAreSubmittedAtOnceInOrder() {
        Recorder r = new Recorder();
        SubmissionQueue<Op> q = new SubmissionQueue<>(8, r);
        for (int i = 0; i < 20; i++) {
            assertEquals(i, q.append(new Op(0, i)), "positions count up");
        }
        assertEquals(20, r.submitted.size(), "each append drained itself: nobody else was draining");
        for (int i = 0; i < 20; i++) {
            assertEquals(new Op(0, i), r.submitted.get(i));
            assertEquals(i, r.positions.get(i));
        }
        assertEquals(20, q.appended());
        assertEquals(20, q.drained());
        assertEquals(0, q.queued());
    }

    @Test
    void withoutRoomOperationsWaitInTheQueueAndTheNextDrainSubmitsThem() {
        Recorder r = new Recorder();
        SubmissionQueue<Op> q = new SubmissionQueue<>(8, r);
        r.room.set(false);
        q.append(new Op(0, 0));
        q.append(new Op(0, 1));
        assertEquals(List.of(), r.submitted, "no room: nothing submitted, and the appends returned");
        assertEquals(2, q.queued());
        r.room.set(true);
        q.drain(); // what a completion that frees room calls
        assertEquals(List.of(new Op(0, 0), new Op(0, 1)), r.submitted);
        assertEquals(0, q.queued());
    }

    @Test
    void manyThreadsAppendingAtOnceSubmitEveryOperationOnceInPositionOrderOneThreadAtATime() throws Exception {
        Recorder r = new Recorder();
        SubmissionQueue<Op> q = new SubmissionQueue<>(1 << 16, r);
        int threads = 8;
        int each = 20_000;
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        AtomicLong[] lastPosition = new AtomicLong[threads];
        for (int t = 0; t < threads; t++) {
            int me = t;
            lastPosition[t] = new AtomicLong(-1);
            ts.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < each; i++) {
                    long p = q.append(new Op(me, i));
                    assertTrue(p > lastPosition[me].get(), "a thread's own appends take rising positions");
                    lastPosition[me].set(p);
                    assertTrue(q.appended() > p, "appended() after an append covers it");
                }
            }));
        }
        start.countDown();
        for (Thread t : ts) {
            t.join(Duration.ofSeconds(60).toMillis());
            assertFalse(t.isAlive());
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> q.drained() == (long) threads * each);
        assertEquals(1, r.mostInside.get(), "never two threads submitting at once");
        assertEquals((long) threads * each, r.submitted.size(), "every operation submitted, once");
        int[] next = new int[threads];
        for (int k = 0; k < r.submitted.size(); k++) {
            assertEquals(k, r.positions.get(k), "in position order, none skipped");
            Op op = r.submitted.get(k);
            assertEquals(next[op.thread()]++, op.index(), "each thread's operations in its own order");
        }
    }

    @Test
    void onlyAProducerAWholeRingAheadOfTheDrainerWaitsAndItGoesOnOnceRoomComes() throws Exception {
        Recorder r = new Recorder();
        SubmissionQueue<Op> q = new SubmissionQueue<>(4, r);
        r.room.set(false);
        for (int i = 0; i < 4; i++) {
            q.append(new Op(0, i)); // fills the ring; no append waits
        }
        Thread fifth = Thread.ofVirtual().start(() -> q.append(new Op(1, 0)));
        await().atMost(Duration.ofSeconds(10)).until(() -> fifth.getState() == Thread.State.WAITING);
        assertEquals(5, q.appended(), "it claimed its position, then waited for its slot");
        r.room.set(true);
        q.drain();
        fifth.join(Duration.ofSeconds(10).toMillis());
        assertFalse(fifth.isAlive(), "woken once the drainer passed its slot");
        await().atMost(Duration.ofSeconds(10)).until(() -> q.drained() == 5);
        assertEquals(new Op(1, 0), r.submitted.get(4));
    }

    @Test
    void badInputIsRefusedByName() {
        Recorder r = new Recorder();
        assertEquals("capacity must be between 2 and 2^30, was 1",
                assertThrows(IllegalArgumentException.class, () -> new SubmissionQueue<>(1, r)).getMessage());
        SubmissionQueue<Op> q = new SubmissionQueue<>(3, r);
        assertEquals(4, q.capacity(), "rounded up to a power of two");
        assertEquals("op", assertThrows(NullPointerException.class, () -> q.append(null)).getMessage());
        assertEquals(0, q.appended(), "a refused append claims no position");
    }
}
