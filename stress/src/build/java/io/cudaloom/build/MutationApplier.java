package io.cudaloom.build;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Generates the stress module's deliberately broken protocol variants: applies each unified diff of
 * {@code stress/src/mutations/*.patch} to the real source it names (a file of
 * {@code core/src/main/java}) and writes the result, under its new name, into the generated test
 * sources. Run by the stress module's build ({@code generate-test-sources}) with the JDK's
 * source-file launcher, so it needs no compilation, no plugin and no {@code patch(1)}:
 *
 * <pre>java stress/src/build/java/io/cudaloom/build/MutationApplier.java
 *     &lt;repo root&gt; &lt;patch dir&gt; &lt;source root&gt; &lt;output dir&gt;</pre>
 *
 * <p>A patch is one file's unified diff ({@code diff -u} or {@code git diff} output) whose first line
 * is a {@code #} comment (what it breaks, which jcstress test must catch it). Paths are relative to
 * the repository root, with the usual {@code a/} and {@code b/} prefixes: {@code ---} names the real
 * source, {@code +++} the broken copy (it must rename the class, so both live side by side).
 *
 * <p>Matching is exact and fuzz-free: each hunk's context and removed lines must occur in the real
 * source exactly as written, and exactly once; where they occur may differ from the line numbers in
 * the hunk header (edits elsewhere in the file shift them). When the real source changed near a
 * mutation the hunk no longer matches and the build fails, naming the patch, the hunk and the
 * first line that differs: then update the patch's context (docs/STRESS.md, section 2).
 *
 * <p>Java 17 features only, so any JDK that can run Maven's build can run it.
 */
public final class MutationApplier {

    private static final Pattern HUNK = Pattern.compile("^@@ -(\\d+)(?:,(\\d+))? \\+(\\d+)(?:,(\\d+))? @@.*$");
    private static final Pattern TYPE_DECL = Pattern.compile("\\b(?:class|interface|enum|record)\\s+(\\w+)\\b");

    /** A patch that does not apply or is malformed; the message is the whole report. */
    static final class PatchException extends Exception {
        private static final long serialVersionUID = 1L;

        PatchException(String message) {
            super(message);
        }
    }

    record Hunk(int oldStart, String header, List<String> oldLines, List<String> newLines) {}

    record Patch(Path file, String comment, String oldPath, String newPath, List<Hunk> hunks) {}

    public static void main(String[] args) throws IOException {
        if (args.length != 4) {
            System.err.println("usage: MutationApplier <repo root> <patch dir> <source root> <output dir>");
            System.exit(2);
        }
        Path root = Path.of(args[0]).toAbsolutePath().normalize();
        Path patchDir = root.resolve(args[1]).normalize();
        Path sourceRoot = root.resolve(args[2]).normalize();
        Path out = root.resolve(args[3]).normalize();
        try {
            int n = run(root, patchDir, sourceRoot, out);
            System.out.println("[mutations] " + n + " broken variant(s) generated in " + root.relativize(out));
        } catch (PatchException e) {
            System.err.println();
            System.err.println("[mutations] ERROR: " + e.getMessage());
            System.err.println();
            System.exit(1);
        }
    }

    static int run(Path root, Path patchDir, Path sourceRoot, Path out) throws IOException, PatchException {
        List<Path> patches;
        try (Stream<Path> s = Files.list(patchDir)) {
            patches = s.filter(p -> p.getFileName().toString().endsWith(".patch")).sorted().toList();
        } catch (IOException e) {
            throw new PatchException("cannot list the mutation patches in " + patchDir + ": " + e);
        }
        if (patches.isEmpty()) {
            throw new PatchException("no *.patch file in " + patchDir);
        }
        deleteTree(out); // a removed patch must not leave its class behind
        Map<String, Path> generatedBy = new HashMap<>();
        for (Path patchFile : patches) {
            String name = root.relativize(patchFile).toString();
            Patch patch = parse(patchFile, name);
            Path original = root.resolve(patch.oldPath()).normalize();
            Path target = root.resolve(patch.newPath()).normalize();
            if (!original.startsWith(sourceRoot) || !target.startsWith(sourceRoot)) {
                throw new PatchException(name + ": both paths must lie under " + root.relativize(sourceRoot)
                        + " (--- " + patch.oldPath() + ", +++ " + patch.newPath() + ")");
            }
            if (original.equals(target)) {
                throw new PatchException(name + ": +++ must name a new file (the broken copy's new class name), not "
                        + patch.oldPath());
            }
            if (!Files.isRegularFile(original)) {
                throw new PatchException(name + " DOES NOT APPLY: the real source " + patch.oldPath() + " does not exist");
            }
            Path rel = sourceRoot.relativize(target);
            Path previous = generatedBy.put(rel.toString(), patchFile);
            if (previous != null) {
                throw new PatchException(name + " and " + root.relativize(previous) + " both generate " + rel);
            }
            List<String> source = Files.readAllLines(original, StandardCharsets.UTF_8);
            List<String> result = apply(patch, source, name);
            String simpleName = rel.getFileName().toString().replaceFirst("\\.java$", "");
            if (!declares(result, simpleName)) {
                throw new PatchException(name + ": the patched source declares no type " + simpleName
                        + " (the patch must rename the class to match " + patch.newPath() + ")");
            }
            List<String> text = new ArrayList<>();
            text.add("// GENERATED at build time from " + patch.oldPath() + " + " + name + " (MutationApplier); do not edit.");
            text.add("// DELIBERATELY BROKEN: " + patch.comment());
            text.addAll(result);
            Path dest = out.resolve(rel);
            Files.createDirectories(dest.getParent());
            Files.write(dest, text, StandardCharsets.UTF_8);
            System.out.println("[mutations] " + name + ": " + patch.oldPath() + " -> " + root.relativize(dest)
                    + " (" + patch.hunks().size() + " hunk(s))");
        }
        return patches.size();
    }

    /** Reads one single-file unified diff. */
    static Patch parse(Path file, String name) throws IOException, PatchException {
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        if (lines.isEmpty() || !lines.get(0).startsWith("#")) {
            throw new PatchException(name + ": the first line must be a '#' comment saying what the mutation breaks "
                    + "and which jcstress test must catch it");
        }
        String comment = lines.get(0).substring(1).trim();
        int i = 1;
        while (i < lines.size() && !lines.get(i).startsWith("--- ")) {
            i++; // further header lines, e.g. git's "diff --git" and "index"
        }
        if (i + 1 >= lines.size() || !lines.get(i + 1).startsWith("+++ ")) {
            throw new PatchException(name + ": no '--- a/<real source>' / '+++ b/<broken copy>' header");
        }
        String oldPath = path(lines.get(i).substring(4), "a/");
        String newPath = path(lines.get(i + 1).substring(4), "b/");
        i += 2;
        List<Hunk> hunks = new ArrayList<>();
        while (i < lines.size()) {
            String header = lines.get(i);
            if (header.startsWith("--- ")) {
                throw new PatchException(name + ": more than one file in the patch (one patch, one broken variant)");
            }
            Matcher m = HUNK.matcher(header);
            if (!m.matches()) {
                throw new PatchException(name + ":" + (i + 1) + ": expected a hunk header '@@ -l,n +l,n @@', found: " + header);
            }
            int oldCount = m.group(2) == null ? 1 : Integer.parseInt(m.group(2));
            int newCount = m.group(4) == null ? 1 : Integer.parseInt(m.group(4));
            List<String> oldLines = new ArrayList<>();
            List<String> newLines = new ArrayList<>();
            i++;
            while (i < lines.size() && (oldLines.size() < oldCount || newLines.size() < newCount)) {
                String l = lines.get(i);
                if (l.startsWith("\\")) { // "\ No newline at end of file"
                    i++;
                    continue;
                }
                char kind = l.isEmpty() ? ' ' : l.charAt(0); // an empty line: a blank context line
                String body = l.isEmpty() ? "" : l.substring(1);
                switch (kind) {
                    case ' ' -> {
                        oldLines.add(body);
                        newLines.add(body);
                    }
                    case '-' -> oldLines.add(body);
                    case '+' -> newLines.add(body);
                    default -> throw new PatchException(name + ":" + (i + 1) + ": not a hunk line: " + l);
                }
                i++;
            }
            while (i < lines.size() && lines.get(i).startsWith("\\")) {
                i++;
            }
            if (oldLines.size() != oldCount || newLines.size() != newCount) {
                throw new PatchException(name + ": malformed hunk " + header + ": it holds " + oldLines.size()
                        + " old and " + newLines.size() + " new lines");
            }
            hunks.add(new Hunk(Integer.parseInt(m.group(1)), header, oldLines, newLines));
        }
        if (hunks.isEmpty()) {
            throw new PatchException(name + ": no hunk");
        }
        return new Patch(file, comment, oldPath, newPath, hunks);
    }

    private static String path(String field, String prefix) {
        String p = field.split("\t", 2)[0].trim(); // diff -u may append a timestamp after a tab
        return p.startsWith(prefix) ? p.substring(prefix.length()) : p;
    }

    /**
     * Applies the hunks, each located by an exact, unique match of its context and removed lines
     * in the real source; hunks must come in file order and must not overlap.
     */
    static List<String> apply(Patch patch, List<String> source, String name) throws PatchException {
        List<String> out = new ArrayList<>();
        int copied = 0; // source lines [0, copied) are handled
        for (int h = 0; h < patch.hunks().size(); h++) {
            Hunk hunk = patch.hunks().get(h);
            String which = name + ", hunk " + (h + 1) + " of " + patch.hunks().size() + " (" + hunk.header() + ")";
            List<Integer> at = find(source, hunk.oldLines());
            if (at.isEmpty()) {
                throw new PatchException(which + " DOES NOT APPLY to " + patch.oldPath()
                        + ": its context and removed lines are no longer in the real source (it changed there)."
                        + nearest(source, hunk) + "\n  Update the patch's context to the current "
                        + patch.oldPath() + " (docs/STRESS.md, section 2).");
            }
            if (at.size() > 1) {
                throw new PatchException(which + " is AMBIGUOUS in " + patch.oldPath() + ": its context and removed lines "
                        + "occur at lines " + at.stream().map(x -> x + 1).toList() + ". Add context lines to the hunk.");
            }
            int start = at.get(0);
            if (start < copied) {
                throw new PatchException(which + ": matches at line " + (start + 1)
                        + ", before or inside the previous hunk; hunks must be in file order");
            }
            out.addAll(source.subList(copied, start));
            out.addAll(hunk.newLines());
            copied = start + hunk.oldLines().size();
        }
        out.addAll(source.subList(copied, source.size()));
        return out;
    }

    private static List<Integer> find(List<String> source, List<String> block) {
        List<Integer> at = new ArrayList<>();
        for (int s = 0; s + block.size() <= source.size(); s++) {
            if (source.subList(s, s + block.size()).equals(block)) {
                at.add(s);
            }
        }
        return at;
    }

    /** Where the hunk matches best, and its first differing line: what to fix in the patch. */
    private static String nearest(List<String> source, Hunk hunk) {
        List<String> block = hunk.oldLines();
        int best = -1;
        int bestScore = 0;
        for (int s = 0; s + block.size() <= source.size(); s++) {
            int score = 0;
            for (int k = 0; k < block.size(); k++) {
                if (source.get(s + k).equals(block.get(k))) {
                    score++;
                }
            }
            if (score > bestScore || (score == bestScore && best >= 0
                    && Math.abs(s + 1 - hunk.oldStart()) < Math.abs(best + 1 - hunk.oldStart()))) {
                best = s;
                bestScore = score;
            }
        }
        if (best < 0) {
            return "\n  No line of the hunk is found in the real source.";
        }
        StringBuilder sb = new StringBuilder("\n  Closest match at line " + (best + 1) + " (" + bestScore + " of "
                + block.size() + " lines equal); differing lines:");
        for (int k = 0; k < block.size(); k++) {
            String actual = source.get(best + k);
            if (!actual.equals(block.get(k))) {
                sb.append("\n    line ").append(best + k + 1).append(", patch expects: ").append(block.get(k).strip())
                        .append("\n    line ").append(best + k + 1).append(", real source has: ").append(actual.strip());
            }
        }
        return sb.toString();
    }

    private static boolean declares(List<String> lines, String simpleName) {
        for (String l : lines) {
            String t = l.strip();
            if (t.startsWith("*") || t.startsWith("//") || t.startsWith("/*")) {
                continue;
            }
            Matcher m = TYPE_DECL.matcher(t);
            if (m.find() && m.group(1).equals(simpleName)) {
                return true;
            }
        }
        return false;
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.delete(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }
}
