package io.cudaloom.demo;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * The same work waited for two ways, side by side: with cuda-loom ({@code await()} on virtual
 * threads) and as users wait without it (platform threads blocked in a synchronize). One
 * {@link Comparison} holds a {@link Run} of each; {@link #print} writes it as the demo's text
 * table, {@link #html} as the self-contained page of {@code ./demo --report FILE.html} (inline SVG,
 * no script, nothing fetched).
 */
final class SideBySide {
    /** The rows of the text table, in order (.ci/demo-check compares the README's sample with them). */
    static final List<String> ROWS = List.of("completions/s", "CPU per completion", "cores busy",
            "platform threads (peak)", "waiting at once", "latency p50", "latency p99");

    private SideBySide() {}

    /**
     * One way of waiting, measured.
     *
     * @param name what waited, e.g. "await() on 10,000 virtual threads"
     * @param perSecond completions (or requests) per second of wall time
     * @param cpuNanosPer process CPU time per completion, NaN if unknown
     * @param coresBusy process CPU time over wall time, NaN if unknown
     * @param platformThreads most platform threads alive at once (the whole JVM)
     * @param concurrency how many callers had work in flight at once, at most (threads, or
     *     concurrent requests): what the latency includes the queueing of
     * @param latency the latency distribution (HdrHistogram's percentile series), may be empty
     */
    record Run(String name, double perSecond, double cpuNanosPer, double coresBusy, int platformThreads,
            int concurrency, List<LatencyHistogram.Point> latency) {
        Run {
            Objects.requireNonNull(name, "name");
            latency = List.copyOf(latency);
        }

        /** The await demo's (or the baseline's) steady state. */
        static Run of(String name, DemoRun.Result r) {
            return new Run(name, r.completionsPerSecond(), r.cpuNanosPerCompletion(), r.coresBusy(),
                    r.peakPlatformThreads(), r.threads(), r.latencySeries());
        }

        /** One level of the servlet load. */
        static Run of(String name, LoadGenerator.Level l, List<LatencyHistogram.Point> latency) {
            double secs = l.elapsedNanos() / 1e9;
            return new Run(name, l.requestsPerSecond(), l.ok() == 0 || l.cpuNanos() < 0 ? Double.NaN
                    : (double) l.cpuNanos() / l.ok(), l.cpuNanos() < 0 || secs == 0 ? Double.NaN : l.cpuNanos() / 1e9 / secs,
                    l.peakPlatformThreads(), l.concurrency(), latency);
        }

        /** The latency at {@code percentile}, from the series; 0 if it holds none. */
        long latencyAt(double percentile) {
            for (LatencyHistogram.Point p : latency) {
                if (p.percentile() == percentile) {
                    return p.nanos();
                }
            }
            return 0;
        }
    }

    /**
     * The two runs of one comparison.
     *
     * @param title e.g. "the same 50,000 steps, waited for two ways"
     * @param unit what one completion is: "completion" or "request"
     * @param latencyMeaning what the latency measured, one line
     * @param verdictPrefix how the verdict line names the first run's side, e.g. "with cuda-loom"
     */
    record Comparison(String title, String unit, String latencyMeaning, Run library, Run baseline, String verdictPrefix) {
        /** A comparison of the library (first) with the way users wait without it (second). */
        Comparison(String title, String unit, String latencyMeaning, Run library, Run baseline) {
            this(title, unit, latencyMeaning, library, baseline, "with cuda-loom");
        }
    }

    /** The rows' values for {@code run}, in {@link #ROWS} order. */
    static List<String> values(Run run) {
        return List.of(String.format(Locale.ROOT, "%,.0f", run.perSecond()), duration(run.cpuNanosPer()),
                Double.isNaN(run.coresBusy()) ? "n/a" : String.format(Locale.ROOT, "%.2f", run.coresBusy()),
                Integer.toString(run.platformThreads()), String.format(Locale.ROOT, "%,d", run.concurrency()),
                duration(run.latencyAt(50)), duration(run.latencyAt(99)));
    }

    /** The text table: a header of the two runs' names, then {@link #ROWS}, then what the library saved. */
    static void print(PrintStream out, Comparison c) {
        out.printf(Locale.ROOT, "%nside by side: %s%n", c.title());
        List<String> a = values(c.library());
        List<String> b = values(c.baseline());
        int width = Math.max(12, Math.max(c.library().name().length(), maxLength(a)));
        String format = "  %-24s %-" + width + "s   %s%n";
        out.printf(Locale.ROOT, format, "", c.library().name(), c.baseline().name());
        for (int i = 0; i < ROWS.size(); i++) {
            out.printf(Locale.ROOT, format, rowName(c, ROWS.get(i)), a.get(i), b.get(i));
        }
        out.println("  " + verdict(c));
        out.println("  (latency: " + c.latencyMeaning() + ")");
    }

    /** A row's name for a comparison whose unit is not a completion ("CPU per request"). */
    private static String rowName(Comparison c, String row) {
        return c.unit().equals("completion") ? row : row.replace("completion", c.unit());
    }

    /** One line: how the library's run compares with the baseline's. */
    static String verdict(Comparison c) {
        Run l = c.library(), b = c.baseline();
        List<String> parts = new ArrayList<>();
        if (l.perSecond() > 0 && b.perSecond() > 0) {
            parts.add(String.format(Locale.ROOT, "%.2fx the %ss/s", l.perSecond() / b.perSecond(), c.unit()));
        }
        if (!Double.isNaN(l.cpuNanosPer()) && !Double.isNaN(b.cpuNanosPer()) && b.cpuNanosPer() > 0) {
            parts.add(String.format(Locale.ROOT, "%.2fx the CPU per %s", l.cpuNanosPer() / b.cpuNanosPer(), c.unit()));
        }
        parts.add(String.format(Locale.ROOT, "%d platform threads instead of %d", l.platformThreads(),
                b.platformThreads()));
        return c.verdictPrefix() + ": " + String.join(", ", parts);
    }

    private static int maxLength(List<String> values) {
        return values.stream().mapToInt(String::length).max().orElse(0);
    }

    /** Microseconds below 10 ms, else milliseconds; "n/a" for NaN. */
    static String duration(double nanos) {
        if (Double.isNaN(nanos)) {
            return "n/a";
        }
        return DemoRun.Result.duration(Math.round(nanos));
    }

    // ---- the HTML page -------------------------------------------------------------------------

    /** Writes {@link #html} to {@code file}. */
    static void write(Path file, String heading, String context, List<Comparison> comparisons) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.writeString(file, html(heading, context, comparisons), StandardCharsets.UTF_8);
    }

    /**
     * The report: for each comparison its table and a plot of both runs' latency distributions
     * (latency on a log scale over the percentile, spread as {@code 1 / (1 - p)}); one file, inline
     * CSS and SVG, no script.
     */
    static String html(String heading, String context, List<Comparison> comparisons) {
        StringBuilder h = new StringBuilder(16_384);
        h.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>")
                .append(escape(heading)).append("</title>\n<style>\n")
                .append("body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:880px;color:#222}\n")
                .append("h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em}\n")
                .append("table{border-collapse:collapse;margin:.8em 0}td,th{padding:.25em .8em;border-bottom:1px solid #ddd;"
                        + "text-align:right}th:first-child,td:first-child{text-align:left}\n")
                .append(".lib{color:#1b6ac9}.base{color:#c94a1b}.note{color:#555;font-size:.9em}\n")
                .append("</style>\n</head>\n<body>\n<h1>").append(escape(heading)).append("</h1>\n<p class=\"note\">")
                .append(escape(context)).append("</p>\n");
        for (Comparison c : comparisons) {
            h.append("<h2>").append(escape(c.title())).append("</h2>\n<table>\n<tr><th></th><th class=\"lib\">")
                    .append(escape(c.library().name())).append("</th><th class=\"base\">")
                    .append(escape(c.baseline().name())).append("</th></tr>\n");
            List<String> a = values(c.library());
            List<String> b = values(c.baseline());
            for (int i = 0; i < ROWS.size(); i++) {
                h.append("<tr><td>").append(escape(rowName(c, ROWS.get(i)))).append("</td><td>").append(escape(a.get(i)))
                        .append("</td><td>").append(escape(b.get(i))).append("</td></tr>\n");
            }
            h.append("</table>\n<p><strong>").append(escape(verdict(c))).append("</strong></p>\n");
            h.append(svg(c)).append("\n<p class=\"note\">Latency: ").append(escape(c.latencyMeaning()))
                    .append(". Each line is HdrHistogram's percentile series of one run.</p>\n");
        }
        h.append("</body>\n</html>\n");
        return h.toString();
    }

    // Plot area of the SVG, in its own units.
    private static final int W = 820, H = 380, LEFT = 70, RIGHT = 20, TOP = 20, BOTTOM = 50;
    /** The x position of a percentile: log10(1 / (1 - p)), the maximum at {@value #X_MAX}. */
    private static final double X_MAX = 5.5;

    static double x(double percentile) {
        double v = percentile >= 100 ? X_MAX : Math.log10(1 / (1 - percentile / 100));
        return LEFT + (W - LEFT - RIGHT) * Math.min(v, X_MAX) / X_MAX;
    }

    /** Both runs' distributions as one inline SVG plot. */
    static String svg(Comparison c) {
        long lo = Long.MAX_VALUE, hi = 1;
        for (Run r : List.of(c.library(), c.baseline())) {
            for (LatencyHistogram.Point p : r.latency()) {
                lo = Math.min(lo, Math.max(p.nanos(), 100));
                hi = Math.max(hi, p.nanos());
            }
        }
        if (lo == Long.MAX_VALUE) {
            lo = 1_000;
        }
        double yLo = Math.floor(Math.log10(lo)), yHi = Math.max(yLo + 1, Math.ceil(Math.log10(hi)));
        StringBuilder s = new StringBuilder(4_096);
        s.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\""
                + " height=\"%d\" role=\"img\" aria-label=\"latency distribution\">%n", W, H, W, H));
        s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\""
                + " stroke=\"#bbb\"/>%n", LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM));
        for (double d = yLo; d <= yHi; d++) {
            double y = y(Math.pow(10, d), yLo, yHi);
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e2e2e2\"/>"
                    + "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">%s</text>%n",
                    LEFT, W - RIGHT, y, y, LEFT - 6, y + 4, tick(Math.pow(10, d))));
        }
        double[] xs = {0, 50, 90, 99, 99.9, 99.99, 99.999, 100};
        String[] xl = {"0%", "50%", "90%", "99%", "99.9%", "99.99%", "99.999%", "max"};
        for (int i = 0; i < xs.length; i++) {
            double x = x(xs[i]);
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#e2e2e2\"/>"
                    + "<text x=\"%.1f\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">%s</text>%n",
                    x, x, TOP, H - BOTTOM, x, H - BOTTOM + 16, xl[i]));
        }
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">percentile"
                + "</text>%n", (LEFT + W - RIGHT) / 2, H - 12));
        s.append(String.format(Locale.ROOT, "<text x=\"14\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 14 %d)\""
                + " text-anchor=\"middle\">latency (log scale)</text>%n", (TOP + H - BOTTOM) / 2, (TOP + H - BOTTOM) / 2));
        int legend = 0;
        for (Run r : List.of(c.library(), c.baseline())) {
            String color = legend == 0 ? "#1b6ac9" : "#c94a1b";
            StringBuilder pts = new StringBuilder();
            for (LatencyHistogram.Point p : r.latency()) {
                pts.append(String.format(Locale.ROOT, "%.1f,%.1f ", x(p.percentile()),
                        y(Math.max(p.nanos(), Math.pow(10, yLo)), yLo, yHi)));
            }
            s.append(String.format(Locale.ROOT, "<polyline class=\"series\" data-run=\"%s\" fill=\"none\" stroke=\"%s\""
                    + " stroke-width=\"2.5\" points=\"%s\"/>%n", escape(r.name()), color, pts.toString().strip()));
            s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/>"
                    + "<text x=\"%d\" y=\"%d\" font-size=\"13\">%s</text>%n", LEFT + 14, TOP + 16 + 20 * legend,
                    color, LEFT + 34, TOP + 21 + 20 * legend, escape(r.name())));
            legend++;
        }
        return s.append("</svg>").toString();
    }

    private static double y(double nanos, double yLo, double yHi) {
        double v = (Math.log10(nanos) - yLo) / (yHi - yLo);
        return H - BOTTOM - (H - TOP - BOTTOM) * Math.max(0, Math.min(1, v));
    }

    private static String tick(double nanos) {
        if (nanos < 1_000) {
            return String.format(Locale.ROOT, "%.0f ns", nanos);
        } else if (nanos < 1_000_000) {
            return String.format(Locale.ROOT, "%.0f us", nanos / 1e3);
        } else if (nanos < 1_000_000_000) {
            return String.format(Locale.ROOT, "%.0f ms", nanos / 1e6);
        }
        return String.format(Locale.ROOT, "%.0f s", nanos / 1e9);
    }

    static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
