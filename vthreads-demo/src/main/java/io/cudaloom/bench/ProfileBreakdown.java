package io.cudaloom.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

/**
 * Where a JFR recording's samples go, by who owns the code (issue #37's question: how much of the
 * CPU per completion is the library's own, the driver's, the JDK's hand-off, the HTTP server's):
 * {@code bash .gpu/java io.cudaloom.bench.ProfileBreakdown servlet-await.jfr}.
 *
 * <p>Each sample ({@code jdk.ExecutionSample}: a thread running Java code;
 * {@code jdk.NativeMethodSample}: a thread in native code, which includes threads idle in a blocking
 * system call such as a selector's {@code epoll_wait}) is given to the innermost frame of its stack
 * that has an owner ({@link #owner}): the driver binding (JCuda, the library's {@code java.lang.foreign}
 * downcalls), the JDK's virtual-thread scheduler, the library, the simulated device, the benchmark
 * and demo code, Jetty, the JDK's I/O, JFR. Frames of the JDK's general classes (collections,
 * atomics, locks, {@code LockSupport}, method handles) have none: their samples go to the caller
 * that has one, so a {@code ConcurrentHashMap.get} that the library calls is the library's, and a
 * {@code LockSupport.unpark} that reaches {@code VirtualThread.unpark} is the scheduler's.
 *
 * <p>Prints, as markdown: the samples per owner (Java and native apart: the two samplers run at
 * their own rates), then the methods that took the most samples for the library, the driver
 * binding and the scheduler (the owning frame's method), then per thread name family.
 */
public final class ProfileBreakdown {
    private ProfileBreakdown() {}

    /** Who owns a frame's code; {@link #NONE} passes the sample on to the caller. */
    enum Owner {
        DRIVER("driver binding (JCuda, FFM downcalls)"),
        SCHEDULER("JDK virtual-thread scheduler (park, unpark, mount)"),
        LIBRARY("cuda-loom (core)"),
        SIMULATED("simulated device (core's sim)"),
        BENCHMARK("benchmark and demo code"),
        JETTY("Jetty"),
        JDK_IO("JDK I/O (nio, net)"),
        JFR("JFR"),
        OTHER("JDK other (no owner on the stack)"),
        NONE("");

        final String label;

        Owner(String label) {
            this.label = label;
        }
    }

    /** The owner of the code of class {@code type} (a binary name), by its package; {@link Owner#NONE} for the JDK's general classes. */
    static Owner owner(String type) {
        if (type.startsWith("jcuda.") || type.startsWith("io.cudaloom.cuda.HotCalls")
                || type.startsWith("jdk.internal.foreign.")) {
            return Owner.DRIVER;
        }
        if (type.startsWith("java.lang.VirtualThread") || type.startsWith("java.util.concurrent.ForkJoin")
                || type.startsWith("jdk.internal.vm.Continuation") || type.startsWith("java.lang.ThreadBuilders")) {
            return Owner.SCHEDULER;
        }
        if (type.startsWith("io.cudaloom.sim.")) {
            return Owner.SIMULATED;
        }
        if (type.startsWith("io.cudaloom.demo.") || type.startsWith("io.cudaloom.bench.")
                || type.startsWith("io.cudaloom.stress.")) {
            return Owner.BENCHMARK;
        }
        if (type.startsWith("io.cudaloom.")) {
            return Owner.LIBRARY;
        }
        if (type.startsWith("org.eclipse.jetty.")) {
            return Owner.JETTY;
        }
        if (type.startsWith("sun.nio.") || type.startsWith("java.nio.") || type.startsWith("sun.net.")
                || type.startsWith("java.net.")) {
            return Owner.JDK_IO;
        }
        if (type.startsWith("jdk.jfr.")) {
            return Owner.JFR;
        }
        return Owner.NONE;
    }

    /** A sample's owner and its owning frame ({@code Class.method}), from its frames' types and methods, top first. */
    record Attribution(Owner owner, String frame) {}

    /** {@code types} and {@code methods}: the stack's frames, the top (innermost) first. */
    static Attribution attribute(List<String> types, List<String> methods) {
        for (int i = 0; i < types.size(); i++) {
            Owner o = owner(types.get(i));
            if (o != Owner.NONE) {
                return new Attribution(o, simpleName(types.get(i)) + "." + methods.get(i));
            }
        }
        return new Attribution(Owner.OTHER, types.isEmpty() ? "(no stack)" : simpleName(types.get(0)) + "." + methods.get(0));
    }

    private static String simpleName(String type) {
        String t = type.replaceAll("\\$\\$Lambda.*", "\\$lambda");
        int dot = t.lastIndexOf('.');
        return dot < 0 ? t : t.substring(dot + 1);
    }

    /** The counts of one sampler: per owner, per owning frame of each owner, per thread family. */
    static final class Tally {
        final Map<Owner, Long> byOwner = new LinkedHashMap<>();
        final Map<Owner, Map<String, Long>> frames = new LinkedHashMap<>();
        final Map<String, Map<Owner, Long>> byThread = new LinkedHashMap<>();
        long total;

