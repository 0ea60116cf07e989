package io.cudaloom;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.util.concurrent.CountDownLatch;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Nested;

/**
 * The semantics suite ({@link SemanticsSuite}) on the simulated device: streams are CPU threads
 * running commands in order. One {@code @Nested} class per section suite, each with this backend's fixture.
 */
class SimulatedSemanticsTest {
    @Nested
    class Await extends AwaitSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new SimulatedFixture(strategy);
        }
    }

    @Nested
    class EventCoverage extends EventCoverageSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new SimulatedFixture(strategy);
        }
    }

    @Nested
    class FallbackAndStrategy extends FallbackAndStrategySemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new SimulatedFixture(strategy);
        }
    }

    @Nested
    class FaultAndClose extends FaultAndCloseSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new SimulatedFixture(strategy);
        }
    }

    @Nested
    class StreamClose extends StreamCloseSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new SimulatedFixture(strategy);
        }
    }

    @Nested
    class Coalescing extends CoalescingSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new SimulatedFixture(strategy);
        }
    }

    @Nested
    class StreamOrderedFree extends StreamOrderedFreeSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new SimulatedFixture(strategy);
        }
    }

    @Nested
    class NonBlocking extends NonBlockingSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new SimulatedFixture(strategy);
        }
    }

    static final class SimulatedFixture extends BackendFixture {
        SimulatedFixture(CompletionStrategy strategy) {
            super(strategy);
        }

        @Override
        String backend() {
            return "simulated device";
        }

        @Override
        GpuDevice openDevice(ReactorConfig config) {
            return SimulatedDevice.create(config);
        }

        /** A kernel blocking the stream's thread on a latch. */
        @Override
        Gate holdStream(GpuStream stream) {
            CountDownLatch latch = ReactorTestSupport.gate((SimulatedStream) stream);
            return latch::countDown;
        }

        /** A held stream with an injected fault behind the gate: it faults when the gate opens. */
        @Override
        Fault fault(GpuStream stream) {
            Gate gate = hold(stream);
            ((SimulatedStream) stream).injectFault("CUDA_ERROR_ILLEGAL_ADDRESS (simulated)");
            return new Fault() {
                @Override
                public void trigger() {
                    gate.open();
                }

                @Override
                public String errorName() {
                    return "CUDA_ERROR_ILLEGAL_ADDRESS";
                }
            };
        }

        /** A kernel storing {@code value} into a plain int, read without any synchronisation of the test's. */
        @Override
        IntSupplier write(GpuStream stream, int value) {
            int[] cell = {~value};
            ((SimulatedStream) stream).launch(() -> cell[0] = value);
            return () -> cell[0];
        }

        @Override
        long writesAfterRelease(GpuDevice device) {
            return TestAccess.probes(device).writesAfterRelease();
        }
    }
}
