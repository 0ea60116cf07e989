package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The demo's command line end to end: exit codes, usage, and the printed table. */
class DemoMainTest {

    private record Outcome(int code, String out, String err) {}

    private static Outcome run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = DemoMain.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Outcome(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void invalidFlagIsOneLineOnStderrAndExitsWith2() {
        Outcome o = run("--threads", "many");
        assertEquals(2, o.code());
        assertEquals("error: --threads needs a whole number, was 'many' (--help lists the options)"
                + System.lineSeparator(), o.err());
        assertEquals("", o.out(), "nothing on stdout for a usage error");
    }

    @Test
    void equalsFormWorksEndToEnd() {
        Outcome o = run("--device=sim", "--threads=10", "--iterations=1", "--kernel-us=0");
        assertEquals(0, o.code(), o.out() + o.err());
        assertTrue(o.out().contains("10 virtual threads x 1 iterations"), o.out());
    }

    @Test
    void serveOnABusyPortNamesThePortAndHowToChooseAnother() throws IOException {
        try (ServerSocket busy = new ServerSocket(0, 50, InetAddress.getByName(DemoServer.HOST))) {
            int port = busy.getLocalPort();
            for (String mode : new String[] {"--serve", "--load"}) {
                Outcome o = run(mode, "--port=" + port, "--device", "sim");
                assertEquals(1, o.code(), mode + ": " + o.err());
                List<String> lines = o.err().lines().toList();
                assertEquals("error: port " + port + " on 127.0.0.1 is already in use; choose another with"
                        + " --port P (--port 0 takes any free port)", lines.get(lines.size() - 1), o.err());
                assertTrue(lines.size() <= 2, "at most the device line before the error: " + o.err());
                assertEquals("", o.out(), mode);
            }
        }
    }

    @Test
    void mainExitsWithTheCodeAndWritesItForMaven(@TempDir Path dir) throws Exception {
        // A child JVM, because main calls System.exit: -Pdemo relies on both the exit code file
        // (Maven exits with its code) and the program's own exit status.
        Path codeFile = dir.resolve("demo-exit-code");
        Path errFile = dir.resolve("stderr");
        Process p = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(),
                "-cp", System.getProperty("java.class.path"),
                "-D" + DemoMain.EXIT_CODE_FILE_PROPERTY + "=" + codeFile,
                DemoMain.class.getName(), "--threads", "x")
                .redirectError(errFile.toFile())
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the demo JVM did not end");
        assertEquals(2, p.exitValue());
        assertEquals("2", Files.readString(codeFile).strip());
        assertEquals(List.of("error: --threads needs a whole number, was 'x' (--help lists the options)"),
                Files.readAllLines(errFile));
    }

    @Test
    void unknownFlagExitsWith2() {
        Outcome o = run("--gpu");
        assertEquals(2, o.code());
        assertTrue(o.err().contains("unknown option '--gpu'"), o.err());
    }

    @Test
    void aMissingCudaDeviceIsOneLineAndExitCode1() {
        org.junit.jupiter.api.Assumptions.assumeFalse(io.cudaloom.cuda.Cuda.isAvailable(), "this machine has a GPU");
        Outcome o = run("--device", "cuda", "--threads", "1");
        assertEquals(1, o.code());
        assertTrue(o.err().startsWith("error: cannot open the cuda device: "), o.err());
        assertEquals(1, o.err().lines().count(), o.err());
        assertEquals("", o.out());
    }

    @Test
    void helpPrintsUsageOnStdoutAndExitsWith0() {
        Outcome o = run("--help");
        assertEquals(0, o.code());
        assertTrue(o.out().contains("--threads N"), o.out());
        assertTrue(o.out().contains("--load"), o.out());
    }

