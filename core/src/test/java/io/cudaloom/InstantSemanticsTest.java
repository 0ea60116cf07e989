package io.cudaloom;

import io.cudaloom.InstantDevice.InstantStream;
import java.util.function.IntSupplier;

/**
 * The {@link SemanticsSuite} on the {@link InstantDevice}: no work at all, flag writes land the
 * moment nothing holds the stream, host callbacks run on the thread that lets them through, and
 * streams always report themselves busy.
 */
class InstantSemanticsTest extends SemanticsSuite {
    @Override
    BackendFixture fixture(CompletionStrategy strategy) {
        return new InstantFixture(strategy);
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
