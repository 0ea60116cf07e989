package io.cudaloom;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A kernel that runs on any backend: its PTX entry point for a GPU, and a Java body, run once per
 * thread of the grid, for the simulated device (numba's CUDA simulator does the same with the
 * kernel's Python code). Launch it with {@link GpuStream#launch}; the same program then runs
 * unchanged with or without a GPU. The body must compute what the PTX does: the simulated device
 * is for running code paths and tests without a GPU, not for checking the PTX.
 *
 * <p>A kernel knows its parameters ({@link #params()}): read from the PTX entry's {@code .param}
 * list, or declared at {@link #of(String, String, List, Body)} or
 * {@link #fromResource(Class, String, String, List, Body)}. Every launch, on every backend, checks its
 * arguments against them before anything is enqueued: a wrong count or type is an
 * {@link IllegalArgumentException} at the launch, naming the kernel, the argument and both types,
 * and the stream stays usable. Arguments are {@link DeviceMemory} (a device pointer),
 * {@code Integer}, {@code Long}, {@code Float} or {@code Double}; see {@link Param}.
 *
 * <p>A kernel whose PTX is a class-path resource ({@link #fromResource}) reads it only when a CUDA
 * device first launches it: the simulated device needs its declared parameters and its body, no PTX.
 */
public final class GpuKernel {
    /** The library's own kernels (hand-written PTX, the CUDA C++ beside it in the sources). */
    private static final String BUILT_IN_PTX = "/io/cudaloom/kernels.ptx";
    private static final Ptx BUILT_IN = Ptx.builtIn(); // before the kernels below use it

    /** {@code empty_kernel()}: does nothing (the cost of a launch and its completion alone). */
    public static final GpuKernel EMPTY = builtIn("empty_kernel", List.of(), t -> {});

    /**
     * {@code spin_kernel(u64 nanos)}: each thread spins for {@code nanos} on the GPU's global
     * timer; what {@link GpuStream#launchKernel(java.time.Duration)} launches on a GPU (through
     * {@code BackendAccess.Hooks#spinKernel}). Not public: that method is the one way to keep a
     * stream busy for a time, on every backend (the simulated device's takes no core for it, where
     * this body, launched as a kernel, would spin one).
     */
    static final GpuKernel SPIN = builtIn("spin_kernel", List.of(Param.LONG), t -> {
        long end = System.nanoTime() + t.longArg(0);
        while (System.nanoTime() - end < 0) {
            Thread.onSpinWait();
        }
    });

    /**
     * {@code fill_u32(u32* out, u32 value, u32 n)}: {@code out[i] = value} for each thread index
     * {@code i < n}.
     */
    public static final GpuKernel FILL_U32 = builtIn("fill_u32", List.of(Param.POINTER, Param.INT, Param.INT), t -> {
        int n = t.intArg(2);
        if (t.index() < n) {
            t.ints(0).put(t.index(), t.intArg(1));
        }
    });

    /** {@code scale_f32(f32* data, f32 factor, u32 n)}: {@code data[i] *= factor} for each {@code i < n}. */
    public static final GpuKernel SCALE_F32 = builtIn("scale_f32",
            List.of(Param.POINTER, Param.FLOAT, Param.INT), t -> {
        int n = t.intArg(2);
        int i = t.index();
        if (i < n) {
            t.floats(0).put(i, t.floats(0).get(i) * t.floatArg(1));
        }
    });

    private final String entry;
    private final Ptx ptx;
    private final Body body;
    /** Immutable and random-access (List.copyOf): the launch checks index it, allocating nothing. */
    private final List<Param> paramList;

    private GpuKernel(String entry, Ptx ptx, List<Param> params, Body body) {
        this.entry = entry;
        this.ptx = ptx;
        this.body = body;
        this.paramList = List.copyOf(params);
    }

    /**
     * A kernel from PTX text and its Java equivalent; its parameters are read from the entry's
     * {@code .param} list ({@link Param}: a 64-bit integer parameter takes {@link DeviceMemory} or a
     * {@code Long}).
     *
     * @param ptx the module's PTX text (for example the output of {@code nvcc -ptx})
     * @param entry the name of the {@code .entry} function in it
     * @param body what one thread of the kernel does, for the simulated device
     * @throws IllegalArgumentException if {@code entry} is blank or not an entry of {@code ptx}, or
     *     has a parameter of a type no launch can pass (a struct, {@code .f16})
     */
    public static GpuKernel of(String ptx, String entry, Body body) {
        Objects.requireNonNull(ptx, "ptx");
        checkEntry(entry, body);
        return new GpuKernel(entry, new Ptx(ptx), PtxEntries.params(ptx, entry), body);
    }

    /**
     * A kernel from PTX text, its declared parameters and its Java equivalent. The declaration may
     * be narrower than the PTX ({@link Param#POINTER} or {@link Param#LONG} for a {@code .u64}), not
     * different.
     *
     * @param params the kernel's parameters, in order
     * @throws IllegalArgumentException as {@link #of(String, String, Body)}, or if {@code params}
     *     does not match the entry's parameters
     */
    public static GpuKernel of(String ptx, String entry, List<Param> params, Body body) {
        Objects.requireNonNull(ptx, "ptx");
        checkEntry(entry, body);
        List<Param> declared = declared(entry, params);
        checkMatches(entry, declared, PtxEntries.params(ptx, entry), "the PTX");
        return new GpuKernel(entry, new Ptx(ptx), declared, body);
    }

    /**
     * A kernel whose PTX is the class-path resource {@code resource}, found as
     * {@code owner.getResource(resource)} does (relative to {@code owner}'s package unless it starts
     * with {@code /}). The resource is read only when a CUDA device first launches the kernel (and
     * then checked against {@code params}); the simulated device runs {@code body} and never reads
     * it, so a program for the simulated device needs no PTX at all.
     *
     * @param owner the class whose loader and package find the resource
     * @param resource the resource's name, for example {@code "add_u32.ptx"}
     * @param entry the name of the {@code .entry} function in it
     * @param params the kernel's parameters, in order
     * @param body what one thread of the kernel does, for the simulated device
     * @throws IllegalArgumentException if {@code entry} or {@code resource} is blank
     */
    public static GpuKernel fromResource(Class<?> owner, String resource, String entry, List<Param> params,
            Body body) {
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(resource, "resource");
        if (resource.isBlank()) {
            throw new IllegalArgumentException("PTX resource name must not be blank (kernel " + entry + ")");
        }
        checkEntry(entry, body);
        return new GpuKernel(entry, new Ptx(owner, resource), declared(entry, params), body);
    }

    private static GpuKernel builtIn(String entry, List<Param> params, Body body) {
        return new GpuKernel(entry, BUILT_IN, List.copyOf(params), body);
    }

    private static void checkEntry(String entry, Body body) {
        Objects.requireNonNull(entry, "entry");
        Objects.requireNonNull(body, "body");
        if (entry.isBlank()) {
            throw new IllegalArgumentException("kernel entry name must not be blank");
        }
    }

    private static List<Param> declared(String entry, List<Param> params) {
        Objects.requireNonNull(params, "params");
        for (int i = 0; i < params.size(); i++) {
            if (params.get(i) == null) {
                throw new IllegalArgumentException("parameter " + i + " of kernel " + entry + " is null");
            }
        }
        return List.copyOf(params);
    }

    /**
     * Checks that {@code declared} fits the parameters {@code ptxParams} read from
     * {@code where}, one for one ({@link Param#POINTER}, {@link Param#LONG} and
     * {@link Param#POINTER_OR_LONG} are all a 64-bit word).
     *
     * @throws IllegalArgumentException naming the kernel and the first parameter that differs
     */
    static void checkMatches(String entry, List<Param> declared, List<Param> ptxParams, String where) {
        if (declared.size() != ptxParams.size()) {
            throw new IllegalArgumentException("kernel " + entry + " is declared with " + declared.size()
                    + " parameter(s) " + declared + ", but its .entry in " + where + " has " + ptxParams.size()
                    + " " + ptxParams);
        }
        for (int i = 0; i < declared.size(); i++) {
            if (declared.get(i).width != ptxParams.get(i).width) {
                throw new IllegalArgumentException("parameter " + i + " of kernel " + entry + " is declared "
                        + declared.get(i) + ", but its .entry in " + where + " has " + ptxParams.get(i)
                        + " there: " + declared + " vs " + ptxParams);
            }
        }
    }

    /**
     * The parameters of the {@code .entry} named {@code entry} in {@code ptx} (see {@link Param}).
     *
     * @throws IllegalArgumentException if there is no such entry, or a parameter is of a type no
     *     launch can pass
     */
    static List<Param> paramsOf(String ptx, String entry) {
        return PtxEntries.params(Objects.requireNonNull(ptx, "ptx"), Objects.requireNonNull(entry, "entry"));
    }

    /** The PTX entry point's name. */
    public String entry() {
        return entry;
    }

    /**
     * The PTX text of the module that holds this kernel (for {@link #fromResource}, read now if it
     * was not yet).
     *
     * @throws IllegalStateException if the kernel's PTX resource is not on the class path
     */
    public String ptx() {
        return ptx.text(entry);
    }

    /** The kernel's parameters, in order: what each launch's arguments are checked against. */
    public List<Param> params() {
        return paramList;
    }

    /**
     * Identifies the PTX module (kernels of one module share it, so a backend loads it once per
     * device). Not API: backends read it through {@code BackendAccess.Hooks#kernelModule}.
     */
    Object module() {
        return ptx;
    }

    /** The Java body the simulated device runs. Not API: backends read it through {@code BackendAccess.Hooks#kernelBody}. */
    Body body() {
        return body;
    }

    @Override
    public String toString() {
        return "kernel " + entry;
    }

    /** What one thread of the kernel does (see {@link KernelThread}). */
    @FunctionalInterface
    public interface Body {
        void run(KernelThread thread);
    }

    /**
     * What a kernel parameter takes. A PTX {@code .u64}/{@code .s64}/{@code .b64} parameter does not
     * say whether it is an address or a number: read from PTX it is {@link #POINTER_OR_LONG};
     * declare {@link #POINTER} or {@link #LONG} to be stricter.
     */
    public enum Param {
        /** A device pointer: {@link DeviceMemory} of the launching device. */
        POINTER(64, "DeviceMemory"),
        /** A 64-bit integer: {@code Long}. */
        LONG(64, "Long"),
        /** A 64-bit word ({@code .u64}, {@code .s64}, {@code .b64}): {@link DeviceMemory} or a {@code Long}. */
        POINTER_OR_LONG(64, "DeviceMemory or Long"),
        /** A 32-bit (or narrower) integer ({@code .u32}, {@code .s32}, {@code .b32}): {@code Integer}. */
        INT(32, "Integer"),
        /** {@code .f32}: {@code Float}. */
        FLOAT(-32, "Float"),
        /** {@code .f64}: {@code Double}. */
        DOUBLE(-64, "Double");

        /** Which PTX parameters this fits: the bits of an integer, negated for a float. */
        final int width;
        private final String takes;

        Param(int width, String takes) {
            this.width = width;
            this.takes = takes;
        }

        /** Whether {@code argument} may be passed for a parameter of this kind. */
        public boolean accepts(@Nullable Object argument) {
            return switch (this) {
                case POINTER -> argument instanceof DeviceMemory;
                case LONG -> argument instanceof Long;
                case POINTER_OR_LONG -> argument instanceof DeviceMemory || argument instanceof Long;
                case INT -> argument instanceof Integer;
                case FLOAT -> argument instanceof Float;
                case DOUBLE -> argument instanceof Double;
            };
        }

        /** The Java types this takes, for messages: {@code "DeviceMemory or Long"}. */
        public String takes() {
            return takes;
        }
    }

    /** A module's PTX, read once (the built-in module and resources lazily). */
    private static final class Ptx {
        private final @Nullable Class<?> owner;
        private final String resource;
        private volatile @Nullable String text;

        Ptx(String text) {
            this.owner = null;
            this.resource = "";
            this.text = text;
        }

        Ptx(Class<?> owner, String resource) {
            this.owner = owner;
            this.resource = resource;
        }

        String text(String entry) {
            String t = text;
            if (t == null) {
                Class<?> from = owner == null ? GpuKernel.class : owner;
                try (InputStream in = from.getResourceAsStream(resource)) {
                    if (in == null) {
                        throw new IllegalStateException("kernel " + entry + ": its PTX resource '" + resource
                                + "' (looked up from " + from.getName() + ") is not on the class path;"
                                + " a CUDA device needs it (the simulated device does not)");
                    }
                    t = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
                } catch (IOException e) {
                    throw new UncheckedIOException("kernel " + entry + ": reading PTX resource '" + resource + "'", e);
                }
                text = t; // racy but idempotent: every reader computes the same text
            }
            return t;
        }

        static Ptx builtIn() {
            return new Ptx(GpuKernel.class, BUILT_IN_PTX);
        }
    }

    /**
     * Reads an {@code .entry}'s parameter list from PTX text: {@code .u64}/{@code .s64}/{@code .b64}
     * is {@link Param#POINTER_OR_LONG} (PTX does not say whether a 64-bit word is an address),
     * 8-, 16- and 32-bit integers are {@link Param#INT}, {@code .f32} {@link Param#FLOAT}, {@code .f64}
     * {@link Param#DOUBLE}. Anything else (a {@code .b8 s[16]} struct, {@code .f16}) no launch can pass.
     */
    private static final class PtxEntries {
        private static final Pattern COMMENTS = Pattern.compile("//[^\\n]*|/\\*.*?\\*/", Pattern.DOTALL);
        private static final Pattern TYPE = Pattern.compile("\\.([usbf])(8|16|32|64)");

        private PtxEntries() {}

        /**
         * The parameters of {@code .entry entry} in {@code ptx}.
         *
         * @throws IllegalArgumentException if there is no such entry, or a parameter is of a type no
         *     launch can pass
         */
        static List<Param> params(String ptx, String entry) {
            String text = COMMENTS.matcher(ptx).replaceAll(" ");
            Matcher m = Pattern.compile("\\.entry\\s+" + Pattern.quote(entry) + "(?![\\w$])").matcher(text);
            if (!m.find()) {
                throw new IllegalArgumentException("the PTX has no .entry named '" + entry + "'");
            }
            int at = m.end();
            while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
                at++;
            }
            if (at >= text.length() || text.charAt(at) != '(') {
                return List.of(); // ".entry name {": no parameter list
            }
            int close = text.indexOf(')', at);
            if (close < 0) {
                throw new IllegalArgumentException("the parameter list of .entry '" + entry + "' is not closed");
            }
            String list = text.substring(at + 1, close).trim();
            if (list.isEmpty()) {
                return List.of();
            }
            List<Param> params = new ArrayList<>();
            String[] declarations = list.split(",");
            for (int i = 0; i < declarations.length; i++) {
                params.add(param(entry, i, declarations[i].trim()));
            }
            return List.copyOf(params);
        }

        private static Param param(String entry, int index, String declaration) {
            String[] words = declaration.split("\\s+");
            if (words.length < 2 || !words[0].equals(".param")) {
                throw new IllegalArgumentException("parameter " + index + " of .entry '" + entry + "' is not a .param: '"
                        + declaration + "'");
            }
            String type = null;
            for (String w : words) {
                if (TYPE.matcher(w).matches()) {
                    type = w;
                    break;
                }
            }
            String name = words[words.length - 1];
            if (type == null || name.contains("[") || type.equals(".f8") || type.equals(".f16")) {
                throw new IllegalArgumentException("parameter " + index + " of .entry '" + entry + "' ('" + declaration
                        + "') has a type no launch can pass: use .u64/.s64/.b64 (DeviceMemory or Long), .u32/.s32/.b32"
                        + " (Integer), .f32 (Float) or .f64 (Double)");
            }
            return switch (type.substring(2)) {
                case "64" -> type.charAt(1) == 'f' ? Param.DOUBLE : Param.POINTER_OR_LONG;
                case "32" -> type.charAt(1) == 'f' ? Param.FLOAT : Param.INT;
                default -> Param.INT; // .u8 to .b16: passed as an Integer, the driver takes the low bytes
            };
        }
    }
}
