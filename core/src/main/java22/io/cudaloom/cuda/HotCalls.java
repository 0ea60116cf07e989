package io.cudaloom.cuda;

import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReferenceArray;
import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;
import org.jspecify.annotations.Nullable;

/**
 * The Java 22 version of the hot driver calls (META-INF/versions/22 of core's multi-release JAR;
 * the Java 21 version, in src/main/java, says what they are). Unless the system property
 * {@value DriverCalls#PROPERTY} is {@code jcuda}, it calls libcuda through {@code java.lang.foreign}
 * downcalls; with {@code jcuda}, or when they cannot be made here, through JCuda as the Java 21
 * version does.
 * Same members as that version, nothing public.
 *
 * <h2>The downcalls</h2>
 * libcuda.so.1 is looked up by name ({@link SymbolLookup#libraryLookup}, global arena): JCuda's
 * natives link against the same soname, so the process already has it loaded and the lookup
 * returns that same library, with the same contexts. The symbols are the ones JCuda 12's natives
 * import (cuda.h maps the API names to them): {@code cuLaunchKernel},
 * {@code cuMemcpyHtoDAsync_v2}, {@code cuMemcpyDtoHAsync_v2} and {@code cuStreamWriteValue32_v2};
 * a driver without a {@code _v2} entry point gets the unversioned one. No {@code _ptsz} variants:
 * those are for the per-thread default stream, and every call here names a stream of its own.
 * Pointers and handles are passed as 64-bit integers (the same registers as pointers on the 64-bit
 * ABIs the driver runs on; the binding is refused elsewhere), so a call allocates nothing. The
 * downcalls are not {@code critical}: {@code cuLaunchKernel} can block while the driver's queue is
 * full, and a critical call would hold off the garbage collector's safepoints meanwhile.
 *
 * <h2>Handles</h2>
 * JCuda keeps the native address of a handle ({@code CUstream}, {@code CUfunction}, a device or
 * host pointer) in the private field {@code nativePointer} of {@link NativePointerObject}, and a
 * {@link Pointer}'s offset in its private {@code byteOffset}; both are read through
 * {@link VarHandle}s of a private lookup (JCuda is an automatic module or on the class path: its
 * packages are open). The stream's and the function's addresses are read once and kept where the
 * handle lives ({@link StreamHandle#address()}, {@link CudaKernel#functionAddress()}), the pinned
 * buffer's too ({@link PinnedBuffer#address}); a device buffer's comes from
 * {@link AddressedDevicePointer#addressOf}, and a flag's from its pointer at each write (two field
 * reads).
 *
 * <h2>Kernel parameters</h2>
 * {@code cuLaunchKernel} takes {@code void** kernelParams}: one pointer per argument, to the
 * argument's bytes. This builds it in a block of native memory laid out as {@code n} pointers
 * followed by {@code n} 8-byte value slots (every argument type {@link KernelArgs} takes is 4 or 8
 * bytes; pointer {@code i} points at slot {@code i}). Blocks are reused: a launch claims one from a
 * small striped array with {@code getAndSet(null)}, so no two threads ever hold the same block, and
 * puts it back after the downcall returned. The driver reads the parameters during the call (it
 * copies them into the launch before {@code cuLaunchKernel} returns, which is why CUDA code passes
 * pointers to stack variables), so a block given back is never read again. A launch whose stripe is
 * empty allocates a block (an automatic arena: the GC frees blocks that no stripe keeps).
 *
 * <h2>When it falls back to JCuda</h2>
 * Decided once, when the class is initialised (the first CUDA stream, kernel or pinned buffer), and
 * said once on the {@code System.Logger} named after this class (asked for with {@code ffm}: INFO
 * when they are on, WARNING when they are not, and why; the property unset: DEBUG either way): native access not enabled for this module
 * ({@code --enable-native-access=io.cudaloom} on the module path, {@code ALL-UNNAMED} on the class
 * path: without it the JDK would warn at the first restricted call, and a future JDK refuse it), no
 * libcuda.so.1, a symbol missing, JCuda's fields not found. A call never fails because of the
 * binding: the choice is made before any call.
 */
@SuppressWarnings("restricted") // libraryLookup, downcallHandle: only with native access enabled (checked first)
final class HotCalls {
    /** Whether the four calls go through the downcalls (a constant once initialised: the JIT folds the branch). */
    private static final boolean FFM;
    private static final String BINDING;