    @Test
    void smallRunOnTheSimulatedDevicePrintsTheTable() {
        Outcome o = run("--device", "sim", "--threads", "2000", "--iterations", "3", "--kernel-us", "0");
        assertEquals(0, o.code(), o.out() + o.err());
        String out = o.out();
        assertTrue(out.contains("2,000 virtual threads x 3 iterations on simulated device"), out);
        assertTrue(out.contains("completions              6,000 (6,000 verified, 0 mismatches, 0 errors)"), out);
        for (String row : new String[] {"completions/s", "await latency p50", "await latency p90",
                "await latency p99", "process CPU time", "fallbacks"}) {
            assertTrue(out.contains("  " + row), "row " + row + " in\n" + out);
        }
        assertTrue(out.contains("slots in use at end      0  (armed 0"), out);
        assertTrue(out.endsWith("result: OK" + System.lineSeparator()), out);
        // No platform thread per waiter: 2,000 virtual threads ran on a few dozen platform threads.
        Matcher m = Pattern.compile("peak platform threads\\s+(\\d+)").matcher(out);
        assertTrue(m.find(), out);
        int peak = Integer.parseInt(m.group(1));
        assertTrue(peak > 0 && peak < 200, "peak platform threads " + peak);
        // Progress went to stderr, the table to stdout.
        assertTrue(o.err().contains("6,000 / 6,000 awaits done"), o.err());
        assertTrue(!out.contains("\r"), "no progress line on stdout");
        // Steady state: the warm-up is named, and the summary states cores busy.
        assertTrue(out.contains("  warm-up                  the first iteration of each thread: 2,000 completions in "), out);
        assertTrue(out.contains("  steady state             iterations 2-3 of 3: 4,000 completions in "), out);
        Matcher summary = Pattern.compile("(?m)^summary: steady state \\(iterations 2-3 of 3, after a warm-up of 1"
                + " iteration per thread\\): [0-9,]+ completions/s, [0-9,.]+ (us|ms) CPU per completion,"
                + " ([0-9.]+) cores busy$").matcher(out);
        assertTrue(summary.find(), out);
        assertTrue(Double.parseDouble(summary.group(2)) > 0, "cores busy " + summary.group(2));
        for (String row : new String[] {"CPU per completion", "cores busy"}) {
            assertTrue(out.contains("  " + row + " "), "row " + row + " in\n" + out);
        }
        assertFalse(o.err().contains("\r"), "stderr is no console here: plain lines only");
    }

    @Test
    void aDemoWhoseStreamsAreFilesPrintsPlainLinesOnly(@TempDir Path dir) throws Exception {
        // A child JVM with stdout and stderr redirected to files: System.err is the real one, and
        // no console, so progress must not use carriage returns.
        Path outFile = dir.resolve("stdout");
        Path errFile = dir.resolve("stderr");
        Process p = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(),
                "-cp", System.getProperty("java.class.path"), DemoMain.class.getName(),
                "--device", "sim", "--threads", "300", "--iterations", "4", "--warmup", "2", "--kernel-us", "2000")
                .redirectOutput(outFile.toFile())
                .redirectError(errFile.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .start();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the demo JVM did not end");
        String out = Files.readString(outFile);
        String err = Files.readString(errFile);
        assertEquals(0, p.exitValue(), out + err);
        assertFalse(err.contains("\r") || out.contains("\r"), "carriage return in\n" + err);
        assertTrue(err.contains("warm-up: the first 2 iterations of each thread"), err);
        assertTrue(err.contains("1,200 / 1,200 awaits done in "), err);
        assertTrue(out.contains("summary: steady state (iterations 3-4 of 4, after a warm-up of 2 iterations per thread): "), out);
        assertTrue(out.contains(" cores busy" + System.lineSeparator() + System.lineSeparator() + "side by side: "), out);
        assertTrue(out.endsWith(System.lineSeparator() + "result: OK" + System.lineSeparator()), out);
    }

