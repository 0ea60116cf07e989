package io.cudaloom;

import io.cudaloom.protocol.OffHeapFlagArray;

/**
 * A test device whose streams always report BUSY, so every await takes the full registration
 * path. By default flag writes land the moment they are enqueued, with no device-side work or
 * allocation, which isolates the reactor's own cost (the allocation test). {@link #refusing()}
 * makes one that refuses every flag write, and host callbacks until {@link #acceptHostCallbacks}
 * is set (then runs them at once).
 */
final class InstantDevice extends GpuDevice {
    private final boolean refuseFlagWrites;
    volatile boolean acceptHostCallbacks = true;

    private InstantDevice(boolean refuseFlagWrites) {
        this.refuseFlagWrites = refuseFlagWrites;
    }

    static InstantDevice create(ReactorConfig config) {
        InstantDevice d = new InstantDevice(false);
        d.startReactor(config);
        return d;
    }

    static InstantDevice refusing() {
        InstantDevice d = new InstantDevice(true);
        d.acceptHostCallbacks = false;
        d.startReactor(ReactorConfig.defaults());
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
    public GpuStream newStream() {
        return new InstantStream(this, refuseFlagWrites);
    }

    @Override
    protected FlagMemory allocateFlags(int count) {
        return new FlagMemory(OffHeapFlagArray.allocate(count), 0L, () -> {});
    }

    static final class InstantStream extends GpuStream {
        private final boolean refuseFlagWrites;
        private volatile boolean closed;

        InstantStream(InstantDevice device, boolean refuseFlagWrites) {
            super(device);
            this.refuseFlagWrites = refuseFlagWrites;
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
        protected StreamState queryState() {
            return StreamState.BUSY;
        }

        @Override
        protected String faultDescription() {
            return "no fault";
        }

        @Override
        protected boolean enqueueFlagWrite(FlagMemory memory, int slot) {
            if (refuseFlagWrites) {
                return false;
            }
            memory.flags().setRelease(slot, 1);
            return true;
        }

        @Override
        protected boolean enqueueHostCallback(Runnable callback) {
            if (!((InstantDevice) device()).acceptHostCallbacks) {
                return false;
            }
            callback.run();
            return true;
        }

        @Override
        protected void synchronize() {}

        @Override
        protected boolean flagWritesSettled() {
            return true;
        }
    }
}
