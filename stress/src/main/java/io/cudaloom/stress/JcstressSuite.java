package io.cudaloom.stress;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;
import org.openjdk.jcstress.JCStress;
import org.openjdk.jcstress.Main;
import org.openjdk.jcstress.Options;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.infra.Status;
import org.openjdk.jcstress.infra.collectors.DiskReadCollector;
import org.openjdk.jcstress.infra.collectors.InProcessCollector;
import org.openjdk.jcstress.infra.collectors.TestResult;
import org.openjdk.jcstress.infra.grading.GradingResult;
import org.openjdk.jcstress.infra.grading.ReportUtils;
import org.openjdk.jcstress.infra.grading.TestGrading;
import org.openjdk.jcstress.infra.runners.TestConfig;
import org.openjdk.jcstress.infra.runners.TestList;
import org.openjdk.jcstress.vm.CompileMode;

/**
 * Runs jcstress ({@code org.openjdk.jcstress.Main}'s engine, same options) and then checks the
 * results itself, printing a compact summary. Exit code 0 only when the run is what was expected:
 *
 * <ul>
 *   <li>default: every test that matches {@code -t} and can be scheduled on the CPUs in use ran,
 *       without error, and observed no FORBIDDEN outcome. jcstress alone would exit 0 when the
 *       filter matched nothing or the test list was missing; this does not.
 *   <li>{@code --expect-forbidden}: every such test ran and observed at least one FORBIDDEN
 *       outcome (used on the deliberately broken protocol variants: the checks must be able to
 *       fail). A test error does not count as caught.
 * </ul>
 *
 * Tests with more actors than CPUs in use cannot be scheduled by jcstress; they are listed as
 * skipped (they run on larger machines). {@code -l} and {@code -h} are passed straight through.
 *
 * <p>Usage: {@code java -jar jcstress.jar [--expect-forbidden] [jcstress options]}, e.g.
 * {@code -m quick}, {@code -m default}, {@code -t Handoff}.
 */
public final class JcstressSuite {

    /** --per-config: also list each JVM configuration's counts (always on with --expect-forbidden). */
    private static boolean verbose;

    private JcstressSuite() {}

    public static void main(String[] args) throws Exception {
        boolean expectForbidden = false;
        List<String> jcstressArgs = new ArrayList<>();
        for (String a : args) {
            if (a.equals("--per-config")) {
                verbose = true;
            } else if (a.equals("--expect-forbidden")) {
                expectForbidden = true;
            } else {
                jcstressArgs.add(a);
            }
        }
        if (jcstressArgs.contains("-l") || jcstressArgs.contains("-h") || jcstressArgs.contains("-p")) {
            Main.main(jcstressArgs.toArray(String[]::new));
            return;
        }
        System.exit(run(jcstressArgs.toArray(String[]::new), expectForbidden, System.out));
    }

