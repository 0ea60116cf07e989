package io.cudaloom.stress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Proves that the jcstress checks can fail: runs jcstress on the deliberately broken protocol
 * variants only (the {@code Broken*Test} classes of the test sources, whose META-INF/TestList
 * shadows the suite's when test-classes come first on the class path) and asserts that each of
 * them is reported with at least one FORBIDDEN outcome, by reading jcstress's results
 * ({@link JcstressSuite} {@code --expect-forbidden}), not by its exit code alone.
 *
 * <p>Mode: {@code jcstress.broken.args} (the pom's property), the same short mode the suite runs
 * in CI: {@code -m quick -sc false -iters 3 -time 300} gives each variant four JVM configurations
 * (interpreter, C1, C2, C2 with stress flags) of 3 x 300 ms. The narrowest race,
 * {@code BrokenArmedCountTest}, then shows thousands of forbidden outcomes on a 2-CPU machine
 * (about 1 in 1,000 samples, from the compiled configurations mostly), the two ABA variants
 * hundreds of thousands.
 */
class BrokenVariantsCaughtTest {

    static final List<String> BROKEN = List.of(
            "io.cudaloom.stress.jcstress.BrokenArmedCountTest",
            "io.cudaloom.reactor.BrokenLateDeliveryAbaTest",
            "io.cudaloom.reactor.BrokenAwaitAbaTest",
            "io.cudaloom.reactor.BrokenWaitGroupJoinTest",
            "io.cudaloom.reactor.BrokenWaitGroupRelayTest",
            "io.cudaloom.reactor.BrokenGroupSettleTest",
            "io.cudaloom.reactor.BrokenWaiterHandoffTest",
            "io.cudaloom.stress.jcstress.BrokenGroupCommitTest",
            "io.cudaloom.reactor.BrokenAdmissionProofTest",
            "io.cudaloom.stress.jcstress.BrokenLifetimeGuardTest",
            "io.cudaloom.reactor.BrokenParkGateScannerTest",
            "io.cudaloom.reactor.BrokenBlockingWaitTimeoutTest",
            "io.cudaloom.stress.jcstress.BrokenWakeBoardPlanTest",
            "io.cudaloom.stress.jcstress.BrokenOrderedReleaseTest",
            "io.cudaloom.stress.jcstress.BrokenSubmissionQueueTest",
            "io.cudaloom.stress.jcstress.BrokenSubmissionRoomTest",
            "io.cudaloom.stress.jcstress.BrokenBatchLeaveTest",
            "io.cudaloom.stress.jcstress.BrokenDrainHandOffTest",
            "io.cudaloom.stress.jcstress.BrokenDrainerPermitsTest",
            "io.cudaloom.stress.jcstress.BrokenDrainerPermitsRelistTest");

    @Test
    @Timeout(value = 8, unit = TimeUnit.MINUTES)
    void jcstressReportsEveryBrokenVariant() throws Exception {
        Path work = Path.of(System.getProperty("jcstress.work.dir", "target/jcstress-broken"));
        Files.createDirectories(work);
        String java = ProcessHandle.current().info().command().orElse(
                Path.of(System.getProperty("java.home"), "bin", "java").toString());

        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "-cp", testClassPathTestClassesFirst(),
                JcstressSuite.class.getName(), "--expect-forbidden"));
        cmd.addAll(Arrays.asList(System.getProperty("jcstress.broken.args",
                "-m quick -sc false -iters 3 -time 300").trim().split("\\s+")));
        cmd.addAll(List.of("-t", "Broken", "-r", work.resolve("results").toString()));

        Path log = work.resolve("jcstress-broken.log");
        Process p = new ProcessBuilder(cmd).directory(work.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        int exit = p.waitFor();
        String output = Files.readString(log);
        String summary = output.contains("CUDA-LOOM JCSTRESS SUMMARY")
                ? output.substring(output.indexOf("CUDA-LOOM JCSTRESS SUMMARY")) : output;
        System.out.println(summary);

        for (String test : BROKEN) {
            String simple = test.substring(test.lastIndexOf('.') + 1);
            assertTrue(summary.lines().anyMatch(l -> l.startsWith("| " + simple + " |") && l.contains("| CAUGHT (")),
                    simple + " not reported with a FORBIDDEN outcome; see " + log);
        }
        assertTrue(summary.contains(BROKEN.size() + " tests matched, " + BROKEN.size() + " ran"),
                "exactly the broken variants must run; see " + log);
        assertEquals(0, exit, "JcstressSuite --expect-forbidden exit code; see " + log);
    }

    /** The test class path, with target/test-classes first so its META-INF/TestList is the one read. */
    private static String testClassPathTestClassesFirst() throws Exception {
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String testClasses = OutcomeSpecTest.classesDir(BrokenVariantsCaughtTest.class).toString();
        List<String> entries = new ArrayList<>(Arrays.asList(cp.split(File.pathSeparator)));
        entries.remove(testClasses);
        entries.add(0, testClasses);
        return String.join(File.pathSeparator, entries);
    }
}
