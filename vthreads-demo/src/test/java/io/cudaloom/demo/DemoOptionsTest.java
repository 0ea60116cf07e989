package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.demo.DemoOptions.Mode;
import io.cudaloom.demo.DemoOptions.UsageException;
import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class DemoOptionsTest {

    @Test
    void defaultsAreTheDocumentedOnes() throws UsageException {
        DemoOptions o = DemoOptions.parse();
        assertEquals(Mode.RUN, o.mode());
        assertEquals(10_000, o.threads());
        assertEquals(5, o.iterations());
        assertEquals("auto", o.device());
        assertEquals(8, o.streams());
        assertEquals(Duration.ofNanos(20_000), o.kernelTime());
        assertEquals(10_000, o.requests());
        assertEquals(Duration.ofSeconds(10), o.timeLimit());
        assertEquals(1, o.warmUpIterations(), "the first iteration is the warm-up");
    }

    @Test
    void theWarmUpIsAtLeastOneIterationShortOfAll() throws UsageException {
        assertEquals(0, DemoOptions.parse("--iterations", "1").warmUpIterations(), "one iteration: no warm-up");
        assertEquals(1, DemoOptions.parse("--iterations", "60").warmUpIterations());
        assertEquals(3, DemoOptions.parse("--iterations", "5", "--warmup", "3").warmUpIterations());
        assertEquals(0, DemoOptions.parse("--warmup=0").warmUpIterations());
    }

    @Test
    void parsesEveryFlag() throws UsageException {
        DemoOptions o = DemoOptions.parse("--threads", "1_000", "--iterations", "3", "--device", "SIM",
                "--streams", "4", "--kernel-us", "0");
        assertEquals(1_000, o.threads());
        assertEquals(3, o.iterations());
        assertEquals("sim", o.device());
        assertEquals(4, o.streams());
        assertEquals(Duration.ZERO, o.kernelTime());

        DemoOptions serve = DemoOptions.parse("--serve", "--port", "9090");
        assertEquals(Mode.SERVE, serve.mode());
        assertEquals(9090, serve.effectivePort());
        assertEquals(8080, DemoOptions.parse("--serve").effectivePort());

        DemoOptions load = DemoOptions.parse("--load", "--requests", "500", "--seconds", "3");
        assertEquals(Mode.LOAD, load.mode());
        assertEquals(0, load.effectivePort(), "--load picks a free port by default");
        assertEquals(500, load.requests());
        assertEquals(Duration.ofSeconds(3), load.timeLimit());

        assertEquals(Mode.HELP, DemoOptions.parse("--threads", "5", "--help").mode());
        assertEquals(Mode.HELP, DemoOptions.parse("-h").mode());
    }

    @Test
    void parsesTheEqualsForm() throws UsageException {
        DemoOptions o = DemoOptions.parse("--threads=1_000", "--iterations=3", "--device=SIM",
                "--streams=4", "--kernel-us=0");
        assertEquals(DemoOptions.parse("--threads", "1_000", "--iterations", "3", "--device", "SIM",
                "--streams", "4", "--kernel-us", "0"), o);
        assertEquals(1_000, o.threads());
        assertEquals("sim", o.device());

        assertEquals(9090, DemoOptions.parse("--serve", "--port=9090").effectivePort());
        DemoOptions load = DemoOptions.parse("--load", "--requests=500", "--seconds", "3");
        assertEquals(500, load.requests());
        assertEquals(Duration.ofSeconds(3), load.timeLimit());
        // both forms in one line
        DemoOptions mixed = DemoOptions.parse("--threads", "7", "--iterations=2");
        assertEquals(7, mixed.threads());
        assertEquals(2, mixed.iterations());
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource(delimiter = '|', value = {
        "--bogus                          | unknown option '--bogus'",
        "--threads                        | --threads needs a value",
        "--threads --iterations 3         | --threads needs a value",
        "--threads ten                    | --threads needs a whole number, was 'ten'",
        "--threads 0                      | --threads must be between 1 and 1000000, was 0",
        "--threads 99999999999            | --threads needs a whole number",
        "--iterations -1                  | --iterations must be between 1 and 1000000, was -1",
        "--device tpu                     | --device must be auto, sim or cuda, was 'tpu'",
        "--streams 0                      | --streams must be between 1 and 1024",
        "--kernel-us 2000000              | --kernel-us must be between 0 and 1000000",
        "--port 70000 --serve             | --port must be between 0 and 65535",
        "--port 8080                      | --port needs --serve or --load",
        "--requests 10                    | --requests and --seconds need --load",
        "--serve --load                   | --load cannot be combined with --serve",
        "--load --seconds 0               | --seconds must be between 1 and 600",
        "threads 5                        | unknown option 'threads'",
        "--threads=                       | --threads needs a value",
        "--threads=ten                    | --threads needs a whole number, was 'ten'",
        "--threads=0                      | --threads must be between 1 and 1000000, was 0",
        "--device=tpu                     | --device must be auto, sim or cuda, was 'tpu'",
        "--device=sim=cuda                | --device must be auto, sim or cuda, was 'sim=cuda'",
        "--bogus=1                        | unknown option '--bogus'",
        "--serve=yes                      | --serve takes no value, was '--serve=yes'",
        "--help=1                         | --help takes no value, was '--help=1'",
        "--port=8080                      | --port needs --serve or --load",
        "--warmup 5                       | --warmup must be less than --iterations (5), was 5",
        "--iterations 1 --warmup 1        | --warmup must be less than --iterations (1), was 1",
        "--warmup -1                      | --warmup must be between 0 and 999999, was -1",
        "--load --warmup 1                | --warmup is for the await demo, not --load",
    })
    void rejectsBadCommandLines(String line, String message) {
        UsageException e = assertThrows(UsageException.class, () -> DemoOptions.parse(line.trim().split("\\s+")));
        assertTrue(e.getMessage().startsWith(message.trim()), e.getMessage());
    }

    @Test
    void baselinePoolAndReport() throws UsageException {
        DemoOptions d = DemoOptions.parse();
        assertTrue(d.baseline(), "the baseline runs by default");
        assertEquals(64, d.baselineThreads());
        assertEquals(null, d.report());
        DemoOptions o = DemoOptions.parse("--baseline", "OFF", "--pool=8");
        assertEquals(false, o.baseline());
        assertEquals(8, o.baselineThreads());
        assertEquals(java.nio.file.Path.of("r.html"), DemoOptions.parse("--report", "r.html").report());
        assertEquals(java.nio.file.Path.of("l.html"), DemoOptions.parse("--load", "--report=l.html").report());
        assertEquals("--baseline must be on or off, was 'maybe'",
                assertThrows(UsageException.class, () -> DemoOptions.parse("--baseline", "maybe")).getMessage());
        assertEquals("--report is for the await demo or --load, not --serve",
                assertThrows(UsageException.class, () -> DemoOptions.parse("--serve", "--report", "x.html")).getMessage());
        assertEquals("--report compares runs, so it needs the baseline (drop --baseline off) or --batch",
                assertThrows(UsageException.class, () -> DemoOptions.parse("--report", "x.html", "--baseline", "off"))
                        .getMessage());
        assertEquals("--pool is for the await demo's baseline, not --load",
                assertThrows(UsageException.class, () -> DemoOptions.parse("--load", "--pool", "3")).getMessage());
        assertEquals(64, DemoOptions.parse("--batch", "64").batch());
        assertEquals(0, DemoOptions.parse().batch(), "no batched run by default");
        assertEquals("--batch is for the await demo, not --load",
                assertThrows(UsageException.class, () -> DemoOptions.parse("--load", "--batch", "8")).getMessage());
        assertEquals(java.nio.file.Path.of("b.html"),
                DemoOptions.parse("--baseline", "off", "--batch", "8", "--report", "b.html").report(), "--batch alone has runs to compare");
        assertEquals("--pool must be between 1 and 10000, was 0",
                assertThrows(UsageException.class, () -> DemoOptions.parse("--pool", "0")).getMessage());
    }
}
