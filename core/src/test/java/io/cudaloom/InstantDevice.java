package io.cudaloom;

import io.cudaloom.protocol.SlotTable.OffHeapFlagArray;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamState;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * A test device whose streams always report BUSY, so every await takes the full registration
 * path. By default flag writes land the moment they are enqueued, with no device-side work or
 * allocation, which isolates the reactor's own cost (the allocation test). {@link #refusing()}
 * makes one that refuses every flag write, and host callbacks until {@link #acceptHostCallbacks}
 * is set (then runs them at once). {@link #holding} makes one whose flag writes never land, with
 * each stream's fault and settlement set by the test ({@link InstantStream#faulted},
 * {@link InstantStream#settled}).
 *
 * <p>Any stream can also be held like a real one ({@link InstantStream#hold}): a gate is counted as
 * a submission, and the flag writes and host callbacks enqueued behind a closed gate wait, in
 * order, until it opens; {@link InstantStream#fault} discards them, as a sticky device error does.
 * The semantics suite ({@link SemanticsSuite}, through {@link InstantSemanticsTest}) uses that; a
 * stream never held behaves as above.
 */
final class InstantDevice extends GpuDevice {
    private final boolean refuseFlagWrites;
    private final boolean holdFlagWrites;
    volatile boolean acceptHostCallbacks = true;
    /** Set once the reactor has freed the flag memory; flag writes landing after it are counted. */
    private volatile boolean flagsReleased;
    private final AtomicLong writesAfterRelease = new AtomicLong();

    private InstantDevice(boolean refuseFlagWrites, boolean holdFlagWrites) {
        this.refuseFlagWrites = refuseFlagWrites;
        this.holdFlagWrites = holdFlagWrites;
    }

    static InstantDevice create(ReactorConfig config) {
        InstantDevice d = new InstantDevice(false, false);
        d.startReactor(config, d::allocateFlags, s -> new InstantStream.Backend((InstantStream) s));
        return d;
    }

    static InstantDevice refusing() {
        InstantDevice d = new InstantDevice(true, false);
        d.acceptHostCallbacks = false;
        // Not coalescing: a stream with no counted work would then be known complete, never registering.
        // Direct submission: combining takes every registration at its append, and a refusal by the
        // backend at the drain faults the stream (CombinedSubmission), so nothing is refused at the call.
        d.startReactor(ReactorConfig.builder().coalesce(false).submission(Submission.DIRECT).build(), d::allocateFlags,
                s -> new InstantStream.Backend((InstantStream) s));
        return d;
    }

    static InstantDevice holding(ReactorConfig config) {
        InstantDevice d = new InstantDevice(false, true);
        d.startReactor(config, d::allocateFlags, s -> new InstantStream.Backend((InstantStream) s));
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
    public LaunchLimits launchLimits() {
        return new LaunchLimits(1024, 1024, 1024, 64, Integer.MAX_VALUE, 65_535, 65_535, 232_448);
    }

    @Override
    public InstantStream newStream() {
        return new InstantStream(this, refuseFlagWrites, holdFlagWrites);
    }

    private FlagMemory allocateFlags(int count) {
        return new FlagMemory(OffHeapFlagArray.allocate(count), () -> flagsReleased = true);
    }

    /** Flag writes that landed after the reactor had freed the flag memory: must stay 0. */
    long writesAfterRelease() {
        return writesAfterRelease.get();
    }

    private void land(FlagMemory memory, int slot) {
        if (flagsReleased) {
            writesAfterRelease.incrementAndGet(); // on a GPU: a write into freed pinned memory
            return;
        }
        memory.flags().setRelease(slot, 1);
    }

    @Override
    public DeviceMemory allocate(long bytes) {
        throw new UnsupportedOperationException("the instant test device runs no work: it has no memory");
    }

    @Override
    public HostMemory allocateHost(long bytes) {
        throw new UnsupportedOperationException("the instant test device runs no work: it has no memory");
    }

    static final class InstantStream extends GpuStream {
        /** The error a fault of an instant stream names. */
        static final String FAULT = "INJECTED_TEST_FAULT";
        private final boolean refuseFlagWrites;
        private final boolean holdFlagWrites;
        /**
         * The stream has faulted (the "driver's" sticky state): queryState reports it to the
         * stream's fault sink, as the CUDA backend reports what cuStreamQuery returned, then
         * answers FAULTED.
         */
        volatile boolean faulted;
        /** False: queryState answers FAULTED without reporting the fault (a backend breaking the SPI's contract). */
        volatile boolean reportsFaults = true;
        /** Reported by flagWritesSettled: no write enqueued on this stream can land any more. */
        volatile boolean settled = true;
        /** Thrown by the hook named, when called on the reactor's scanner thread (null: none). */
        volatile @Nullable Throwable queryFailure;
        volatile @Nullable Throwable settleFailure;
        /** Thrown by queryState on every thread (a backend whose query fails outright), when set. */
        volatile @Nullable RuntimeException queryFailureEverywhere;
        /** Thrown by shutdown, when set (a backend breaking its contract). */
        volatile @Nullable RuntimeException shutdownFailure;
        /** Times drained() was called (the close's drain succeeded). */
        final java.util.concurrent.atomic.AtomicInteger drainedCalls = new java.util.concurrent.atomic.AtomicInteger();
        /** Refuse flag writes from now on (host callbacks are still taken). */
        volatile boolean refuseFlagWritesNow;
        /**
         * Gates and what waits behind them: {@link Gate}s and deferred actions (flag writes, host
         * callbacks), in submission order. Guarded by this stream's monitor.
         */
        private final ArrayDeque<Object> held = new ArrayDeque<>();
        /** Guarded by this stream's monitor: a thread is running the actions freed by a gate. */
        private boolean draining;

        InstantStream(InstantDevice device, boolean refuseFlagWrites, boolean holdFlagWrites) {
            super(device);
            this.refuseFlagWrites = refuseFlagWrites;
            this.holdFlagWrites = holdFlagWrites;
        }

        /** Nothing to release: once closed (isClosed()), flag writes and host callbacks are refused. */
        private void shutdown() {
            RuntimeException e = shutdownFailure;
            if (e != null) {
                throw e;
            }
        }

        private void onDrained() {
            drainedCalls.incrementAndGet();
        }

        @Override
        public void launch(GpuKernel kernel, int gridX, int blockX, Object... args) {
            throw new UnsupportedOperationException("the instant test device runs no work; use hold()");
        }

        @Override
        public void launchKernel(java.time.Duration duration) {
            throw new UnsupportedOperationException("the instant test device runs no work; use hold()");
        }

        @Override
        public void copy(HostMemory src, long srcOffset, DeviceMemory dst, long dstOffset, long bytes) {
            throw new UnsupportedOperationException("the instant test device runs no work");
        }

        @Override
        public void copy(DeviceMemory src, long srcOffset, HostMemory dst, long dstOffset, long bytes) {
            throw new UnsupportedOperationException("the instant test device runs no work");
        }

        @Override
        public void memset32(DeviceMemory dst, int value, long count) {
            throw new UnsupportedOperationException("the instant test device runs no work");
        }

        private StreamState query() {
            RuntimeException everywhere = queryFailureEverywhere;
            if (everywhere != null) {
                throw everywhere;
            }
            throwOnScanner(queryFailure);
            if (!faulted) {
                return StreamState.BUSY;
            }
            if (reportsFaults) {
                owner().faults().streamFaulted(FAULT, null);
            }
            return StreamState.FAULTED;
        }

        private void throwOnScanner(@Nullable Throwable t) {
            if (t != null && Thread.currentThread() == device().reactor().scannerThread()) {
                if (t instanceof Error e) {
                    throw e;
                }
                throw (RuntimeException) t;
            }
        }

        private boolean flagWrite(FlagMemory memory, int slot) {
            // A faulted stream takes no more work, as CUDA's sticky errors and the simulated stream.
            if (refuseFlagWrites || refuseFlagWritesNow || faulted || isClosed()) {
                return false;
            }
            if (holdFlagWrites) {
                return true;
            }
            synchronized (this) {
                if (!held.isEmpty()) { // behind a closed gate: lands when it opens
                    held.add((Runnable) () -> ((InstantDevice) device()).land(memory, slot));
                    return true;
                }
            }
            ((InstantDevice) device()).land(memory, slot); // allocates nothing: AwaitAllocationTest
            return true;
        }

        private boolean hostCallback(Runnable callback) {
            if (!((InstantDevice) device()).acceptHostCallbacks || faulted || isClosed()) {
                return false;
            }
            synchronized (this) {
                if (!held.isEmpty()) {
                    held.add(callback);
                    return true;
                }
            }
            callback.run();
            return true;
        }

        private boolean writesSettled() {
            throwOnScanner(settleFailure);
            if (!settled) {
                return false;
            }
            synchronized (this) {
                return held.stream().noneMatch(Runnable.class::isInstance);
            }
        }

        /**
         * Work that holds the stream: flag writes and host callbacks enqueued after it wait until
         * the returned gate opens. Counted as a submission, like a launch.
         */
        Gate hold() {
            Gate gate = new Gate();
            owner().submit(new io.cudaloom.spi.StreamOp(true) {
                @Override
                public @Nullable String submit(long position) {
                    synchronized (InstantStream.this) {
                        held.add(gate);
                    }
                    return null;
                }
            });
            return gate;
        }

        /** A sticky fault, now: the stream reports FAULTED, and what waits behind a gate is discarded. */
        void fault() {
            faulted = true;
            synchronized (this) {
                held.clear();
            }
        }

        /** Runs the actions no longer behind a closed gate, in order, outside the monitor; one drainer at a time. */
        private void drain() {
            synchronized (this) {
                if (draining) {
                    return; // the running drainer sees the opened gate on its next look
                }
                draining = true;
            }
            while (true) {
                Runnable next = null;
                synchronized (this) {
                    while (!held.isEmpty()) {
                        Object head = held.peek();
                        if (head instanceof Gate g) {
                            if (!g.open) {
                                break;
                            }
                            held.poll();
                        } else {
                            next = (Runnable) held.poll();
                            break;
                        }
                    }
                    if (next == null) {
                        draining = false;
                        return;
                    }
                }
                next.run();
            }
        }

        /**
         * The reactor's side of the stream (the SPI), delegating to the private methods above: a
         * separate object, as the real backends have, so that none of those methods overrides a
         * package-private method of GpuStream of the same name (this class is in its package).
         */
        private record Backend(InstantStream stream) implements StreamBackend {
            @Override
            public StreamState queryState() {
                return stream.query();
            }

            @Override
            public boolean enqueueFlagWrite(FlagMemory memory, int slot) {
                return stream.flagWrite(memory, slot);
            }

            @Override
            public boolean enqueueHostCallback(Runnable callback) {
                return stream.hostCallback(callback);
            }

            @Override
            public boolean flagWritesSettled() {
                return stream.writesSettled();
            }

            @Override
            public void shutdown() {
                stream.shutdown();
            }

            @Override
            public void drained() {
                stream.onDrained();
            }
        }

        /** Holds its stream until {@link #open()}ed. */
        final class Gate {
            private boolean open; // guarded by the stream's monitor

            void open() {
                synchronized (InstantStream.this) {
                    open = true;
                }
                drain();
            }
        }
    }
}
