package io.cudaloom;

import io.cudaloom.protocol.OffHeapFlagArray;

/**
 * A test device whose flag writes land the moment they are enqueued and whose streams always
 * report BUSY: every await takes the full registration path with no device-side work or
 * allocation, which isolates the reactor's own cost (used by the allocation test).
 */
final class InstantDevice extends GpuDevice {
    private InstantDevice() {}

    static InstantDevice create(ReactorConfig config) {
        InstantDevice d = new InstantDevice();
        d.startReactor(config);
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
        return new InstantStream(this);
    }

    @Override
    protected FlagMemory allocateFlags(int count) {
        return new FlagMemory(OffHeapFlagArray.allocate(count), 0L, () -> {});
    }

    static final class InstantStream extends GpuStream {
        private volatile boolean closed;

        InstantStream(GpuDevice device) {
            super(device);
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
            memory.flags().setRelease(slot, 1);
            return true;
        }

        @Override
        protected boolean enqueueHostCallback(Runnable callback) {
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
