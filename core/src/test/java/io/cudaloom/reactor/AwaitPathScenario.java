package io.cudaloom.reactor;

import io.cudaloom.GpuEvent;
import io.cudaloom.ReactorStats;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The scenario {@link AwaitPathTest} traces, run in a JVM of its own under a debugger: one default
 * {@link GpuEvent#await()} on a virtual thread, on the simulated device (default {@link io.cudaloom.ReactorConfig}:
 * combining submission, coalescing on) that joins another waiter's armed group and parks, then is
 * woken when the stream's held work is released and the scanner retires that group.
 *
 * <p>With the argument {@code lone}, no other waiter: the traced await finds no group, arms one of
 * its own (its flag write appended behind the held work), spins, and parks; its group's retirement
 * is the scanner's side.
 *
 * <p>Run twice: a warm-up round (classes loaded and initialized, nothing traced), then the traced
 * round, which calls the marker methods the test sets its breakpoints on: {@link #waiterTraceBegins}
 * right before the traced await, {@link #scannerTraceBegins} on the releasing thread right before
 * the stream's work is released, and {@link #waiterTraceEnds} right after the await returned.
 */
public final class AwaitPathScenario {
    private static final long LIMIT_NANOS = TimeUnit.SECONDS.toNanos(20);

    private AwaitPathScenario() {
    }

    /**
     * @param args {@code joined} (the default: the traced await joins another waiter's armed group)
     *     or {@code lone} (no other waiter: the traced await arms a group of its own, spins, parks)
     */
    public static void main(String[] args) throws Exception {
        boolean lone = args.length > 0 && args[0].equals("lone");
        try (SimulatedDevice device = SimulatedDevice.create()) {
            SimulatedStream stream = device.newStream();
            round(device, stream, false, lone);
            round(device, stream, true, lone);
        }
        System.out.println("scenario done");
    }

    private static void round(SimulatedDevice device, SimulatedStream stream, boolean traced, boolean lone)
            throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        stream.launch(() -> { // the stream's work, held until released below
            try {
                gate.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        // The other waiter (joined): it finds no group, arms one of its own (its flag write queued
        // behind the held work) and, once its spin or predicted sleep is over, parks untimed.
        Thread other = Thread.ofVirtual().name("other-waiter").unstarted(() -> {
            try {
                stream.event().await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        if (!lone) {
            other.start();
            waitUntil(() -> device.reactor().stats().armedNow() >= 1 && other.getState() == Thread.State.WAITING,
                    "the other waiter's group armed and its thread parked");
        }
        ReactorStats before = device.reactor().stats();
        long coalescedBefore = before.coalesced();
        GpuEvent event = stream.event(); // before the traced call: the event's allocation is not the await
        // The traced await runs on a virtual thread, as the library's callers' do.
        CountDownLatch go = new CountDownLatch(1);
        Thread waiter = Thread.ofVirtual().name("traced-waiter").start(() -> {
            try {
                go.await();
                if (traced) {
                    waiterTraceBegins();
                }
                event.await();
                if (traced) {
                    waiterTraceEnds();
                }
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        Thread releaser = Thread.ofPlatform().name("releaser").start(() -> {
            // Joined: this waiter joined the armed group (counted coalesced) and parked. Lone: it armed a
            // group of its own and parked after its spin. Now release the work.
            waitUntil(() -> (lone ? device.reactor().stats().armedNow() >= 1
                            : device.reactor().stats().coalesced() > coalescedBefore)
                    && waiter.getState() == Thread.State.WAITING, "the traced waiter registered and parked");
            if (traced) {
                scannerTraceBegins();
            }
            gate.countDown();
        });
        go.countDown();
        waiter.join();
        releaser.join();
        if (!lone) {
            other.join();
        }
        ReactorStats after = device.reactor().stats();
        boolean asMeant = lone ? after.coalesced() == coalescedBefore && after.registrations() == before.registrations() + 1
                : after.coalesced() == coalescedBefore + 1;
        if (!asMeant || after.inlineCompletions() != before.inlineCompletions()) {
            throw new IllegalStateException("not the scenario: " + before + " -> " + after);
        }
        System.out.println("round done" + (lone ? ", lone" : ", joined") + (traced ? " (traced)" : " (warm-up)") + ": "
                + after);
    }

    private static void waitUntil(BooleanSupplier condition, String what) {
        long start = System.nanoTime();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - start > LIMIT_NANOS) {
                throw new IllegalStateException("not reached in 20 s: " + what);
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /** Breakpoint: the traced await is called next, on this thread. */
    static void waiterTraceBegins() {
    }

    /** Breakpoint: the traced await returned. */
    static void waiterTraceEnds() {
    }

    /** Breakpoint: the stream's held work is released next (the scanner's side is traced from here). */
    static void scannerTraceBegins() {
    }
}
