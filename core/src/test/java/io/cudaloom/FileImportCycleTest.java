package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.cudaloom.reactor.metrics.AwaitOutcome;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Core's source files by their imports (issue #41): the {@code import io.cudaloom...} lines of every
 * file under {@code src/main/java}, static imports included, each mapped to the file that declares
 * the imported type (a nested type, or a static member, to its top-level type's file).
 *
 * <p>{@link #noCycleAmongCoresFilesByTheirImports}: no file reaches itself through import lines.
 * A type named without an import (the same package) is no edge: the API package's classes name
 * each other by design ({@link ClassCycleTest#KNOWN} lists those cycles); what must not go round is
 * an import from one package into another and back. A javadoc-only reference is written as a
 * qualified {@code {@link io.cudaloom.GpuStream#x}}, which is no import.
 *
 * <p>{@link #theReactorImportsOfTheApiOnlyItsExceptionsConfigAndStats}: no file of
 * {@code io.cudaloom.reactor} or a package under it imports a type of the API package other than
 * {@link #API_THE_REACTOR_MAY_IMPORT}: the exceptions it throws ({@link GpuFaultException},
 * {@link ReactorClosedException}), the configuration it is built with ({@link ReactorConfig}) and
 * the stats snapshot it documents ({@link ReactorStats}). Everything else of the API it reaches
 * through an interface of its own that the API implements ({@code ReactorStream},
 * {@code Scanner.Owner}, {@code Monitoring.Observed}, {@code LatencyRecorder.Listener} for the await
 * listeners, {@code Registration}, which the event hands out as a {@link Subscription}) or through
 * values it is handed or hands out (the completion strategy as {@code Registrar}'s
 * {@code useSlots}, the MXBean interfaces as {@code Monitoring.MXBeanTypes}, the latency as
 * {@code LatencySnapshot}, which the facade makes the public {@link AwaitLatency}, the outcome of an
 * await as {@code AwaitOutcome}).
 */
class FileImportCycleTest {
    /** The API types a reactor file may import (by simple name; all of package {@code io.cudaloom}). */
    static final Set<String> API_THE_REACTOR_MAY_IMPORT =
            Set.of("GpuFaultException", "ReactorClosedException", "ReactorConfig", "ReactorStats");

    private static final Pattern IMPORT =
            Pattern.compile("^import\\s+(static\\s+)?(io\\.cudaloom(?:\\.\\w+)*)(\\.\\*)?\\s*;", Pattern.MULTILINE);

    /** Core's main sources (the tests run in the module's directory). */
    private static Path sources() {
        Path root = Path.of("src/main/java");
        assertTrue(Files.isRegularFile(root.resolve("io/cudaloom/GpuDevice.java")),
                "premise: core's sources are under " + root.toAbsolutePath());
        return root;
    }

    @Test
    void noCycleAmongCoresFilesByTheirImports() throws IOException {
        Imports imports = Imports.of(sources());
        assertTrue(imports.files().size() > 100, "premise: core's files were read (" + imports.files().size() + ")");
        assertTrue(imports.edgeCount() > 200, "premise: their imports were read (" + imports.edgeCount() + ")");
        List<String> cycles = imports.describeCycles();
        if (!cycles.isEmpty()) {
            fail(cycles.size() + " import cycle(s) among core's files: give one side an interface of its own that the"
                    + " other implements, pass it a value, or (javadoc only) write the link qualified, not imported\n"
                    + String.join("\n", cycles));
        }
    }

    @Test
    void theReactorImportsOfTheApiOnlyItsExceptionsConfigAndStats() throws IOException {
        Imports imports = Imports.of(sources());
        List<String> offences = new ArrayList<>();
        int reactorFiles = 0;
        for (Map.Entry<String, Map<String, List<String>>> e : imports.edges().entrySet()) {
            if (!e.getKey().startsWith("io.cudaloom.reactor.")) {
                continue;
            }
            reactorFiles++;
            for (Map.Entry<String, List<String>> target : e.getValue().entrySet()) {
                String simple = apiTypeName(target.getKey());
                if (simple != null && !API_THE_REACTOR_MAY_IMPORT.contains(simple)) {
                    offences.add(e.getKey() + ": " + String.join(" ", target.getValue()));
                }
            }
        }
        assertTrue(reactorFiles >= 30, "premise: the reactor's files were read (" + reactorFiles + ")");
        assertEquals(List.of(), offences, "reactor files importing API types beyond " + new TreeSet<>(API_THE_REACTOR_MAY_IMPORT)
                + " (reach the API through an interface the part declares, or pass a value; a javadoc link is written"
                + " qualified)");
    }

    /**
     * Issue #41's item 5: code names core's types through imports, never qualified
     * ({@code io.cudaloom.x.Y} in a declaration or an expression), which would hide its edge from
     * the tests above. Javadoc links are written qualified on purpose (no import for a link) and are
     * comments; {@code module-info.java} names services qualified by the language's rule.
     */
    @Test
    void coresCodeNamesItsTypesThroughImportsNotQualified() throws IOException {
        Pattern qualified = Pattern.compile("\\bio\\.cudaloom(?:\\.[a-z]\\w*)*\\.[A-Z]\\w*");
        List<String> offences = new ArrayList<>();
        int files = 0;
        try (Stream<Path> all = Files.walk(sources())) {
            for (Path file : all.filter(f -> f.toString().endsWith(".java")).sorted().toList()) {
                if (file.getFileName().toString().equals("module-info.java")) {
                    continue;
                }
                files++;
                String[] lines = codeOnly(Files.readString(file, StandardCharsets.UTF_8)).split("\n", -1);
                for (int i = 0; i < lines.length; i++) {
                    String line = lines[i].strip();
                    if (line.startsWith("import ") || line.startsWith("package ")) {
                        continue;
                    }
                    Matcher m = qualified.matcher(line);
                    if (m.find()) {
                        offences.add(sources().relativize(file) + ":" + (i + 1) + ": " + m.group());
                    }
                }
            }
        }
        assertTrue(files > 100, "premise: core's files were read (" + files + ")");
        assertEquals(List.of(), offences, "core's code names these types qualified: import them");
    }

    /** {@code source} with its comments, string and character literals blanked (line breaks kept). */
    static String codeOnly(String source) {
        StringBuilder out = new StringBuilder(source.length());
        int n = source.length();
        for (int i = 0; i < n; ) {
            char c = source.charAt(i);
            if (source.startsWith("/*", i)) {
                int end = source.indexOf("*/", i + 2);
                end = end < 0 ? n : end + 2;
                blank(source, i, end, out);
                i = end;
            } else if (source.startsWith("//", i)) {
                int end = source.indexOf('\n', i);
                end = end < 0 ? n : end;
                blank(source, i, end, out);
                i = end;
            } else if (source.startsWith("\"\"\"", i)) {
                int end = source.indexOf("\"\"\"", i + 3);
                end = end < 0 ? n : end + 3;
                blank(source, i, end, out);
                i = end;
            } else if (c == '"' || c == '\'') {
                int end = i + 1;
                while (end < n && source.charAt(end) != c && source.charAt(end) != '\n') {
                    end += source.charAt(end) == '\\' ? 2 : 1;
                }
                end = Math.min(n, end + 1);
                blank(source, i, end, out);
                i = end;
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    private static void blank(String source, int from, int to, StringBuilder out) {
        for (int i = from; i < to; i++) {
            out.append(source.charAt(i) == '\n' ? '\n' : ' ');
        }
    }

    /**
     * The reactor's copy of the listeners' outcomes ({@code AwaitOutcome}, so that no part imports
     * {@link AwaitListener}) has the same constants, which the facade maps by name.
     */
    @Test
    void theReactorsAwaitOutcomesAreTheListenersOutcomes() {
        assertEquals(Arrays.stream(AwaitListener.Outcome.values()).map(Enum::name).toList(),
                Arrays.stream(AwaitOutcome.values()).map(Enum::name).toList());
    }

    /** The simple name of a top-level type of the API package ({@code io.cudaloom.X}), else null. */
    private static String apiTypeName(String file) {
        String rest = file.substring("io.cudaloom.".length());
        return file.startsWith("io.cudaloom.") && rest.indexOf('.') < 0 && !rest.equals("package-info") ? rest : null;
    }

    // ---- the parser and the graph, and tests of them on a tree made here -------------------------

    /**
     * Each file (as its top-level type's name) to the files it imports, with the import lines that
     * tie them.
     */
    record Imports(Set<String> files, Map<String, Map<String, List<String>>> edges) {
        static Imports of(Path root) throws IOException {
            Map<String, String> texts = new TreeMap<>();
            try (Stream<Path> walk = Files.walk(root)) {
                for (Path p : (Iterable<Path>) walk.filter(f -> f.toString().endsWith(".java"))::iterator) {
                    String rel = root.relativize(p).toString().replace('\\', '/');
                    if (rel.equals("module-info.java")) {
                        continue;
                    }
                    texts.put(rel.substring(0, rel.length() - ".java".length()).replace('/', '.'),
                            Files.readString(p, StandardCharsets.UTF_8));
                }
            }
            Set<String> files = texts.keySet();
            Map<String, Map<String, List<String>>> edges = new TreeMap<>();
            for (Map.Entry<String, String> e : texts.entrySet()) {
                Map<String, List<String>> out = new TreeMap<>();
                Matcher m = IMPORT.matcher(e.getValue());
                while (m.find()) {
                    List<String> targets = new ArrayList<>();
                    if (m.group(3) != null && m.group(1) == null) { // import a.b.*: every file of the package
                        for (String f : files) {
                            if (f.startsWith(m.group(2) + ".") && f.indexOf('.', m.group(2).length() + 1) < 0) {
                                targets.add(f);
                            }
                        }
                    } else {
                        String target = fileOf(m.group(2), files);
                        if (target != null) {
                            targets.add(target);
                        }
                    }
                    for (String target : targets) {
                        if (!target.equals(e.getKey())) {
                            out.computeIfAbsent(target, k -> new ArrayList<>()).add(m.group().trim());
                        }
                    }
                }
                edges.put(e.getKey(), out);
            }
            return new Imports(files, edges);
        }

        /** The file that declares {@code name}: its longest prefix that is a file (a.b.C.Nested -> a.b.C). */
        private static String fileOf(String name, Set<String> files) {
            for (String n = name; n.indexOf('.') > 0; n = n.substring(0, n.lastIndexOf('.'))) {
                if (files.contains(n)) {
                    return n;
                }
            }
            return null;
        }

        int edgeCount() {
            return edges.values().stream().mapToInt(Map::size).sum();
        }

        /** Each cycle: its files, then every import line from one of them to another. */
        List<String> describeCycles() {
            Map<String, Set<String>> graph = new TreeMap<>();
            edges.forEach((file, out) -> graph.put(file, out.keySet()));
            List<String> result = new ArrayList<>();
            for (Set<String> cycle : ClassCycleTest.components(graph)) {
                StringBuilder b = new StringBuilder("cycle of " + cycle.size() + " files: " + cycle);
                for (String from : cycle) {
                    edges.get(from).forEach((to, lines) -> {
                        if (cycle.contains(to)) {
                            b.append("\n  ").append(from).append(" -> ").append(to).append(": ").append(lines);
                        }
                    });
                }
                result.add(b.toString());
            }
            return result;
        }
    }

    /** The parser and the cycle finder on a small tree: a static import, a nested type, a wildcard. */
    @Test
    void theCheckFindsACycleThroughStaticNestedAndWildcardImports(@TempDir Path root) throws IOException {
        write(root, "io/cudaloom/Api.java", "package io.cudaloom;\nimport io.cudaloom.reactor.Part.Inner;\nclass Api {}\n");
        write(root, "io/cudaloom/reactor/Part.java",
                "package io.cudaloom.reactor;\nimport static io.cudaloom.reactor.low.Low.helper;\nclass Part {}\n");
        write(root, "io/cudaloom/reactor/low/Low.java", "package io.cudaloom.reactor.low;\nimport io.cudaloom.*;\nclass Low {}\n");
        write(root, "io/cudaloom/reactor/low/Leaf.java", "package io.cudaloom.reactor.low;\nimport java.util.List;\nclass Leaf {}\n");
        Imports imports = Imports.of(root);
        assertEquals(Map.of("io.cudaloom.reactor.Part", List.of("import io.cudaloom.reactor.Part.Inner;")),
                imports.edges().get("io.cudaloom.Api"), "a nested type maps to its file");
        assertEquals(Set.of("io.cudaloom.reactor.low.Low"), imports.edges().get("io.cudaloom.reactor.Part").keySet(),
                "a static import maps to its type's file");
        assertEquals(Set.of("io.cudaloom.Api"), imports.edges().get("io.cudaloom.reactor.low.Low").keySet(),
                "a wildcard maps to its package's files (not to sub-packages')");
        List<String> cycles = imports.describeCycles();
        assertEquals(1, cycles.size(), String.valueOf(cycles));
        assertTrue(cycles.get(0).startsWith("cycle of 3 files: [io.cudaloom.Api, io.cudaloom.reactor.Part, "
                + "io.cudaloom.reactor.low.Low]"), cycles.get(0));
        assertTrue(cycles.get(0).contains("io.cudaloom.reactor.Part -> io.cudaloom.reactor.low.Low: "
                + "[import static io.cudaloom.reactor.low.Low.helper;]"), "the tying import lines are shown: " + cycles.get(0));

        write(root, "io/cudaloom/reactor/low/Low.java", "package io.cudaloom.reactor.low;\nclass Low {}\n");
        assertEquals(List.of(), Imports.of(root).describeCycles(), "no import back up: no cycle");
    }

    private static void write(Path root, String rel, String text) throws IOException {
        Path p = root.resolve(rel);
        Files.createDirectories(p.getParent());
        Files.writeString(p, text, StandardCharsets.UTF_8);
    }
}