        void add(Attribution a, String thread) {
            total++;
            byOwner.merge(a.owner(), 1L, Long::sum);
            frames.computeIfAbsent(a.owner(), o -> new LinkedHashMap<>()).merge(a.frame(), 1L, Long::sum);
            byThread.computeIfAbsent(threadFamily(thread), t -> new LinkedHashMap<>()).merge(a.owner(), 1L, Long::sum);
        }
    }

    /** A thread's name without its numbers ({@code ForkJoinPool-1-worker-3} is {@code ForkJoinPool-#-worker-#}). */
    static String threadFamily(String name) {
        return name == null || name.isEmpty() ? "(unnamed: virtual threads, mostly)" : name.replaceAll("\\d+", "#");
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 1) {
            System.err.println("usage: ProfileBreakdown RECORDING.jfr [top=12]");
            System.exit(2);
        }
        int top = args.length > 1 ? Integer.parseInt(args[1].replaceFirst("^top=", "")) : 12;
        Tally java = new Tally();
        Tally natives = new Tally();
        try (RecordingFile file = new RecordingFile(Path.of(args[0]))) {
            while (file.hasMoreEvents()) {
                RecordedEvent e = file.readEvent();
                String name = e.getEventType().getName();
                Tally t = name.equals("jdk.ExecutionSample") ? java : name.equals("jdk.NativeMethodSample") ? natives : null;
                if (t == null) {
                    continue;
                }
                RecordedStackTrace st = e.getStackTrace();
                List<String> types = new ArrayList<>();
                List<String> methods = new ArrayList<>();
                if (st != null) {
                    for (RecordedFrame f : st.getFrames()) {
                        if (f.getMethod() != null && f.getMethod().getType() != null) {
                            types.add(f.getMethod().getType().getName());
                            methods.add(f.getMethod().getName());
                        }
                    }
                }
                String thread = e.getThread("sampledThread") == null ? "" : e.getThread("sampledThread").getJavaName();
                t.add(attribute(types, methods), thread);
            }
        }
        print(System.out, args[0], java, natives, top);
    }

    static void print(PrintStream out, String source, Tally java, Tally natives, int top) {
        out.printf(Locale.ROOT, "## Where the samples of %s go, by owner%n%n", source);
        out.println("Each sample goes to the innermost frame of its stack whose code has an owner (the JDK's general"
                + " classes have none: their samples go to their caller). Native samples include threads idle in a"
                + " blocking system call (a selector's epoll_wait).");
        out.println();
        out.println("| owner | Java samples | share | native samples | share |");
        out.println("|---|---|---|---|---|");
        for (Owner o : Owner.values()) {
            if (o == Owner.NONE) {
                continue;
            }
            long j = java.byOwner.getOrDefault(o, 0L);
            long n = natives.byOwner.getOrDefault(o, 0L);
            if (j + n == 0) {
                continue;
            }
            out.printf(Locale.ROOT, "| %s | %,d | %s | %,d | %s |%n", o.label, j, share(j, java.total), n,
                    share(n, natives.total));
        }
        out.printf(Locale.ROOT, "| all | %,d | | %,d | |%n", java.total, natives.total);
        for (Owner o : List.of(Owner.LIBRARY, Owner.DRIVER, Owner.SCHEDULER, Owner.JETTY)) {
            out.println();
            out.printf(Locale.ROOT, "### %s: the owning frames with the most samples (Java; native)%n%n", o.label);
            out.println("| frame | Java samples | native samples |");
            out.println("|---|---|---|");
            Map<String, Long> j = java.frames.getOrDefault(o, Map.of());
            Map<String, Long> n = natives.frames.getOrDefault(o, Map.of());
            Map<String, Long> both = new LinkedHashMap<>(j);
            n.forEach((k, v) -> both.merge(k, v, Long::sum));
            both.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder()))
                    .limit(top).forEach(en -> out.printf(Locale.ROOT, "| %s | %,d | %,d |%n", en.getKey(),
                            j.getOrDefault(en.getKey(), 0L), n.getOrDefault(en.getKey(), 0L)));
        }
        out.println();
        out.println("### Java samples per thread family and owner");
        out.println();
        out.println("| threads | samples | by owner |");
        out.println("|---|---|---|");
        java.byThread.entrySet().stream()
                .sorted(Comparator.comparing((Map.Entry<String, Map<Owner, Long>> en) ->
                        en.getValue().values().stream().mapToLong(Long::longValue).sum()).reversed())
                .limit(top).forEach(en -> {
                    long sum = en.getValue().values().stream().mapToLong(Long::longValue).sum();
                    StringBuilder sb = new StringBuilder();
                    en.getValue().entrySet().stream()
                            .sorted(Map.Entry.<Owner, Long>comparingByValue(Comparator.reverseOrder()))
                            .forEach(x -> sb.append(sb.isEmpty() ? "" : ", ").append(x.getKey().name().toLowerCase(Locale.ROOT))
                                    .append(' ').append(share(x.getValue(), sum)));
                    out.printf(Locale.ROOT, "| %s | %,d | %s |%n", en.getKey(), sum, sb);
                });
    }

    private static String share(long part, long total) {
        return total == 0 ? "-" : String.format(Locale.ROOT, "%.1f%%", 100.0 * part / total);
    }
}
