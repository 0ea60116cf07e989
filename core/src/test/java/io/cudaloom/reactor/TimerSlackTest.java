package io.cudaloom.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The scanner's timer slack ({@link TimerSlack}): set per thread, where the platform allows it. */
class TimerSlackTest {

    private static long[] onFreshThread(Runnable before, long set) throws InterruptedException {
        AtomicLong initial = new AtomicLong(), ok = new AtomicLong(), after = new AtomicLong();
        Thread t = Thread.ofPlatform().start(() -> {
            before.run();
            initial.set(TimerSlack.ofCurrentThread());
            ok.set(TimerSlack.setForCurrentThread(set) ? 1 : 0);
            after.set(TimerSlack.ofCurrentThread());
        });
        t.join();
        return new long[] {initial.get(), ok.get(), after.get()};
    }

    @Test
    void setsTheCallingThreadsSlackOnlyOnLinuxWithNativeAccess() throws Exception {
        boolean linux = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux");
        assumeTrue(linux && Runtime.version().feature() >= 22, "needs Linux and JDK 22+ (the foreign function API)");
        // surefire runs with --enable-native-access=ALL-UNNAMED (the root pom's argLine)
        long[] r = onFreshThread(() -> {}, 1_000);
        assertTrue(r[0] > 1_000, "a new thread starts with the default slack (50 us), was " + r[0]);
        assertEquals(1, r[1], "set");
        assertEquals(1_000, r[2], "the slack after setting it");
        long[] other = onFreshThread(() -> {}, 2_000);
        assertEquals(r[0], other[0], "per thread: another thread's slack is untouched");
    }
}
