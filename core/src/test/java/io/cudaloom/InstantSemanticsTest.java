package io.cudaloom;

import io.cudaloom.InstantDevice.InstantStream;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Nested;

/**
 * The semantics suite ({@link SemanticsSuite}) on the {@link InstantDevice}: no work at all, flag
 * writes land the moment nothing holds the stream, host callbacks run on the thread that lets them
 * through, and streams always report themselves busy. One {@code @Nested} class per section suite,
 * each with this backend's fixture.
 */
class InstantSemanticsTest {
    @Nested
    class Await extends AwaitSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new InstantFixture(strategy);
        }
    }

    @Nested
    class EventCoverage extends EventCoverageSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new InstantFixture(strategy);
        }
    }

    @Nested
    class FallbackAndStrategy extends FallbackAndStrategySemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new InstantFixture(strategy);
        }
    }

    @Nested
    class FaultAndClose extends FaultAndCloseSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new InstantFixture(strategy);
        }
    }

    @Nested
    class StreamClose extends StreamCloseSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new InstantFixture(strategy);
        }
    }

    @Nested
    class Coalescing extends CoalescingSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new InstantFixture(strategy);
        }
    }

    @Nested
    class StreamOrderedFree extends StreamOrderedFreeSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new InstantFixture(strategy);
        }
    }

    @Nested
    class NonBlocking extends NonBlockingSemantics {
        @Override
        BackendFixture fixture(CompletionStrategy strategy) {
            return new InstantFixture(strategy);
        }
    }

    static final class InstantFixture extends BackendFixture {
        InstantFixture(CompletionStrategy strategy) {
            super(strategy);
        }

        @Override
        String backend() {
            return "instant test device";
        }

        @Override
        GpuDevice openDevice(ReactorConfig config) {
            return InstantDevice.create(config);
        }

        @Override
        Gate holdStream(GpuStream stream) {
            return ((InstantStream) stream).hold()::open;
        }

        /** The stream is held; the trigger makes it report FAULTED and discards what waits behind the gate. */
        @Override
        Fault fault(GpuStream stream) {
            hold(stream);
            return new Fault() {
                @Override
                public void trigger() {
                    ((InstantStream) stream).fault();
                }

                @Override
                public String errorName() {
                    return "INJECTED_TEST_FAULT";
                }
            };
        }

        @Override
        IntSupplier write(GpuStream stream, int value) {
            unsupported("it runs no work, so there is no device result to read back");
            throw new AssertionError("unreachable");
        }

        @Override
        boolean reportsIdle() {
            return false;
        }

        @Override
        void refuseFlagWrites(GpuStream stream) {
            ((InstantStream) stream).refuseFlagWritesNow = true;
        }

        @Override
        long writesAfterRelease(GpuDevice device) {
            return ((InstantDevice) device).writesAfterRelease();
        }
    }
}
