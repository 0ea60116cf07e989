package io.cudaloom.bench;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code MinimalReactor} (the demo's floor end to end, compiled for Java 22 from
 * {@code src/main/java22}, so reached here by reflection) on its in-process stand-in: its
 * combining, room and scanner must serve every step of 10,000 virtual threads on one stream (every
 * drain stops at the room, so only wake-ups move the queue on) and on eight, with every check
 * passing, and every launch of the sweep's step. A lost drain or wake-up hangs a thread, which the timeout turns into a failure.
 */
class MinimalReactorTest {
    @Test
    @Timeout(120)
    void everyStepOfTenThousandThreadsCompletesAndChecksOnTheStandIn() throws Exception {
        Method run = standIn();
        for (int streams : new int[] {1, 8}) {
            String report = invoke(run, 10_000, 3, streams, -1, 0);
            assertTrue(report.contains("completions              30,000 (0 mismatches)"), report);
            assertTrue(report.contains(streams + " streams"), report);
        }
    }

    /** The sweep's step (a spin kernel launched and waited for): 2 warm-up launches and 3 measured per thread. */
    @Test
    @Timeout(120)
    void everyLaunchOfTheSweepsStepCompletesOnTheStandIn() throws Exception {
        String report = invoke(standIn(), 10_000, 3, 2, 20, 0);
        assertTrue(report.contains("completions              50,000 (0 mismatches)"), report);
        assertTrue(report.contains("spin_kernel(20 us) launched and waited for"), report);
        assertTrue(report.contains("3 launches of 20 us kernels per thread, after a warm-up of 2 of 10 us"), report);
    }

    /**
     * With at most one thread draining at once across eight streams (a stream whose thread finds no
     * permit is listed, and the permit's holder drains every listed one): every step of 10,000
     * threads still completes and checks. The premise, that threads did find the permit taken, needs
     * two carriers or more (with one, no two drains overlap).
     */
    @Test
    @Timeout(120)
    void aDeviceWideCapOnDrainersLeavesNoStreamUndrained() throws Exception {
        Method run = standIn();
        Assumptions.assumeTrue(Runtime.getRuntime().availableProcessors() >= 2, () -> {
            String reason = "skipped: one CPU, so one carrier: no two drains overlap and the cap is never reached";
            System.out.println("MinimalReactorTest " + reason);
            return reason;
        });
        String report = invoke(run, 10_000, 3, 8, -1, 1);
        assertTrue(report.contains("completions              30,000 (0 mismatches)"), report);
        assertTrue(report.contains("8 streams (at most 1 draining at once)"), report);
        java.util.regex.Matcher taken = java.util.regex.Pattern.compile("; ([0-9,]+) times every permit was taken")
                .matcher(report);
        assertTrue(taken.find() && Long.parseLong(taken.group(1).replace(",", "")) > 0,
                "premise: threads found the permit taken and left their streams to its holder: " + report);
    }

    private static Method standIn() {
        try {
            return Class.forName("io.cudaloom.bench.MinimalReactor").getMethod("runOnStandIn", int.class, int.class,
                    int.class, int.class, int.class);
        } catch (ReflectiveOperationException e) {
            String reason = "skipped: io.cudaloom.bench.MinimalReactor is not compiled (it needs a JDK >= 22 to build): " + e;
            System.out.println("MinimalReactorTest " + reason);
            Assumptions.abort(reason);
            throw new AssertionError(e);
        }
    }

    private static String invoke(Method run, int threads, int iterations, int streams, int kernelUs, int drainers)
            throws Exception {
        try {
            return (String) run.invoke(null, threads, iterations, streams, kernelUs, drainers);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        }
    }
}
