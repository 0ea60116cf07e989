package io.cudaloom.bench;

import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;

/**
 * How late {@code LockSupport.parkNanos} returns on this machine, for a platform thread (the
 * scanner) and a virtual thread: the floor under any timed park the scanner's idle strategy
 * predicts; no project code in the first and last rows. The middle rows set the thread's slack to
 * 1 us first, as the scanner does ({@code io.cudaloom.reactor.TimerSlack}).
 * {@code java --enable-native-access=ALL-UNNAMED io.cudaloom.bench.ParkOvershoot [iterations]}.
 */
public final class ParkOvershoot {
    private ParkOvershoot() {}

    /** The library's own setting of the scanner's slack (package-private there, hence reflection). */
    static boolean setSlack(long nanos) {
        try {
            Method m = Class.forName("io.cudaloom.reactor.TimerSlack").getDeclaredMethod("setForCurrentThread", long.class);
            m.setAccessible(true);
            return (boolean) m.invoke(null, nanos);
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    public static void main(String[] args) throws Exception {
        int iterations = args.length > 0 ? Integer.parseInt(args[0]) : 2_000;
        long[] targetsUs = {5, 20, 50, 100, 150};
        System.out.println("| thread | parkNanos | p50 late | p90 late | p99 late |");
        System.out.println("|---|---|---|---|---|");
        for (int kind = 0; kind < 3; kind++) {
            boolean virtual = kind == 2;
            boolean slack = kind == 1; // the scanner's setting: io.cudaloom.reactor.TimerSlack, 1 us
            for (long us : targetsUs) {
                long[] late = new long[iterations];
                Runnable r = () -> {
                    if (slack && !setSlack(1_000)) {
                        throw new IllegalStateException("timer slack not set (needs Linux, JDK 22+, --enable-native-access)");
                    }
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
                        virtual ? "virtual" : slack ? "platform, slack 1 us" : "platform", us, late[iterations / 2] / 1e3,
                        late[iterations * 9 / 10] / 1e3, late[iterations * 99 / 100] / 1e3);
            }
        }
    }
}
