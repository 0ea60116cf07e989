package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class SideBySideTest {
    private static List<LatencyHistogram.Point> series(long scale) {
        LatencyHistogram h = new LatencyHistogram();
        for (int v = 1; v <= 10_000; v++) {
            h.record(v * scale);
        }
        return h.percentileSeries();
    }

    private static final SideBySide.Comparison C = new SideBySide.Comparison("the same 100 steps", "completion",
            "time in the wait",
            new SideBySide.Run("await(), 10,000 virtual threads", 200_000, 20_000, 4.0, 30, 10_000, series(100)),
            new SideBySide.Run("synchronize(), 64 platform threads", 100_000, 80_000, 8.0, 90, 64, series(10)));

    @Test
    void theTableHasEveryRowInOrderAndTheVerdict() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        SideBySide.print(new PrintStream(bytes, true, StandardCharsets.UTF_8), C);
        List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        assertEquals("side by side: the same 100 steps", lines.get(1));
        assertTrue(lines.get(2).contains("await(), 10,000 virtual threads") && lines.get(2).contains("synchronize(), 64"),
                lines.get(2));
        for (int i = 0; i < SideBySide.ROWS.size(); i++) {
            assertTrue(lines.get(3 + i).startsWith("  " + SideBySide.ROWS.get(i) + " "), lines.get(3 + i));
        }
        assertTrue(lines.get(3).matches("  completions/s +200,000 +100,000"), lines.get(3));
        assertTrue(lines.get(4).matches("  CPU per completion +20\\.0 us +80\\.0 us"), lines.get(4));
        assertEquals("  with cuda-loom: 2.00x the completions/s, 0.25x the CPU per completion,"
                + " 30 platform threads instead of 90", lines.get(3 + SideBySide.ROWS.size()));
    }

    @Test
    void aRequestComparisonNamesItsUnit() {
        SideBySide.Comparison c = new SideBySide.Comparison("t", "request", "m", C.library(), C.baseline());
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        SideBySide.print(new PrintStream(bytes, true, StandardCharsets.UTF_8), c);
        String text = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("  CPU per request "), text);
        assertTrue(text.contains("2.00x the requests/s"), text);
    }

    @Test
    void thePageIsSelfContainedAndPlotsBothSeriesFromTheRuns() {
        String html = SideBySide.html("cuda-loom <report>", "context & more", List.of(C));
        assertTrue(html.startsWith("<!DOCTYPE html>"));
        assertTrue(html.contains("<title>cuda-loom &lt;report&gt;</title>"), "text is escaped");
        assertTrue(html.contains("context &amp; more"));
        assertFalse(html.contains("<script"), "no script");
        assertFalse(html.replace("http://www.w3.org/2000/svg", "").matches("(?s).*(https?:|src=|href=).*"),
                "nothing fetched: no address but the SVG namespace");
        for (String v : List.of("200,000", "100,000", "20.0 us", "80.0 us", "10,000")) {
            assertTrue(html.contains("<td>" + v + "</td>"), v);
        }
        Matcher m = Pattern.compile("<polyline class=\"series\" data-run=\"([^\"]+)\"[^>]* points=\"([^\"]+)\"/>")
                .matcher(html);
        for (SideBySide.Run run : List.of(C.library(), C.baseline())) {
            assertTrue(m.find(), "a polyline for " + run.name());
            assertEquals(run.name(), m.group(1));
            String[] points = m.group(2).split(" ");
            assertEquals(run.latency().size(), points.length, "one point per percentile of the run's series");
            // x follows the percentile, y the latency: a point for a higher percentile is right of and
            // not below the one before (SVG's y grows downwards).
            for (int i = 1; i < points.length; i++) {
                double[] a = xy(points[i - 1]), b = xy(points[i]);
                assertTrue(b[0] > a[0] && b[1] <= a[1], points[i - 1] + " -> " + points[i]);
            }
            assertEquals(SideBySide.x(run.latency().get(0).percentile()), xy(points[0])[0], 0.06);
        }
        assertFalse(m.find(), "two series, no more");
        // The slower run (ten times the latencies) lies above the faster one at the median.
        assertTrue(C.library().latencyAt(50) > C.baseline().latencyAt(50));
    }

    private static double[] xy(String point) {
        String[] p = point.split(",");
        return new double[] {Double.parseDouble(p[0]), Double.parseDouble(p[1])};
    }
}