    static {
        DriverCalls.Decision decision = DriverCalls.Decision.make(HotCalls::unavailable);
        FFM = decision.ffm();
        BINDING = decision.binding(System.getLogger(HotCalls.class.getName()), () -> "cuda-loom: kernel launches,"
                + " async copies and flag writes call libcuda.so.1 through java.lang.foreign downcalls ("
                + Ffm.SYMBOLS + ")"); // Ffm is initialised only when the downcalls are on
    }

    private HotCalls() {}

    /** Null if the downcalls can be made here, else why not (in a few words, for the binding's text and the log). */
    private static @Nullable String unavailable() {
        Module module = HotCalls.class.getModule();
        if (!module.isNativeAccessEnabled()) {
            return "native access is not enabled for " + (module.isNamed() ? "module " + module.getName()
                    : "the class path") + ": run java with --enable-native-access="
                    + (module.isNamed() ? module.getName() : "ALL-UNNAMED");
        }
        if (ValueLayout.ADDRESS.byteSize() != 8) {
            return "not a 64-bit platform";
        }
        try {
            return Ffm.SYMBOLS.isEmpty() ? "no symbols" : null; // initialises Ffm: the lookups and handles
        } catch (ExceptionInInitializerError e) {
            Throwable c = e.getCause() != null ? e.getCause() : e;
            return c.getMessage() != null ? c.getMessage() : c.toString();
        } catch (LinkageError | RuntimeException e) {
            return e.toString();
        }
    }

    /** The library, its four symbols and JCuda's two fields; initialised only when the downcalls are asked for and allowed. */
    private static final class Ffm {
        static final VarHandle NATIVE_POINTER;
        static final VarHandle BYTE_OFFSET;
        /** {@code CUresult cuLaunchKernel(CUfunction, uint gridX, gridY, gridZ, blockX, blockY, blockZ, uint sharedBytes, CUstream, void** params, void** extra)}. */
        static final MethodHandle LAUNCH;
        /** {@code CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream)}. */
        static final MethodHandle HTOD;
        /** {@code CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream)}. */
        static final MethodHandle DTOH;
        /** {@code CUresult cuStreamWriteValue32_v2(CUstream, CUdeviceptr addr, cuuint32_t value, unsigned flags)}. */
        static final MethodHandle WRITE32;
        /** The symbols bound, for the log. */
        static final String SYMBOLS;

        static {
            try {
                NATIVE_POINTER = MethodHandles.privateLookupIn(NativePointerObject.class, MethodHandles.lookup())
                        .findVarHandle(NativePointerObject.class, "nativePointer", long.class);
                BYTE_OFFSET = MethodHandles.privateLookupIn(Pointer.class, MethodHandles.lookup())
                        .findVarHandle(Pointer.class, "byteOffset", long.class);
            } catch (ReflectiveOperationException | RuntimeException e) {
                throw new IllegalStateException("JCuda's handle fields cannot be read: " + e, e);
            }
            SymbolLookup lib;
            try {
                lib = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException("libcuda.so.1 cannot be loaded by name: " + e.getMessage(), e);
            }
            Linker linker = Linker.nativeLinker();
            String[] names = new String[4];
            LAUNCH = linker.downcallHandle(symbol(lib, names, 0, "cuLaunchKernel", null), FunctionDescriptor.of(JAVA_INT,
                    JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG,
                    JAVA_LONG));
            HTOD = linker.downcallHandle(symbol(lib, names, 1, "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync"),
                    FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
            DTOH = linker.downcallHandle(symbol(lib, names, 2, "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync"),
                    FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
            WRITE32 = linker.downcallHandle(symbol(lib, names, 3, "cuStreamWriteValue32_v2", "cuStreamWriteValue32"),
                    FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT));
            SYMBOLS = String.join(", ", names);
        }

        private Ffm() {}

        /** {@code name}'s address, or {@code fallback}'s if libcuda has no {@code name}; records the one found in {@code names[i]}. */
        private static MemorySegment symbol(SymbolLookup lib, String[] names, int i, String name, @Nullable String fallback) {
            Optional<MemorySegment> s = lib.find(name);
            names[i] = name;
            if (s.isEmpty() && fallback != null) {
                s = lib.find(fallback);
                names[i] = fallback;
            }
            return s.orElseThrow(() -> new IllegalStateException("libcuda.so.1 has no symbol " + name
                    + (fallback != null ? " nor " + fallback : "")));
        }
    }