    @Test
    void theBaselineRunsTheSameStepsOnAPlatformPoolAndTheTablesSitSideBySide(@TempDir Path dir) throws IOException {
        Path report = dir.resolve("sub/r.html");
        Outcome o = run("--device", "sim", "--threads", "500", "--iterations", "3", "--kernel-us", "0", "--pool", "16",
                "--report", report.toString());
        assertEquals(0, o.code(), o.out() + o.err());
        String out = o.out();
        assertTrue(o.err().contains("baseline: the same 1,500 steps on a pool of 16 platform threads"), o.err());
        List<String> lines = out.lines().toList();
        int at = lines.indexOf("side by side: the same 1,500 steps (launch, copy, wait, verify), waited for two ways");
        assertTrue(at > 0, out);
        assertTrue(lines.get(at + 1).contains("await(), 500 virtual threads")
                && lines.get(at + 1).contains("synchronize(), 16 platform threads"), lines.get(at + 1));
        for (int i = 0; i < SideBySide.ROWS.size(); i++) {
            assertTrue(lines.get(at + 2 + i).startsWith("  " + SideBySide.ROWS.get(i) + " "), lines.get(at + 2 + i));
        }
        assertTrue(lines.get(at + 2 + 4).matches("  waiting at once +500 +16"), lines.get(at + 2 + 4));
        assertTrue(lines.get(at + 2 + SideBySide.ROWS.size()).startsWith("  with cuda-loom: "), out);
        assertTrue(out.endsWith("result: OK" + System.lineSeparator()), out);
        assertEquals(1, Pattern.compile("(?m)^result: ").matcher(out).results().count(), "one verdict");
        // The page holds the numbers the run printed, and both runs' latency series.
        assertTrue(o.err().contains("report: " + report.toAbsolutePath()), o.err());
        String html = Files.readString(report);
        for (int i = 0; i < SideBySide.ROWS.size(); i++) {
            String[] cells = lines.get(at + 2 + i).substring(2 + 24).trim().split(" {2,}");
            assertEquals(2, cells.length, lines.get(at + 2 + i));
            for (String cell : cells) {
                assertTrue(html.contains("<td>" + cell + "</td>"), SideBySide.ROWS.get(i) + " " + cell);
            }
        }
        assertEquals(2, Pattern.compile("<polyline class=\"series\"").matcher(html).results().count());
    }

    @Test
    void baselineOffSkipsIt() {
        Outcome o = run("--device", "sim", "--threads", "50", "--iterations", "2", "--kernel-us", "0", "--baseline", "off");
        assertEquals(0, o.code(), o.out() + o.err());
        assertFalse(o.out().contains("side by side"), o.out());
        assertFalse(o.err().contains("baseline"), o.err());
        assertTrue(o.out().endsWith("result: OK" + System.lineSeparator()), o.out());
    }

    @Test
    void withoutAGpuAutoSaysSoInOnePlainLine() {
        String why = DemoMain.cudaUnavailableReason();
        org.junit.jupiter.api.Assumptions.assumeTrue(why != null, "a CUDA device is usable here: nothing to fall back from");
        Outcome o = run("--threads", "10", "--iterations", "1", "--baseline", "off");
        assertEquals(0, o.code(), o.out() + o.err());
        String first = o.err().lines().findFirst().orElse("");
        assertEquals("no GPU found (" + why + "): running on the simulated device", first);
        assertFalse(o.err().contains("WARNING"), o.err());
    }

    @Test
    void theBatchedRunDoesTheSameStepsInFewLaunchesAndSitsBesideThePerStepRun(@TempDir Path dir) throws IOException {
        Path report = dir.resolve("b.html");
        Outcome o = run("--device", "sim", "--threads", "2000", "--iterations", "3", "--kernel-us", "0",
                "--baseline", "off", "--batch", "64", "--report", report.toString());
        assertEquals(0, o.code(), o.out() + o.err());
        String out = o.out();
        Matcher m = Pattern.compile("(?m)^side by side: the same 6,000 steps, one launch each or batched \\(([0-9,]+) batches"
                + " of up to 64\\)$").matcher(out);
        assertTrue(m.find(), out);
        long batches = Long.parseLong(m.group(1).replace(",", ""));
        assertTrue(batches > 0 && batches < 6_000 / 4, "batched: " + batches + " batches for 6,000 steps");
        assertTrue(out.contains("GpuBatcher.call(), 2,000 virtual threads"), out);
        assertTrue(out.contains("  batched: "), "the verdict names the batched side: " + out);
        assertFalse(out.contains("synchronize()"), "no baseline with --baseline off");
        assertTrue(out.endsWith("result: OK" + System.lineSeparator()), out);
        assertEquals(2, Pattern.compile("<polyline class=\"series\"").matcher(Files.readString(report)).results().count());
    }
}