    /** Runs jcstress and grades the run; returns the process exit code (0 = as expected). */
    public static int run(String[] jcstressArgs, boolean expectForbidden, PrintStream out) throws Exception {
        Options opts = new Options(jcstressArgs);
        if (!opts.parse()) {
            return 2;
        }
        AssertionError jcstressVerdict = null;
        try {
            new JCStress(opts).run();
        } catch (AssertionError e) {
            // jcstress's own verdict on FORBIDDEN outcomes and errors; we re-derive it below.
            jcstressVerdict = e;
        }

        SortedSet<String> matching = new TreeSet<>();
        Pattern filter = Pattern.compile(opts.getTestFilter());
        for (String name : TestList.tests()) {
            if (filter.matcher(name).find()) {
                matching.add(name);
            }
        }

        Map<String, TestResult> byName = new TreeMap<>();
        Map<String, List<TestResult>> byConfig = new TreeMap<>();
        Path resultFile = Path.of(opts.getResultFile());
        if (Files.exists(resultFile)) {
            InProcessCollector collector = new InProcessCollector();
            DiskReadCollector reader = new DiskReadCollector(opts.getResultFile(), collector);
            reader.dump();
            reader.close();
            for (TestResult r : ReportUtils.mergedByName(collector.getTestResults())) {
                byName.put(r.getName(), r);
            }
            for (TestResult r : ReportUtils.mergedByConfig(collector.getTestResults())) {
                byConfig.computeIfAbsent(r.getName(), k -> new ArrayList<>()).add(r);
            }
            deleteQuietly(resultFile);
        }

        List<String> problems = new ArrayList<>();
        int ran = 0;
        int skipped = 0;
        out.println();
        out.println("CUDA-LOOM JCSTRESS SUMMARY (" + (expectForbidden ? "broken variants: each must show a FORBIDDEN outcome"
                : "every outcome must be acceptable") + "; " + String.join(" ", jcstressArgs) + "; " + opts.getCPUCount()
                + " CPUs)");
        out.println();
        out.println("| test | actors | JVM configs | samples | verdict | observed outcomes (count, grade) |");
        out.println("|---|---|---|---|---|---|");
        for (String name : matching) {
            int actors = TestList.getInfo(name).threads();
            TestResult r = byName.get(name);
            String shortName = name.substring(name.lastIndexOf('.') + 1);
            if (r == null) {
                if (actors > opts.getCPUCount()) {
                    skipped++;
                    out.printf("| %s | %d | 0 | 0 | SKIPPED (needs %d CPUs) | |%n", shortName, actors, actors);
                } else {
                    problems.add(name + ": did not run");
                    out.printf("| %s | %d | 0 | 0 | DID NOT RUN | |%n", shortName, actors);
                }
                continue;
            }
            ran++;
            int configs = byConfig.getOrDefault(name, List.of()).size();
            String verdict;
            if (r.status() != Status.NORMAL) {
                verdict = "ERROR " + r.status();
                problems.add(name + ": " + r.status() + " " + String.join(" / ", r.getMessages()));
            } else {
                long forbidden = forbiddenCount(r.grading());
                if (expectForbidden) {
                    long configsCatching = byConfig.getOrDefault(name, List.of()).stream()
                            .filter(c -> c.status() == Status.NORMAL && forbiddenCount(c.grading()) > 0)
                            .count();
                    verdict = forbidden > 0 ? "CAUGHT (" + forbidden + " forbidden, in " + configsCatching + "/"
                            + configs + " configs)" : "NOT CAUGHT";
                    if (forbidden == 0) {
                        problems.add(name + ": broken variant showed no FORBIDDEN outcome");
                    }
                } else {
                    verdict = r.grading().isPassed ? "PASSED" : "FAILED";
                    if (!r.grading().isPassed) {
                        problems.add(name + ": " + String.join(" / ", r.grading().failureMessages));
                    }
                }
            }
            out.printf("| %s | %d | %d | %,d | %s | %s |%n", shortName, actors, configs, r.getTotalCount(), verdict,
                    outcomes(r));
        }
        out.println();
        if (expectForbidden || verbose) {
            out.println("Per JVM configuration (forbidden / samples):");
            for (Map.Entry<String, List<TestResult>> e : byConfig.entrySet()) {
                for (TestResult c : e.getValue()) {
                    out.printf("  %s %s%s: %,d / %,d%n", e.getKey().substring(e.getKey().lastIndexOf('.') + 1),
                            c.getConfig().jvmArgs, compileModes(c.getConfig()), c.status() == Status.NORMAL ? forbiddenCount(c.grading()) : -1,
                            c.getTotalCount());
                }
            }
            out.println();
        }
        if (matching.isEmpty()) {
            problems.add("no test matches the filter '" + opts.getTestFilter() + "' (is META-INF/TestList there?)");
        } else if (ran == 0) {
            problems.add("no test ran");
        }
        out.printf("%d tests matched, %d ran, %d skipped (more actors than CPUs).%n", matching.size(), ran, skipped);
        if (problems.isEmpty()) {
            out.println(expectForbidden ? "ALL BROKEN VARIANTS CAUGHT." : "ALL TESTS PASSED.");
            return 0;
        }
        out.println(expectForbidden ? "NOT ALL BROKEN VARIANTS CAUGHT:" : "FAILURES:");
        problems.forEach(p -> out.println("  " + p));
        if (jcstressVerdict != null && !expectForbidden) {
            out.println("jcstress: " + jcstressVerdict.getMessage());
        }
        return 1;
    }

    private static long forbiddenCount(TestGrading g) {
        long n = 0;
        for (GradingResult gr : g.gradingResults.values()) {
            if (gr.expect == Expect.FORBIDDEN) {
                n += gr.count;
            }
        }
        return n;
    }

    private static String outcomes(TestResult r) {
        List<GradingResult> seen = new ArrayList<>();
        for (GradingResult gr : r.grading().gradingResults.values()) {
            if (gr.count > 0) {
                seen.add(gr);
            }
        }
        seen.sort(Comparator.comparingLong((GradingResult gr) -> gr.count).reversed());
        StringBuilder sb = new StringBuilder();
        for (GradingResult gr : seen) {
            if (sb.length() > 0) {
                sb.append("; ");
            }
            sb.append('[').append(gr.id).append("] ").append(String.format("%,d", gr.count)).append(' ')
                    .append(grade(gr.expect));
        }
        return sb.toString();
    }

    /** Per-actor compilation of a split-compilation configuration, e.g. " actors [int, C2]". */
    private static String compileModes(TestConfig c) {
        if (c.getCompileMode() == CompileMode.UNIFIED) {
            return "";
        }
        List<String> modes = new ArrayList<>();
        for (int a = 0; a < c.threads; a++) {
            int m = c.getCompileMode();
            modes.add(CompileMode.isInt(m, a) ? "int" : CompileMode.isC1(m, a) ? "C1" : CompileMode.isC2(m, a) ? "C2" : "?");
        }
        return " actors " + modes;
    }

    private static String grade(Expect e) {
        return switch (e) {
            case ACCEPTABLE -> "ok";
            case ACCEPTABLE_INTERESTING -> "ok*";
            case FORBIDDEN -> "FORBIDDEN";
            case UNKNOWN -> "UNKNOWN";
        };
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // a stale result blob is harmless
        }
    }
}