    /** Which version of this class is loaded: 21 or 22 (this one). */
    static int implementation() {
        return 22;
    }

    /** The binding of the hot calls: {@code ffm}, or {@code jcuda (why)}. */
    static String binding() {
        return BINDING;
    }

    /** The native address a JCuda handle holds (plus a pointer's byte offset), for the downcalls; 0 where JCuda makes the calls. */
    static long handleAddress(NativePointerObject handle) {
        if (!FFM) {
            return 0;
        }
        long address = (long) Ffm.NATIVE_POINTER.get(handle);
        return handle instanceof Pointer p ? address + (long) Ffm.BYTE_OFFSET.get(p) : address;
    }

    /**
     * A launch's arguments as the binding takes them, packed at the call: with JCuda its
     * pointer-to-pointers ({@link KernelArgs#pack}); with the downcalls null, after the same checks
     * (the launch packs them into a block of its own: see the class comment).
     *
     * @throws IllegalArgumentException as {@link KernelArgs#pack}
     */
    static @Nullable Pointer params(String kernel, Object[] args) {
        if (!FFM) {
            return KernelArgs.pack(kernel, args);
        }
        for (Object a : args) {
            if (!(a instanceof DeviceBuffer || a instanceof Integer || a instanceof Long || a instanceof Float
                    || a instanceof Double)) {
                return KernelArgs.pack(kernel, args); // throws, naming the argument as it does with JCuda
            }
        }
        return null;
    }

    /** {@code cuLaunchKernel} on the stream, with {@code params} from {@link #params} for {@code args}. */
    static int launchKernel(CudaKernel kernel, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
            int sharedBytes, StreamHandle stream, @Nullable Pointer params, Object[] args) {
        if (!FFM) {
            return JCudaDriver.cuLaunchKernel(kernel.function(), gridX, gridY, gridZ, blockX, blockY, blockZ,
                    sharedBytes, stream.raw(), params, null);
        }
        if (args.length == 0) {
            return launch(kernel.functionAddress(), gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes,
                    stream.address(), 0L);
        }
        int stripe = ParamBlocks.stripe();
        MemorySegment block = ParamBlocks.claim(stripe, args.length);
        try {
            pack(block, args);
            return launch(kernel.functionAddress(), gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes,
                    stream.address(), block.address());
        } finally {
            ParamBlocks.giveBack(stripe, block); // the driver copied the parameters before returning
        }
    }

