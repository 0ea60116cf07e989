package io.cudaloom;

import java.lang.ref.WeakReference;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * What a device has handed out and not had back, at one moment ({@link GpuDevice#liveResources()}):
 * device and host memory not closed, streams not closed, waits in progress. The same on every
 * backend: the counting is done by the library's backend-independent code, not by each backend.
 * With site capture on (system property {@value ResourceLedger#CAPTURE_PROPERTY} = {@code all} or
 * {@code sampled}, or {@link GpuDevice#captureLeakSites}) it also says where each was made.
 *
 * <p>Also the registry of the devices open in this JVM ({@link #openDevices()}), which a leak
 * check uses to find the devices a test opened and did not close.
 */
public final class LiveResources {
    /** What a device hands out. */
    public enum Kind {
        /** {@link DeviceMemory} not closed. */
        DEVICE_MEMORY("DeviceMemory", "not closed (DeviceMemory.close())", "allocated"),
        /** {@link HostMemory} not closed (a pinned buffer on a GPU, ordinary memory on the simulated device). */
        HOST_MEMORY("HostMemory", "not closed (HostMemory.close())", "allocated"),
        /** A {@link GpuStream} not closed. */
        /**
         * Memory closed while work that uses it was still queued: freed once that work is done
         * (stream-ordered frees), so it counts as in flight, not as a leak, until then.
         */
        FREEING_MEMORY("closed memory", "closed but not yet freed: work that uses it has not finished", "closed"),
        STREAM("GpuStream", "not closed (GpuStream.close())", "opened"),
        /** A {@link GpuDevice} opened and not closed (listed by {@link #openDevices()}, never counted per device). */
        DEVICE("GpuDevice", "opened in the test and not closed (GpuDevice.close())", "opened"),
        /**
         * A wait in progress: a blocking {@code await} that has not returned, or a future, callback
         * or subscription that has been neither delivered nor withdrawn.
         */
        WAIT("wait", "still pending: an await, future, onComplete callback or subscription waiting for work that"
                + " has not finished (left running, or never completed)", "registered");

        private final String noun;
        private final String problem;
        private final String madeVerb;

        Kind(String noun, String problem, String madeVerb) {
            this.noun = noun;
            this.problem = problem;
            this.madeVerb = madeVerb;
        }

        /** The type's name as a message shows it, e.g. "DeviceMemory". */
        public String noun() {
            return noun;
        }

        /** What is wrong with a leaked one, e.g. "not closed (DeviceMemory.close())". */
        public String problem() {
            return problem;
        }

        /** How one is made, for "allocated at": allocated, opened, registered. */
        public String madeVerb() {
            return madeVerb;
        }
    }

    /**
     * Where something was made: the thread, and the caller's frames (the library's own frames left
     * out but for the call into it).
     *
     * @param kind what was made
     * @param thread the name of the thread that made it
     * @param frames the call into the library, then its callers, outermost last (up to the test
     *     framework's own frames, which are left out)
     */
    public record Site(Kind kind, String thread, List<StackTraceElement> frames) {
        private static final StackWalker WALKER = StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE);
        private static final @Nullable CodeSource LIBRARY = LiveResources.class.getProtectionDomain().getCodeSource();

        public Site {
            Objects.requireNonNull(kind, "kind");
            Objects.requireNonNull(thread, "thread");
            frames = List.copyOf(frames);
        }

        /** The current thread's site, at most {@code max} frames, from the call into the library on. */
        static Site here(Kind kind, int max) {
            List<StackTraceElement> frames = WALKER.walk(s -> {
                List<StackTraceElement> out = new ArrayList<>(max);
                StackWalker.StackFrame[] entry = new StackWalker.StackFrame[1];
                boolean[] framework = new boolean[1];
                s.forEach(f -> {
                    if (out.size() >= max || framework[0]) {
                        return;
                    }
                    if (!out.isEmpty() && isFramework(f.getClassName())) {
                        framework[0] = true; // the test framework's reflection from here on: of no use
                        return;
                    }
                    if (out.isEmpty() && isLibrary(f.getDeclaringClass())) {
                        entry[0] = f; // the outermost library frame so far: the call into the library
                        return;
                    }
                    if (out.isEmpty() && entry[0] != null) {
                        out.add(entry[0].toStackTraceElement());
                    }
                    out.add(f.toStackTraceElement());
                });
                if (out.isEmpty() && entry[0] != null) {
                    out.add(entry[0].toStackTraceElement());
                }
                return out;
            });
            return new Site(kind, Thread.currentThread().getName(), frames);
        }

        private static boolean isFramework(String className) {
            return className.startsWith("org.junit.") || className.startsWith("jdk.internal.reflect.")
                    || className.startsWith("java.lang.reflect.");
        }

        private static boolean isLibrary(Class<?> c) {
            CodeSource cs = c.getProtectionDomain().getCodeSource();
            return c.getName().startsWith("io.cudaloom.") && Objects.equals(cs, LIBRARY);
        }

        /** The site as a message shows it: one "at" line per frame, each starting with {@code indent}. */
        public String render(String indent) {
            StringBuilder b = new StringBuilder();
            b.append(indent).append(kind.madeVerb()).append(" on thread \"").append(thread).append("\"");
            for (StackTraceElement f : frames) {
                b.append('\n').append(indent).append("  at ").append(f);
            }
            return b.toString();
        }
    }

    private final Map<Kind, Integer> counts;
    private final List<Site> sites;
    private final boolean capturing;

    LiveResources(EnumMap<Kind, Integer> counts, List<Site> sites, boolean capturing) {
        this.counts = Collections.unmodifiableMap(new EnumMap<>(counts));
        this.sites = List.copyOf(sites);
        this.capturing = capturing;
    }

    /** How many of {@code kind} are out. */
    public int count(Kind kind) {
        return counts.get(kind);
    }

    /** Whether nothing is out. */
    public boolean isEmpty() {
        return counts.values().stream().allMatch(c -> c == 0);
    }

    /** Where the captured ones of {@code kind} were made (empty with capture off; a sample with {@code sampled}). */
    public List<Site> sites(Kind kind) {
        return sites.stream().filter(s -> s.kind() == kind).toList();
    }

    /** Whether sites were being captured when this was taken. */
    public boolean capturing() {
        return capturing;
    }

    @Override
    public String toString() {
        return "LiveResources" + counts;
    }

    // ---- the devices open in this JVM ---------------------------------------------------------

    /**
     * A device open in this JVM (opened and not closed), as {@link #openDevices()} lists it. Holds
     * the device only weakly: it does not keep a dropped device from being garbage-collected.
     */
    public static final class OpenDevice {
        private final long sequence;
        private final String name;
        private final Site openedAt;
        private final WeakReference<GpuDevice> device;

        OpenDevice(long sequence, GpuDevice device, Site openedAt) {
            this.sequence = sequence;
            this.name = device.name();
            this.openedAt = openedAt;
            this.device = new WeakReference<>(device);
        }

        /** Its place in the order devices were opened in this JVM: later devices have higher numbers. */
        public long sequence() {
            return sequence;
        }

        /** Its name, e.g. "simulated device 3". */
        public String name() {
            return name;
        }

        /** Where it was opened (always captured: opening a device is rare and costly anyway). */
        public Site openedAt() {
            return openedAt;
        }

        /** The device, or null if it has been garbage-collected. */
        public @Nullable GpuDevice device() {
            return device.get();
        }

        @Override
        public String toString() {
            return name + " (#" + sequence + ")";
        }
    }

    private static final AtomicLong SEQUENCE = new AtomicLong();
    private static final Map<Long, OpenDevice> OPEN = new ConcurrentHashMap<>();

    /** The devices open now, in the order they were opened. */
    public static List<OpenDevice> openDevices() {
        List<OpenDevice> open = new ArrayList<>(OPEN.values());
        open.sort(Comparator.comparingLong(OpenDevice::sequence));
        return open;
    }

    /** The {@link OpenDevice#sequence()} of the device opened last in this JVM (0 before the first). */
    public static long lastDeviceSequence() {
        return SEQUENCE.get();
    }

    /** Registers {@code device} as open; returns its sequence number, for {@link #deviceClosed}. */
    static long deviceOpened(GpuDevice device) {
        long seq = SEQUENCE.incrementAndGet();
        OPEN.put(seq, new OpenDevice(seq, device, Site.here(Kind.DEVICE, 12)));
        return seq;
    }

    static void deviceClosed(long sequence) {
        OPEN.remove(sequence);
    }
}
