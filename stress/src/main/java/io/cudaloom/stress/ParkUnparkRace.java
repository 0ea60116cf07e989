package io.cudaloom.stress;

import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A JDK-only reproducer of the lost wake-up in docs/LOST-WAKEUP.md, with no cuda-loom code: virtual
 * threads hand a request to one platform thread, spin briefly for the answer, then park; the
 * platform thread stores the answer and unparks. With {@code timed} parks it counts the wake-ups
 * that only the timer delivered although the unpark had returned more than 5 ms before (lost);
 * with untimed parks a lost one hangs the run, reported after 30 s.
 *
 * <p>Usage: {@code ParkUnparkRace [threads=200] [handoffs per thread=3000] [spin ns=20000]
 * [timed|untimed]}. On JDK 25.0.3, 2 vCPUs, {@code -Djdk.virtualThreadScheduler.parallelism=1}
 * (one carrier, so a woken thread never waits long for one): 171 to 1,171 of 600,000 timed
 * wake-ups lost per run (4 runs); none with {@code spin 0} and 16 threads.
 */
public final class ParkUnparkRace {
    private ParkUnparkRace() {}

    private static final class Record {
        final Thread thread = Thread.currentThread();
        volatile long answer = -1;
        volatile long unparkedAt;
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        int handoffs = args.length > 1 ? Integer.parseInt(args[1]) : 3000;
        long spinNanos = args.length > 2 ? Long.parseLong(args[2]) : 20_000L;
        boolean timed = args.length <= 3 || args[3].equals("timed");
        long timeout = 20_000_000L;
        ConcurrentLinkedQueue<Object[]> requests = new ConcurrentLinkedQueue<>();
        AtomicLong lost = new AtomicLong();
        Thread answerer = Thread.ofPlatform().daemon().start(() -> {
            for (;;) {
                Object[] r = requests.poll();
                if (r == null) {
                    Thread.onSpinWait();
                    continue;
                }
                Record rec = (Record) r[0];
                rec.answer = (Long) r[1];
                LockSupport.unpark(rec.thread);
                rec.unparkedAt = System.nanoTime();
            }
        });
        Thread[] workers = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            workers[i] = Thread.ofVirtual().start(() -> {
                Record rec = new Record();
                for (long k = 0; k < handoffs; k++) {
                    rec.answer = -1;
                    requests.add(new Object[] {rec, k});
                    long end = System.nanoTime() + spinNanos;
                    while (rec.answer != k && System.nanoTime() - end < 0) {
                        Thread.onSpinWait();
                    }
                    while (rec.answer != k) {
                        if (!timed) {
                            LockSupport.park(rec);
                            continue;
                        }
                        long parkedAt = System.nanoTime();
                        LockSupport.parkNanos(rec, timeout);
                        long now = System.nanoTime();
                        if (now - parkedAt >= timeout && rec.answer == k && now - rec.unparkedAt > 5_000_000L) {
                            lost.incrementAndGet();
                        }
                    }
                }
            });
        }
        long t0 = System.nanoTime();
        for (Thread w : workers) {
            long left = Duration.ofSeconds(30).toNanos() - (System.nanoTime() - t0);
            if (!w.join(Duration.ofNanos(Math.max(1, left)))) {
                System.out.println("HUNG: a worker is still parked after 30 s although its answer was delivered"
                        + " (" + w.getState() + ")");
                System.exit(1);
            }
        }
        System.out.printf("%s parks, %d threads x %d hand-offs, spin %d ns: %.2f s, %d wake-ups lost%n",
                timed ? "timed" : "untimed", threads, handoffs, spinNanos, (System.nanoTime() - t0) / 1e9, lost.get());
        answerer.interrupt();
    }
}