    private static int launch(long function, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
            int sharedBytes, long stream, long params) {
        try {
            return (int) Ffm.LAUNCH.invokeExact(function, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes,
                    stream, params, 0L);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code cuMemcpyHtoDAsync}: {@code bytes} from {@code src + srcOffset} to {@code dst + dstOffset}. */
    static int memcpyHtoDAsync(DeviceBuffer dst, long dstOffset, PinnedBuffer src, long srcOffset, long bytes,
            StreamHandle stream) {
        if (!FFM) {
            return JCudaDriver.cuMemcpyHtoDAsync(dst.rawPointer().withByteOffset(dstOffset),
                    src.rawPointer().withByteOffset(srcOffset), bytes, stream.raw());
        }
        try {
            return (int) Ffm.HTOD.invokeExact(AddressedDevicePointer.addressOf(dst.rawPointer()) + dstOffset,
                    src.address + srcOffset, bytes, stream.address());
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code cuMemcpyDtoHAsync}: {@code bytes} from {@code src + srcOffset} to {@code dst + dstOffset}. */
    static int memcpyDtoHAsync(PinnedBuffer dst, long dstOffset, DeviceBuffer src, long srcOffset, long bytes,
            StreamHandle stream) {
        if (!FFM) {
            return JCudaDriver.cuMemcpyDtoHAsync(dst.rawPointer().withByteOffset(dstOffset),
                    src.rawPointer().withByteOffset(srcOffset), bytes, stream.raw());
        }
        try {
            return (int) Ffm.DTOH.invokeExact(dst.address + dstOffset,
                    AddressedDevicePointer.addressOf(src.rawPointer()) + srcOffset, bytes, stream.address());
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code cuStreamWriteValue32}: writes {@code value} to {@code address} once the stream's earlier work is done. */
    static int streamWriteValue32(StreamHandle stream, CUdeviceptr address, int value, int flags) {
        if (!FFM) {
            return JCudaDriver.cuStreamWriteValue32(stream.raw(), address, value, flags);
        }
        try {
            return (int) Ffm.WRITE32.invokeExact(stream.address(), handleAddress(address), value, flags);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** A downcall declares Throwable; it throws nothing but what the JVM may throw anywhere. */
    private static RuntimeException unexpected(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException("a downcall to libcuda threw " + t, t);
    }

    // ---- kernel parameters ------------------------------------------------------------------------

    /** Bytes of one argument's value slot, and of one pointer. */
    private static final int SLOT = 8;

    /**
     * Writes {@code args} into {@code block} (at least {@code 16 * args.length} bytes): pointer
     * {@code i} at offset {@code 8 i}, pointing at value slot {@code i} at offset {@code 8 (n + i)}.
     * The types are those {@link #params} let through.
     */
    private static void pack(MemorySegment block, Object[] args) {
        int n = args.length;
        long base = block.address();
        for (int i = 0; i < n; i++) {
            long slot = (long) SLOT * (n + i);
            block.set(JAVA_LONG, (long) SLOT * i, base + slot);
            Object a = args[i];
            if (a instanceof DeviceBuffer b) {
                block.set(JAVA_LONG, slot, AddressedDevicePointer.addressOf(b.rawPointer()));
            } else if (a instanceof Integer v) {
                block.set(JAVA_INT, slot, v);
            } else if (a instanceof Long v) {
                block.set(JAVA_LONG, slot, v);
            } else if (a instanceof Float v) {
                block.set(JAVA_FLOAT, slot, v);
            } else if (a instanceof Double v) {
                block.set(JAVA_DOUBLE, slot, v);
            } else {
                throw new IllegalArgumentException("argument " + i + " has unsupported type "
                        + (a == null ? "null" : a.getClass().getName())); // params() let none through
            }
        }
    }

    /** The reused parameter blocks (see the class comment). */
    private static final class ParamBlocks {
        /** Arguments a block has room for unless a launch needs more (then it gets one of its own size). */
        static final int ARGS = 16;
        private static final int STRIPES = Integer.highestOneBit(Math.max(1, Runtime.getRuntime().availableProcessors()) * 4 - 1) << 1;
        private static final AtomicReferenceArray<@Nullable MemorySegment> SPARE = new AtomicReferenceArray<>(STRIPES);

        private ParamBlocks() {}

        static int stripe() {
            return (int) (Thread.currentThread().threadId() & (STRIPES - 1));
        }

        /** A block for {@code n} arguments that no other thread holds until {@link #giveBack}. */
        static MemorySegment claim(int stripe, int n) {
            MemorySegment block = SPARE.getAndSet(stripe, null);
            if (block == null || block.byteSize() < 2L * SLOT * n) {
                block = Arena.ofAuto().allocate(2L * SLOT * Math.max(ARGS, n), SLOT);
            }
            return block;
        }

        static void giveBack(int stripe, MemorySegment block) {
            SPARE.setRelease(stripe, block);
        }
    }

    /**
     * For the tests: the kernel-parameter block the downcall would pass for {@code args}, read back:
     * for each argument the offset of its value from the block's start (read from the block's
     * pointer array), then each value's bits as a long (an int or a float zero-extended), or an
     * empty array for no argument. The block is packed as {@link #launchKernel} packs it, with the
     * downcalls on or not.
     */
    static long @Nullable [] paramsLayout(Object... args) {
        int n = args.length;
        long[] out = new long[2 * n];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(2L * SLOT * Math.max(1, n), SLOT);
            pack(block, args);
            for (int i = 0; i < n; i++) {
                long offset = block.get(JAVA_LONG, (long) SLOT * i) - block.address();
                out[i] = offset;
                Object a = args[i];
                out[n + i] = a instanceof Integer || a instanceof Float
                        ? Integer.toUnsignedLong(block.get(JAVA_INT, offset)) : block.get(JAVA_LONG, offset);
            }
        }
        return out;
    }
}
