package io.cudaloom.reactor;

import io.cudaloom.ReactorConfig;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * End-to-end check of the wake-up hand-off (SlotTable ordering 9): virtual threads wait for a
 * delivery made by one platform thread, for {@code seconds}, and every one of them must finish.
 * A waiter that stays parked once the run stops, with its delivery already stored, is a lost
 * wake-up: reported as {@code HUNG}, exit code 1 (it never finishes by itself, as in the JDK's
 * own {@code ParkLoops} test, so the check is "finished or not", not a timing).
 *
 * <p>Modes:
 * <ul>
 *   <li>{@code release}: the hand-off the reactor used before the fix (a release store of the
 *       ticket, then {@code unpark}), copied here and only here. Waiters spin briefly
 *       (1 us by default) then park, so a delivery that lands during the spin leaves a stale
 *       permit for the next park, and a delivery often lands just as the spin ends and the
 *       waiter consumes that permit: the race in which the release store loses wake-ups. (With
 *       a 20 us spin almost every delivery lands inside the spin, and 16 runs of 15 s showed no
 *       hang; with 1 us, several hung threads per minute on 2 CPUs.)
 *   <li>{@code waiter}: the same loop with the real {@link Waiter} ({@link Waiter#complete}).
 *   <li>{@code reactor}: the real reactor on the simulated device: each virtual thread launches an
 *       empty kernel on one of 8 streams and awaits it ({@code GpuStream.await()}), with the
 *       waiter spin given.
 * </ul>
 *
 * <p>Usage: {@code LostWakeupStress release|waiter|reactor [seconds=15] [threads=200]
 * [spin us=1]}; run with {@code -Djdk.virtualThreadScheduler.parallelism=2}. The loop script
 * {@code stress/lost-wakeup-runs.sh} runs it many times and counts hung runs.
 */
public final class LostWakeupStress {
    private LostWakeupStress() {}

    /** The hand-off under test: a record the waiter polls, delivered and unparked by another thread. */
    interface Record {
        void reset();

        void deliver(long ticket);

        boolean isDelivered(long ticket);

        Thread thread();
    }

    /** The old, broken hand-off: release store, then unpark. Kept only here, to show the loss. */
    static final class ReleaseStoreRecord implements Record {
        private static final VarHandle DELIVERED;

        static {
            try {
                DELIVERED = MethodHandles.lookup().findVarHandle(ReleaseStoreRecord.class, "delivered", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final Thread thread = Thread.currentThread();
        @SuppressWarnings("unused") // through DELIVERED
        private volatile long delivered = Waiter.NONE;

        @Override
        public void reset() {
            DELIVERED.set(this, Waiter.NONE);
        }

        @Override
        public void deliver(long ticket) {
            DELIVERED.setRelease(this, ticket); // the bug: not ordered before unpark's permit read
            LockSupport.unpark(thread);
        }

        @Override
        public boolean isDelivered(long ticket) {
            return (long) DELIVERED.getAcquire(this) == ticket;
        }

        @Override
        public Thread thread() {
            return thread;
        }
    }

    /** The real record. */
    static final class RealWaiterRecord implements Record {
        private final Waiter waiter = new Waiter(Thread.currentThread());

        @Override
        public void reset() {
            waiter.reset();
        }

        @Override
        public void deliver(long ticket) {
            waiter.complete(ticket, null);
        }

        @Override
        public boolean isDelivered(long ticket) {
            return waiter.isDelivered(ticket);
        }

        @Override
        public Thread thread() {
            return waiter.thread;
        }
    }

    private record Request(Record record, long ticket) {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || !List.of("release", "waiter", "reactor").contains(args[0])) {
            System.err.println("usage: LostWakeupStress release|waiter|reactor [seconds=15] [threads=200] [spin us=1]");
            System.exit(2);
        }
        String mode = args[0];
        long seconds = args.length > 1 ? Long.parseLong(args[1]) : 15;
        int threads = args.length > 2 ? Integer.parseInt(args[2]) : 200;
        long spinNanos = (args.length > 3 ? Long.parseLong(args[3]) : 1) * 1_000L;
        Result r = mode.equals("reactor") ? runReactor(seconds, threads, spinNanos) : runModel(mode, seconds, threads, spinNanos);
        System.out.printf("%s: %,d hand-offs in %d s, %d threads, spin %d us, carriers %s: %d hung%n", mode, r.handoffs,
                seconds, threads, spinNanos / 1000, System.getProperty("jdk.virtualThreadScheduler.parallelism", "default"),
                r.hung);
        if (r.hung > 0) {
            System.out.println("HUNG: " + r.hung + " waiters parked for good with their delivery stored");
        }
        System.exit(r.hung > 0 ? 1 : 0);
    }

    record Result(long handoffs, int hung) {}

    static Result runModel(String mode, long seconds, int threads, long spinNanos) throws InterruptedException {
        ConcurrentLinkedQueue<Request> requests = new ConcurrentLinkedQueue<>();
        LongAdder handoffs = new LongAdder();
        Thread scanner = Thread.ofPlatform().daemon().name("model-scanner").start(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                Request q = requests.poll();
                if (q == null) {
                    Thread.onSpinWait();
                } else {
                    q.record.deliver(q.ticket);
                }
            }
        });
        long stopAt = System.nanoTime() + seconds * 1_000_000_000L;
        List<Thread> workers = new ArrayList<>();
        Map<Thread, Record> records = new ConcurrentHashMap<>();
        Map<Thread, Long> waitingFor = new ConcurrentHashMap<>();
        for (int i = 0; i < threads; i++) {
            Thread t = Thread.ofVirtual().unstarted(() -> {
                Record rec = mode.equals("release") ? new ReleaseStoreRecord() : new RealWaiterRecord();
                records.put(Thread.currentThread(), rec);
                for (long k = 1; System.nanoTime() - stopAt < 0; k++) {
                    waitingFor.put(Thread.currentThread(), k);
                    rec.reset();
                    requests.add(new Request(rec, k));
                    long end = System.nanoTime() + spinNanos;
                    while (!rec.isDelivered(k) && System.nanoTime() - end < 0) {
                        Thread.onSpinWait();
                    }
                    while (!rec.isDelivered(k)) {
                        LockSupport.park(rec);
                    }
                    handoffs.increment();
                }
            });
            workers.add(t);
            t.start();
        }
        int hung = awaitWorkers(workers, seconds, t -> records.get(t).isDelivered(waitingFor.get(t))
                ? "its delivery is stored" : "NOT delivered");
        scanner.interrupt();
        return new Result(handoffs.sum(), hung);
    }

    static Result runReactor(long seconds, int threads, long spinNanos) throws InterruptedException {
        ReactorConfig config = ReactorConfig.builder()
                .capacity(Math.max(4096, threads * 2))
                .waiterSpin(Duration.ofNanos(spinNanos), Math.max(1, Runtime.getRuntime().availableProcessors() / 2))
                .build();
        try (SimulatedDevice device = SimulatedDevice.create(config)) {
            List<SimulatedStream> streams = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                streams.add(device.newStream());
            }
            LongAdder handoffs = new LongAdder();
            long stopAt = System.nanoTime() + seconds * 1_000_000_000L;
            List<Thread> workers = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                SimulatedStream stream = streams.get(i % streams.size());
                Thread t = Thread.ofVirtual().unstarted(() -> {
                    try {
                        while (System.nanoTime() - stopAt < 0) {
                            stream.launchKernel(Duration.ZERO);
                            stream.await();
                            handoffs.increment();
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                workers.add(t);
                t.start();
            }
            int hung = awaitWorkers(workers, seconds, t -> "reactor " + device.reactor().stats());
            return new Result(handoffs.sum(), hung);
        }
    }

    /**
     * Waits for every worker: they stop starting hand-offs after {@code seconds}; one still alive 10 s
     * later is parked with nobody to wake it (each hand-off takes microseconds). Hung workers are
     * printed, then unparked by hand, which shows that only their wake-up was missing.
     */
    private static int awaitWorkers(List<Thread> workers, long seconds, Function<Thread, String> state)
            throws InterruptedException {
        long deadline = System.nanoTime() + (seconds + 10) * 1_000_000_000L;
        List<Thread> hung = new ArrayList<>();
        for (Thread w : workers) {
            long left = deadline - System.nanoTime();
            if (!w.join(Duration.ofNanos(Math.max(1, left)))) {
                hung.add(w);
            }
        }
        for (Thread w : hung) {
            System.out.println("  stuck: " + w + " " + w.getState() + ", " + state.apply(w));
            LockSupport.unpark(w);
        }
        int freed = 0;
        for (Thread w : hung) {
            if (w.join(Duration.ofSeconds(5))) {
                freed++;
            }
        }
        if (!hung.isEmpty()) {
            System.out.println("  a manual unpark freed " + freed + " of " + hung.size());
        }
        return hung.size();
    }
}
