package io.cudaloom.sim;

import io.cudaloom.DeviceMemory;
import io.cudaloom.HostMemory;
import io.cudaloom.LaunchLimits;
import io.cudaloom.LiveResources;
import io.cudaloom.internal.BackendAccess;
import io.cudaloom.internal.WorkChecks;

import io.cudaloom.GpuDevice;
import io.cudaloom.ReactorClosedException;
import io.cudaloom.ReactorConfig;
import io.cudaloom.protocol.SlotTable.OffHeapFlagArray;
import io.cudaloom.spi.DeviceBackend;
import io.cudaloom.spi.DeviceProbes;
import io.cudaloom.spi.FlagMemory;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A device that runs on the CPU, so the whole protocol runs end to end without a GPU: each
 * {@link SimulatedStream} executes its commands in order on a thread of its own, and a flag write
 * stores 1 into the same off-heap flag memory ({@link OffHeapFlagArray}) that the reactor's scanner
 * reads, exactly as the GPU writes pinned memory.
 *
 * <p>{@link GpuDevice#open()} picks it when no CUDA device is present; {@link #create()} picks it
 * explicitly. It can inject device faults ({@link SimulatedStream#injectFault}).
 */
public final class SimulatedDevice extends GpuDevice {
    /** What the API lets its backends do (BackendAccess): start the reactor, count memory, admit work, read faults. */
    static final BackendAccess.Hooks API = BackendAccess.hooks();
    private static final AtomicInteger IDS = new AtomicInteger();

    private final int id = IDS.incrementAndGet();
    private final AtomicInteger streamIds = new AtomicInteger();
    private final Set<SimulatedStream> streams = ConcurrentHashMap.newKeySet();
    /** How to stop each live stream's worker if this device is dropped unclosed (none references a stream). */
    private final Set<Runnable> stopWorkers = ConcurrentHashMap.newKeySet();
    private final Set<FlagMemory> releasedMemory = ConcurrentHashMap.newKeySet();
    private final AtomicLong writesAfterRelease = new AtomicLong();
    private final AtomicInteger liveFlagMemories = new AtomicInteger();
    private volatile boolean closed;

    /**
     * An H100's launch limits, and an H200's (compute capability 9.0, as {@code cuDeviceGetAttribute}
     * reports them): 1,024 threads per block, blocks up to (1,024, 1,024, 64), grids up to
     * (2^31 - 1, 65,535, 65,535), 227 KB of dynamic shared memory per block.
     */
    private static final LaunchLimits H100_LIMITS = new LaunchLimits(1024, 1024, 1024, 64, Integer.MAX_VALUE, 65_535,
            65_535, 232_448);

    /** Commands a stream's queue holds, as the CUDA driver's per-stream queue (about 1,000 entries). */
    public static final int DEFAULT_QUEUE_ENTRIES = 1024;

    private final int queueEntries;
    private final LongAdder queueFullWaits = new LongAdder();
    private final LongAdder queueFullNanos = new LongAdder();

    /** The modelled cost of one submission, spent holding {@link #driverLock} (0: no lock taken). */
    private final long submissionCostNanos;
    /** The driver's per-context lock, modelled: every submission of the device holds it for its cost. */
    private final ReentrantLock driverLock = new ReentrantLock();
    /** Threads inside a submission to any of the device's streams now, and the most seen at once. */
    private final AtomicInteger inSubmission = new AtomicInteger();
    private final AtomicInteger maxInSubmission = new AtomicInteger();

    private SimulatedDevice(int queueEntries, long submissionCostNanos) {
        this.queueEntries = queueEntries;
        this.submissionCostNanos = submissionCostNanos;
    }

    public static SimulatedDevice create() {
        return create(ReactorConfig.defaults());
    }

    public static SimulatedDevice create(ReactorConfig config) {
        return create(config, DEFAULT_QUEUE_ENTRIES);
    }

    /**
     * A simulated device whose streams each queue at most {@code queueEntries} commands (see
     * {@link #queueEntries()}).
     *
     * @throws IllegalArgumentException if {@code queueEntries} is below 1
     */
    public static SimulatedDevice create(ReactorConfig config, int queueEntries) {
        return create(config, queueEntries, Duration.ZERO);
    }

    /**
     * A simulated device whose streams each queue at most {@code queueEntries} commands, and whose
     * every submission (a kernel, copy, memset, flag write or host callback handed to a stream's
     * queue) holds a device-wide lock for {@code submissionCost}, spent busy (no park): a model of
     * the CUDA driver's per-context lock, which serializes the submissions of every thread of the
     * context. Zero (the default): no lock is taken.
     *
     * @throws IllegalArgumentException if {@code queueEntries} is below 1 or the cost is negative or over 10 ms
     */
    public static SimulatedDevice create(ReactorConfig config, int queueEntries, Duration submissionCost) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(submissionCost, "submissionCost");
        if (submissionCost.isNegative() || submissionCost.compareTo(Duration.ofMillis(10)) > 0) {
            throw new IllegalArgumentException("submissionCost must be between 0 and 10 ms, was " + submissionCost);
        }
        if (queueEntries < 1) {
            throw new IllegalArgumentException("queueEntries must be >= 1, was " + queueEntries);
        }
        SimulatedDevice device = new SimulatedDevice(queueEntries, submissionCost.toNanos());
        Set<Runnable> stopWorkers = device.stopWorkers; // the clean-up holds this set, not the device
        API.startReactor(device, config, new DeviceBackend() {
            @Override
            public FlagMemory allocateFlags(int count) {
                return device.allocateFlags(count);
            }

            @Override
            public Runnable cleanupIfUnclosed() {
                return () -> stopWorkers.forEach(Runnable::run);
            }

            @Override
            public DeviceProbes probes() {
                return device.probes;
            }
        }, s -> ((SimulatedStream) s).new Backend());
        return device;
    }

    /**
     * Commands each stream's queue holds (default {@value #DEFAULT_QUEUE_ENTRIES}): every kernel,
     * copy, memset, flag write and host callback takes one until it has run; a submission to a full
     * queue spins its thread until there is room, as the CUDA driver does.
     */
    public int queueEntries() {
        return queueEntries;
    }

    /**
     * Submissions (work, flag writes, host callbacks) that found their stream's queue full and spun
     * their thread until it had room: what the CUDA driver does to a carrier thread. With admission
     * ({@link ReactorConfig.Builder#admissionLimit}) below the queue, this stays 0.
     */
    long queueFullWaits() {
        return queueFullWaits.sum();
    }

    /** Total time submitting threads spun on full queues, in nanoseconds. */
    long queueFullSpinNanos() {
        return queueFullNanos.sum();
    }

    /** A thread entered a submission to one of the device's streams ({@link #maxThreadsInSubmission}). */
    void submissionEntered() {
        maxInSubmission.accumulateAndGet(inSubmission.incrementAndGet(), Math::max);
    }

    void submissionLeft() {
        inSubmission.decrementAndGet();
    }

    /**
     * The most threads seen at once inside a submission to any of the device's streams: with
     * submission by combining, at most one per stream with work queued, and at most the cap of
     * {@link ReactorConfig#drainers()} when it is set.
     */
    public int maxThreadsInSubmission() {
        return maxInSubmission.get();
    }

    /** Takes the modelled driver lock and spends the submission's cost holding it (none at cost 0). */
    boolean enterDriver() {
        if (submissionCostNanos <= 0) {
            return false;
        }
        driverLock.lock();
        long end = System.nanoTime() + submissionCostNanos;
        while (System.nanoTime() - end < 0) {
            Thread.onSpinWait();
        }
        return true;
    }

    void exitDriver(boolean locked) {
        if (locked) {
            driverLock.unlock();
        }
    }

    void queueFullWait(long nanos) {
        queueFullWaits.increment();
        queueFullNanos.add(nanos);
    }

    @Override
    public String name() {
        return "simulated device " + id;
    }

    @Override
    public boolean isSimulated() {
        return true;
    }

    /**
     * Those of an H100 or H200, so that a launch a GPU would refuse (more than 1,024 threads per
     * block, a grid's y dimension over 65,535, ...) is refused here too, with the same message.
     */
    @Override
    public LaunchLimits launchLimits() {
        return H100_LIMITS;
    }

    /**
     * {@inheritDoc}
     *
     * @throws ReactorClosedException if the device is closed
     */
    @Override
    public SimulatedStream newStream() {
        if (closed) {
            throw new ReactorClosedException(name() + " is closed: it makes no new streams");
        }
        SimulatedStream s = new SimulatedStream(this, streamIds.incrementAndGet());
        streams.add(s);
        stopWorkers.add(s.workerStop());
        return s;
    }

    /**
     * {@inheritDoc}
     *
     * @throws ReactorClosedException if the device is closed
     */
    @Override
    public DeviceMemory allocate(long bytes) {
        return allocate(bytes, false);
    }

    /**
     * {@inheritDoc}
     *
     * @throws ReactorClosedException if the device is closed
     */
    @Override
    public HostMemory allocateHost(long bytes) {
        return allocate(bytes, true);
    }

    private SimulatedMemory allocate(long bytes, boolean host) {
        WorkChecks.allocation(host ? "host memory" : "device memory", bytes, Integer.MAX_VALUE - 8);
        if (closed) {
            throw new ReactorClosedException(name() + " is closed: it allocates no memory");
        }
        return new SimulatedMemory(this, bytes, host);
    }

    /** The simulated memory behind {@code m}, checked to be of the kind the copy expects. */
    SimulatedMemory memory(Object m, boolean host) {
        if (!(m instanceof SimulatedMemory s) || s.isHost() != host) {
            throw new IllegalArgumentException(m + " is not " + (host ? "host" : "device") + " memory of " + name());
        }
        return s;
    }

    /**
     * Flag writes that reached memory after the reactor had freed it: must stay 0 (the reactor
     * frees flag memory only once no write can land). Checked by the tests.
     */
    long writesAfterRelease() {
        return writesAfterRelease.get();
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed;
    }

    /** Flag memories allocated and not yet freed. */
    int liveFlagMemories() {
        return liveFlagMemories.get();
    }

    /** Streams created and not yet finished (closed and drained). */
    int liveStreams() {
        return streams.size();
    }

    /** The counters the library's tests read, through BackendAccess.Hooks#probes (not API). */
    private final DeviceProbes probes = new DeviceProbes() {
        @Override
        public int liveStreams() {
            return SimulatedDevice.this.liveStreams();
        }

        @Override
        public long writesAfterRelease() {
            return SimulatedDevice.this.writesAfterRelease();
        }

        @Override
        public int liveFlagMemories() {
            return SimulatedDevice.this.liveFlagMemories();
        }

        @Override
        public long queueFullWaits() {
            return SimulatedDevice.this.queueFullWaits();
        }

        @Override
        public long queueFullSpinNanos() {
            return SimulatedDevice.this.queueFullSpinNanos();
        }
    };

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        super.close(); // wakes waiters; flag memory is freed once the streams' writes settle
        for (SimulatedStream s : streams) {
            s.close(); // pending commands still run, as with cuStreamDestroy
        }
    }

    private FlagMemory allocateFlags(int count) {
        OffHeapFlagArray flags = OffHeapFlagArray.allocate(count);
        liveFlagMemories.incrementAndGet();
        FlagMemory[] self = new FlagMemory[1];
        self[0] = new FlagMemory(flags, () -> {
            if (releasedMemory.add(self[0])) {
                liveFlagMemories.decrementAndGet();
            }
        });
        return self[0];
    }

    void writeFlag(FlagMemory memory, int slot) {
        if (releasedMemory.contains(memory)) {
            writesAfterRelease.incrementAndGet(); // on a GPU: a write into freed pinned memory
            return;
        }
        memory.flags().setRelease(slot, 1);
    }

    void streamFinished(SimulatedStream s) {
        streams.remove(s);
        stopWorkers.remove(s.workerStop());
    }

    @Override
    public String toString() {
        return name();
    }
}
