package io.cudaloom;

import static jcuda.driver.JCudaDriver.CU_MEMHOSTREGISTER_DEVICEMAP;
import static jcuda.driver.JCudaDriver.CU_MEMHOSTREGISTER_PORTABLE;
import static jcuda.driver.JCudaDriver.cuMemHostGetDevicePointer;
import static jcuda.driver.JCudaDriver.cuMemHostRegister;
import static jcuda.driver.JCudaDriver.cuMemHostUnregister;
import static jcuda.driver.JCudaDriver.cuStreamWaitValue32;

import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaStream;
import io.cudaloom.cuda.DeviceBuffer;
import io.cudaloom.cuda.Kernels;
import io.cudaloom.cuda.PinnedBuffer;
import io.cudaloom.junit.GpuTest;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.IntBuffer;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntSupplier;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;
import jcuda.driver.CUstreamWaitValue_flags;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;

/**
 * The semantics suite ({@link SemanticsSuite}) on a real GPU, one {@code @Nested} class per section
 * suite, each with this backend's fixture (tag {@code gpu}, which the nested classes inherit: CI,
 * which has none, excludes it; where no CUDA device is present, {@link GpuTest} on this class skips
 * it and every nested class with one printed reason). The suite opens its own devices (several per
 * test, each with its strategy and settings) and checks them itself, so the extension's injection
 * and leak check have nothing to do here. A gate is a
 * {@code cuStreamWaitValue32} on a word of host memory registered with the device: the stream waits
 * on the GPU until the test writes 1 there. A device fault cannot be made in-process (a sticky error poisons the
 * whole process's CUDA context on this driver), so that test is skipped here; the fault is tested
 * in a child JVM by {@code CudaReactorGpuTest.faultWakesWaitersWithTheCudaErrorAndAFreshContextWorks}.
 */
