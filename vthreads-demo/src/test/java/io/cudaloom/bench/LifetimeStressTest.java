package io.cudaloom.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link LifetimeStress} on the simulated device, small: each scenario passes in this JVM, {@code all}
 * runs them in child JVMs and reports the three verdicts, and bad usage is exit code 2. The GPU
 * runs (10,000 waiters, 60 s of churn) are for the GPU machine (see the class comment).
 */
class LifetimeStressTest {

    private static String run(int expectedExit, String... args) throws Exception {
        PrintStream old = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int exit;
        try (PrintStream capture = new PrintStream(out, true, StandardCharsets.UTF_8)) {
            System.setOut(capture);
            exit = LifetimeStress.run(args);
        } finally {
            System.setOut(old);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        System.out.print(text);
        assertEquals(expectedExit, exit, text);
        return text;
    }

    @ParameterizedTest
    @ValueSource(strings = {"churn", "fault", "close"})
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void eachScenarioPassesOnTheSimulatedDevice(String scenario) throws Exception {
        String out = run(0, scenario, "--device", "sim", "--seconds", "2", "--waiters", "300");
        assertTrue(out.lines().anyMatch(l -> l.startsWith("PASS " + scenario + ": ")), out);
    }

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void allRunsEachScenarioInAChildJvm() throws Exception {
        String out = run(0, "all", "--device", "sim", "--seconds", "1", "--waiters", "100");
        for (String scenario : new String[] {"churn", "fault", "close"}) {
            assertTrue(out.contains("== " + scenario + " (child JVM"), out);
            assertTrue(out.lines().anyMatch(l -> l.startsWith("PASS " + scenario + ": ")), out);
        }
        assertTrue(out.contains("ALL PASSED"), out);
    }

    @Test
    void badUsageIsExitCode2() throws Exception {
        run(2);
        run(2, "sideways");
        run(2, "churn", "--device", "tpu");
        run(2, "churn", "--seconds");
        run(2, "churn", "--color", "red");
    }
}
