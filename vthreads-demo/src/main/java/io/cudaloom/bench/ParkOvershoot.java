package io.cudaloom.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;

/**
 * How late {@code LockSupport.parkNanos} returns on this machine, for a platform thread (the
 * scanner) and a virtual thread: the floor under any timed park the scanner's idle strategy
 * predicts. No project code in it. {@code java io.cudaloom.bench.ParkOvershoot [iterations]}.
 */
public final class ParkOvershoot {
    private ParkOvershoot() {}

    public static void main(String[] args) throws Exception {
        int iterations = args.length > 0 ? Integer.parseInt(args[0]) : 2_000;
        long[] targetsUs = {5, 20, 50, 100, 150};
        System.out.println("| thread | parkNanos | p50 late | p90 late | p99 late |");
        System.out.println("|---|---|---|---|---|");
        for (boolean virtual : new boolean[] {false, true}) {
            for (long us : targetsUs) {
                long[] late = new long[iterations];
                Runnable r = () -> {
                    for (int i = 0; i < iterations; i++) {
                        long t0 = System.nanoTime();
                        LockSupport.parkNanos(us * 1_000);
                        late[i] = System.nanoTime() - t0 - us * 1_000;
                    }
                };
                Thread t = virtual ? Thread.ofVirtual().start(r) : Thread.ofPlatform().start(r);
                t.join();
                Arrays.sort(late);
                System.out.printf(Locale.ROOT, "| %s | %d us | %.1f us | %.1f us | %.1f us |%n",
                        virtual ? "virtual" : "platform", us, late[iterations / 2] / 1e3,
                        late[iterations * 9 / 10] / 1e3, late[iterations * 99 / 100] / 1e3);
            }
        }
    }
}
