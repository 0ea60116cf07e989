package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Cycles between the library's classes, read from the compiled classes' constant pools (which name
 * every class a class refers to; a nested class counts as its top-level class).
 *
 * <p>{@link #theReactorsPartsAreInNoCycle}: no reactor part (a class of {@code io.cudaloom.reactor} or a
 * package under it, which the module does not export) is in any cycle. The parts name each other one way only; they reach what sits above them through interfaces they
 * declare ({@code Scanner.Owner}, {@code FallbackRegistration.Owner},
 * {@code SharedCounters.ScannerCounts}, {@code ReactorStream.Reactor}, {@code DeviceFaults.Stream},
 * {@code StreamDrain.Stream}, {@code Monitoring.Observed}) and a stream through the
 * reactor's own object for it ({@code ReactorStream}, which holds the backend's {@code StreamBackend}),
 * never through the public stream, device, event or the facade.
 *
 * <p>{@link #noReactorPartNamesTheFacade}: the facade builds the parts and hands each what it uses.
 *
 * <p>{@link #thePartsNameOfTheApiOnlyItsValues}: of the API package the parts name only what
 * {@link FileImportCycleTest#API_THE_REACTOR_MAY_IMPORT} lists: the configuration they are built
 * with, the exceptions they throw and the stats they document; never a device, stream, event,
 * kernel, listener, MXBean or the facade (the strategy, the latency snapshot, the await outcome and
 * the MXBean interfaces reach them as values of their own).
 *
 * <p>{@link #noCycleBeyondTheKnownOnes}: the cycles of the whole graph are exactly the ones listed
 * in {@link #KNOWN}, each with why it is there. A new cycle, or a class joining one, fails; so does
 * a cycle that shrank or went, until the list is shrunk with it (a ratchet).
 */
class ClassCycleTest {
    /**
     * The cycles there are, by simple name (backend classes with their package), and why:
     * <ul>
     *   <li>the public API, by design: a device opens streams and hands out memory, each of which
     *       names its device; an event names its stream and its device's reactor; a kernel names
     *       the thread its body reads; the provider interface ({@code internal.GpuDeviceProvider},
     *       unexported) opens devices and the device looks the providers up (through
     *       {@code BackendChoice}, so that no file's imports go round: {@link FileImportCycleTest}).
     *       {@code ResourceLedger}, the
     *       device's count of what it handed out, builds the public {@link LiveResources}
     *       snapshot, which names the devices it lists. The backends' hooks
     *       ({@code internal.BackendAccess}, unexported, the JDK's SharedSecrets pattern) name the
     *       device, stream and kernel they act on, and {@code GpuDevice} has them installed
     *       ({@code BackendHooks.install}) when it is initialised;
     *   <li>{@code cuda}: the backend's device, streams, buffers and kernels refer to each other
     *       (a stream names its device and buffers, the device opens streams and loads modules;
     *       {@code HotCalls}, the stream's hot driver calls, takes the kernel, buffers and stream
     *       handle they act on, whose native addresses it reads when they are made);
     *       and, apart, the driver's entry point and its exception ({@code Cuda} builds
     *       {@code CudaDriverException}, whose message names the error through {@code Cuda});
     *   <li>{@code sim}: the same for the simulated device;
     *   <li>{@code junit}: the annotation names its extension, the extension reads the annotation and
     *       runs the leak check, which reports through it;
     *   <li>{@code kotlin}: the suspending await and the executor that resumes it.
     * </ul>
     */
    private static final List<String> KNOWN = List.of(
            "BackendChoice BackendHooks CompletionReactor DeviceMemory GpuDevice GpuEvent GpuKernel GpuStream HostMemory "
                    + "KernelThread LiveResources ResourceLedger internal.BackendAccess internal.GpuDeviceProvider",
            "cuda.Cuda cuda.CudaDriverException",
            "cuda.CudaDevice cuda.CudaKernel cuda.CudaModule cuda.CudaStream cuda.DeviceBuffer cuda.HotCalls "
                    + "cuda.KernelArgs cuda.PinnedBuffer cuda.StreamHandle",
            "junit.GpuExtension junit.GpuTest junit.LeakCheck",
            "kotlin.GpuEventCoroutines kotlin.ResumeExecutor",
            "sim.SimulatedDevice sim.SimulatedMemory sim.SimulatedStream");

    /** What the parts may name of the API package: see {@link #thePartsNameOfTheApiOnlyItsValues}. */
    private static final Set<String> API_A_PART_MAY_NAME = FileImportCycleTest.API_THE_REACTOR_MAY_IMPORT;

    private static final String PREFIX = "io/cudaloom/";
    private static final Pattern NAME = Pattern.compile("io/cudaloom/[A-Za-z0-9_/$]+");

    @Test
    void theReactorsPartsAreInNoCycle() throws Exception {
        Map<String, Set<String>> graph = graph();
        List<String> offences = new ArrayList<>();
        for (Set<String> component : components(graph)) {
            List<String> parts = component.stream().filter(ClassCycleTest::isReactorPart).toList();
            if (!parts.isEmpty()) {
                offences.add("reactor parts " + parts + " in the cycle " + component);
            }
        }
        assertTrue(graph.keySet().stream().filter(ClassCycleTest::isReactorPart).count() >= 20,
                "premise: the reactor parts were found (" + graph.keySet() + ")");
        assertEquals(List.of(), offences,
                "a cycle through the reactor's parts: give one side a narrow interface (or the stream's port)");
    }

    /**
     * The parts get what they use when the facade builds them (the lifecycle state, the checks,
     * the registrar, a wake-up, an executor; its observers get it as {@code Monitoring.Observed}),
     * and never name the facade itself.
     */
    @Test
    void noReactorPartNamesTheFacade() throws Exception {
        List<String> offences = new ArrayList<>();
        int parts = 0;
        for (Map.Entry<String, Set<String>> e : graph().entrySet()) {
            if (isReactorPart(e.getKey())) {
                parts++;
                if (e.getValue().contains("CompletionReactor")) {
                    offences.add(e.getKey());
                }
            }
        }
        assertTrue(parts >= 10, "premise: the reactor parts were found");
        assertEquals(List.of(), offences, "reactor parts naming the facade CompletionReactor");
    }

    @Test
    void thePartsNameOfTheApiOnlyItsValues() throws Exception {
        List<String> offences = new ArrayList<>();
        Set<String> named = new TreeSet<>();
        for (Map.Entry<String, Set<String>> e : graph().entrySet()) {
            if (isReactorPart(e.getKey())) {
                for (String target : e.getValue()) {
                    if (!target.contains(".")) { // the API package
                        named.add(target);
                        if (!API_A_PART_MAY_NAME.contains(target)) {
                            offences.add(e.getKey() + " -> " + target);
                        }
                    }
                }
            }
        }
        assertTrue(named.contains("ReactorConfig") && named.contains("GpuFaultException"),
                "premise: the parts' names of the API package were read (" + named + ")");
        assertEquals(List.of(), offences, "reactor parts naming API classes beyond its values and exceptions");
    }

    @Test
    void noCycleBeyondTheKnownOnes() throws Exception {
        List<String> found = new ArrayList<>();
        for (Set<String> component : components(graph())) {
            found.add(String.join(" ", component));
        }
        found.sort(null);
        List<String> known = new ArrayList<>(KNOWN);
        known.sort(null);
        if (!found.equals(known)) {
            fail("the class cycles changed (a new one, or a class joining one, is a defect; a smaller one: shrink KNOWN)."
                    + "\nfound:\n  " + String.join("\n  ", found) + "\nknown:\n  " + String.join("\n  ", known));
        }
    }

    /**
     * A class of {@code io.cudaloom.reactor} or of a package under it ({@code reactor.metrics},
     * {@code reactor.lifecycle}): a part of the reactor (relative name, as in the graph).
     */
    private static boolean isReactorPart(String name) {
        return name.startsWith("reactor.");
    }

    /** Top-level class (relative to io.cudaloom, '/' as '.') to the top-level classes it names. */
    private static Map<String, Set<String>> graph() throws Exception {
        Path root = Path.of(GpuDevice.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path base = root.resolve("io/cudaloom");
        Map<String, Set<String>> graph = new TreeMap<>();
        List<Path> files;
        try (Stream<Path> walk = Files.walk(base)) {
            files = walk.filter(p -> p.toString().endsWith(".class")).toList();
        }
        for (Path f : files) {
            String rel = base.relativize(f).toString().replace('\\', '/');
            String self = topLevel(rel.substring(0, rel.length() - ".class".length()));
            if (self.endsWith("package-info")) {
                continue;
            }
            graph.computeIfAbsent(self, k -> new TreeSet<>());
        }
        for (Path f : files) {
            String rel = base.relativize(f).toString().replace('\\', '/');
            String self = topLevel(rel.substring(0, rel.length() - ".class".length()));
            Set<String> out = graph.get(self);
            if (out == null) {
                continue;
            }
            Matcher m = NAME.matcher(read(f));
            while (m.find()) {
                String target = topLevel(m.group().substring(PREFIX.length()));
                if (!target.equals(self) && graph.containsKey(target)) {
                    out.add(target);
                }
            }
        }
        assertTrue(graph.size() > 50, "premise: the classes were found under " + base);
        return graph;
    }

    private static String read(Path f) {
        try {
            return new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            throw new AssertionError("cannot read " + f, e);
        }
    }

    /** "cuda/CudaStream$1" -> "cuda.CudaStream". */
    private static String topLevel(String internal) {
        int dollar = internal.indexOf('$');
        return (dollar < 0 ? internal : internal.substring(0, dollar)).replace('/', '.');
    }

    /** The strongly connected components of more than one class (Tarjan's algorithm, iterative). */
    static List<Set<String>> components(Map<String, Set<String>> graph) {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new java.util.HashSet<>();
        List<Set<String>> result = new ArrayList<>();
        int[] counter = {0};
        for (String start : graph.keySet()) {
            if (index.containsKey(start)) {
                continue;
            }
            Deque<Object[]> work = new ArrayDeque<>(); // {node, iterator over its successors}
            index.put(start, counter[0]);
            low.put(start, counter[0]++);
            stack.push(start);
            onStack.add(start);
            work.push(new Object[] {start, graph.getOrDefault(start, Set.of()).iterator()});
            while (!work.isEmpty()) {
                Object[] top = work.peek();
                String v = (String) top[0];
                @SuppressWarnings("unchecked")
                java.util.Iterator<String> it = (java.util.Iterator<String>) top[1];
                if (it.hasNext()) {
                    String w = it.next();
                    if (!index.containsKey(w)) {
                        index.put(w, counter[0]);
                        low.put(w, counter[0]++);
                        stack.push(w);
                        onStack.add(w);
                        work.push(new Object[] {w, graph.getOrDefault(w, Set.of()).iterator()});
                    } else if (onStack.contains(w)) {
                        low.put(v, Math.min(low.get(v), index.get(w)));
                    }
                    continue;
                }
                work.pop();
                if (!work.isEmpty()) {
                    String parent = (String) work.peek()[0];
                    low.put(parent, Math.min(low.get(parent), low.get(v)));
                }
                if (low.get(v).equals(index.get(v))) {
                    Set<String> component = new TreeSet<>();
                    String w;
                    do {
                        w = stack.pop();
                        onStack.remove(w);
                        component.add(w);
                    } while (!w.equals(v));
                    if (component.size() > 1) {
                        result.add(component);
                    }
                }
            }
        }
        return result;
    }

    /** The algorithm itself: a known graph's components. */
    @Test
    void componentsOfAKnownGraph() {
        Map<String, Set<String>> g = new TreeMap<>();
        g.put("a", Set.of("b"));
        g.put("b", Set.of("c"));
        g.put("c", Set.of("a", "d"));
        g.put("d", Set.of("e"));
        g.put("e", Set.of("d"));
        g.put("f", Set.of("a"));
        List<String> found = new ArrayList<>();
        for (Set<String> c : components(g)) {
            found.add(String.join(" ", c));
        }
        found.sort(null);
        assertEquals(List.of("a b c", "d e"), found);
    }
}