@Tag("gpu")
@GpuTest
class CudaSemanticsGpuTest {
    @Nested
    class Await extends AwaitSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new CudaFixture(strategy);
        }
    }

    @Nested
    class EventCoverage extends EventCoverageSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new CudaFixture(strategy);
        }
    }

    @Nested
    class FallbackAndStrategy extends FallbackAndStrategySemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new CudaFixture(strategy);
        }
    }

    @Nested
    class FaultAndClose extends FaultAndCloseSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new CudaFixture(strategy);
        }
    }

    @Nested
    class StreamClose extends StreamCloseSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new CudaFixture(strategy);
        }
    }

    @Nested
    class Coalescing extends CoalescingSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new CudaFixture(strategy);
        }
    }

    @Nested
    class StreamOrderedFree extends StreamOrderedFreeSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new CudaFixture(strategy);
        }
    }

    @Nested
    class NonBlocking extends NonBlockingSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new CudaFixture(strategy);
        }
    }

    static final class CudaFixture extends BackendFixture {
        private static final VarHandle INT = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());
        private static final int WORDS = 256;
        private static final int PAGE = 4096;

        /** A gate's registered page, kept reachable (and registered) until cleanup. */
        private record GatePage(CudaDevice device, ByteBuffer page) {}

        private final List<GatePage> gatePages = new ArrayList<>();

        private final Map<CudaDevice, Kernels> kernels = new IdentityHashMap<>();
        private final List<AutoCloseable> buffers = new ArrayList<>();

        CudaFixture(CompletionStrategy strategy) {
            super(strategy);
        }

        @Override
        String backend() {
            return "CUDA device";
        }

        @Override
        GpuDevice openDevice(ReactorConfig config) {
            return CudaDevice.open(0, config);
        }

        /**
         * {@code cuStreamWaitValue32(word >= 1)} on the first word of a page of Java-owned memory
         * registered with the device ({@code cuMemHostRegister(DEVICEMAP)}), counted as a submission
         * ({@link GpuStream#noteExternalSubmission()}: coalescing needs it). The memory is the
         * fixture's, not the context's: opening a gate after the device's close released its context
         * writes into memory that is still there.
         */
        @Override
        Gate holdStream(GpuStream stream) {
            CudaStream cs = (CudaStream) stream;
            CudaDevice device = cs.cudaDevice();
            synchronized (this) {
                kernels.computeIfAbsent(device, CudaFixture::loadAndWarm);
            }
            ByteBuffer page = ByteBuffer.allocateDirect(2 * PAGE).alignedSlice(PAGE).order(ByteOrder.nativeOrder());
            INT.setVolatile(page, 0, 0);
            device.makeCurrent();
            check(cuMemHostRegister(Pointer.to(page), PAGE, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP),
                    "cuMemHostRegister");
            synchronized (this) {
                gatePages.add(new GatePage(device, page));
            }
            CUdeviceptr onDevice = new CUdeviceptr();
            check(cuMemHostGetDevicePointer(onDevice, Pointer.to(page), 0), "cuMemHostGetDevicePointer");
            device.makeCurrent(); // immediately before the raw call (CudaDevice's context rule)
            check(cuStreamWaitValue32(cs.handle(), onDevice, 1, CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ),
                    "cuStreamWaitValue32");
            cs.noteExternalSubmission();
            return () -> INT.setVolatile(page, 0, 1);
        }

        /**
         * Loads the kernels and runs {@code fill_u32} once, before any gate closes. On the H200
         * (driver 580) the suite hung when a module was loaded and its kernel first launched while
         * another stream was blocked in {@code cuStreamWaitValue32}, and passed once they were
         * warmed up first; the driver's lazy module loading (its default since CUDA 12.2), which
         * loads a kernel's code at its first launch, is the likely reason (not isolated further).
         */
        private static Kernels loadAndWarm(CudaDevice device) {
            Kernels k = Kernels.load(device);
            CudaStream s = device.newStream();
            try (DeviceBuffer b = device.allocate(4L * WORDS)) {
                s.launch(k.fill, 1, WORDS, b, 0, WORDS);
                s.synchronize();
            } finally {
                s.close();
            }
            return k;
        }

        @Override
        Fault fault(GpuStream stream) {
            unsupported("a device fault is sticky and poisons the whole process's CUDA context on this driver"
                    + " (FaultRecoveryProbe), so it cannot be made in-process; it is tested in a child JVM by"
                    + " CudaReactorGpuTest.faultWakesWaitersWithTheCudaErrorAndAFreshContextWorks");
            throw new AssertionError("unreachable");
        }

        /** {@code fill_u32} into a device buffer, then an async copy into pinned memory; reads check every word. */
        @Override
        IntSupplier write(GpuStream stream, int value) {
            CudaStream cs = (CudaStream) stream;
            CudaDevice device = cs.cudaDevice();
            Kernels k;
            DeviceBuffer buf;
            PinnedBuffer host;
            synchronized (this) {
                k = kernels.computeIfAbsent(device, Kernels::load);
                buf = device.allocate(4L * WORDS);
                host = device.allocateHost(4L * WORDS);
                buffers.add(buf);
                buffers.add(host);
            }
            host.ints().put(0, ~value).put(WORDS - 1, ~value); // poison the ends
            cs.launch(k.fill, 1, WORDS, buf, value, WORDS);
            cs.copy(buf, host, 4L * WORDS);
            return () -> {
                IntBuffer ints = host.ints();
                for (int i = 0; i < WORDS; i++) {
                    if (ints.get(i) != value) {
                        return ints.get(i);
                    }
                }
                return value;
            };
        }

        @Override
        void released() {
            List<AutoCloseable> toClose;
            List<Kernels> modules;
            List<GatePage> pages;
            synchronized (this) {
                toClose = List.copyOf(buffers);
                modules = List.copyOf(kernels.values());
                pages = List.copyOf(gatePages);
                buffers.clear();
                kernels.clear();
                gatePages.clear();
            }
            java.util.Set<CudaDevice> devices = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
            modules.forEach(k -> devices.add(k.module().device()));
            pages.forEach(p -> devices.add(p.device()));
            for (CudaDevice d : devices) {
                try {
                    d.synchronize(); // every gate is open: nothing may still use what is freed below
                } catch (RuntimeException closedOrFaulted) {
                    // a closed device: its context (and what was registered with it) goes with it
                }
            }
            for (GatePage p : pages) {
                try {
                    p.device().makeCurrent();
                    cuMemHostUnregister(Pointer.to(p.page()));
                } catch (IllegalStateException closed) {
                    // the device was closed by the test: the registration ends with its context
                }
            }
            for (AutoCloseable c : toClose) {
                try {
                    c.close();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
            modules.forEach(Kernels::close);
        }

        private static void check(int result, String call) {
            if (result != CUresult.CUDA_SUCCESS) {
                throw new AssertionError(call + " failed: " + CUresult.stringFor(result));
            }
        }
    }
}
