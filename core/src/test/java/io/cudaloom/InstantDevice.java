package io.cudaloom;

import io.cudaloom.protocol.OffHeapFlagArray;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamState;
import org.jspecify.annotations.Nullable;

/**
 * A test device whose streams always report BUSY, so every await takes the full registration
 * path. By default flag writes land the moment they are enqueued, with no device-side work or
 * allocation, which isolates the reactor's own cost (the allocation test). {@link #refusing()}
 * makes one that refuses every flag write, and host callbacks until {@link #acceptHostCallbacks}
 * is set (then runs them at once). {@link #holding} makes one whose flag writes never land, with
 * each stream's fault and settlement set by the test ({@link InstantStream#faulted},
 * {@link InstantStream#settled}).
 */
final class InstantDevice extends GpuDevice {
    private final boolean refuseFlagWrites;
    private final boolean holdFlagWrites;
    volatile boolean acceptHostCallbacks = true;

    private InstantDevice(boolean refuseFlagWrites, boolean holdFlagWrites) {
        this.refuseFlagWrites = refuseFlagWrites;
        this.holdFlagWrites = holdFlagWrites;
    }

    static InstantDevice create(ReactorConfig config) {
        InstantDevice d = new InstantDevice(false, false);
        d.startReactor(config, d::allocateFlags);
        return d;
    }

    static InstantDevice refusing() {
        InstantDevice d = new InstantDevice(true, false);
        d.acceptHostCallbacks = false;
        d.startReactor(ReactorConfig.defaults(), d::allocateFlags);
        return d;
    }

    static InstantDevice holding(ReactorConfig config) {
        InstantDevice d = new InstantDevice(false, true);
        d.startReactor(config, d::allocateFlags);
        return d;
    }

    @Override
    public String name() {
        return "instant test device";
    }

    @Override
    public boolean isSimulated() {
        return true;
    }

    @Override
    public InstantStream newStream() {
        return new InstantStream(this, refuseFlagWrites, holdFlagWrites);
    }

    private FlagMemory allocateFlags(int count) {
        return new FlagMemory(OffHeapFlagArray.allocate(count), () -> {});
    }

    /** A stream that is its own backend (a test double; real backends keep that side private). */
    static final class InstantStream extends GpuStream implements StreamBackend {
        private final boolean refuseFlagWrites;
        private final boolean holdFlagWrites;
        private volatile boolean closed;
        /** Reported by queryState: the stream has faulted. */
        volatile boolean faulted;
        /** Reported by flagWritesSettled: no write enqueued on this stream can land any more. */
        volatile boolean settled = true;
        /** Thrown by the hook named, when called on the reactor's scanner thread (null: none). */
        volatile @Nullable Throwable queryFailure;
        volatile @Nullable Throwable describeFailure;
        volatile @Nullable Throwable settleFailure;

        InstantStream(InstantDevice device, boolean refuseFlagWrites, boolean holdFlagWrites) {
            super(device, s -> (InstantStream) s);
            this.refuseFlagWrites = refuseFlagWrites;
            this.holdFlagWrites = holdFlagWrites;
        }

        @Override
        public boolean isClosed() {
            return closed;
        }

        @Override
        public void close() {
            closed = true;
        }

        @Override
        public StreamState queryState() {
            throwOnScanner(queryFailure);
            return faulted ? StreamState.FAULTED : StreamState.BUSY;
        }

        @Override
        public String faultDescription() {
            throwOnScanner(describeFailure);
            return faulted ? "INJECTED_TEST_FAULT" : "no fault";
        }

        private void throwOnScanner(@Nullable Throwable t) {
            if (t != null && Thread.currentThread() == device().reactor().scannerThread()) {
                if (t instanceof Error e) {
                    throw e;
                }
                throw (RuntimeException) t;
            }
        }

        @Override
        public boolean enqueueFlagWrite(FlagMemory memory, int slot) {
            if (refuseFlagWrites) {
                return false;
            }
            if (!holdFlagWrites) {
                memory.flags().setRelease(slot, 1);
            }
            return true;
        }

        @Override
        public boolean enqueueHostCallback(Runnable callback) {
            if (!((InstantDevice) device()).acceptHostCallbacks) {
                return false;
            }
            callback.run();
            return true;
        }

        @Override
        public boolean flagWritesSettled() {
            throwOnScanner(settleFailure);
            return settled;
        }
    }
}
