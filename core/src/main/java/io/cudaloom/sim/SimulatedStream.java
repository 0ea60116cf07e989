package io.cudaloom.sim;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuFaultException;
import io.cudaloom.GpuKernel;
import io.cudaloom.HostMemory;
import io.cudaloom.GpuStream;
import io.cudaloom.ReactorClosedException;
import io.cudaloom.spi.DeviceProbes;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamOp;
import io.cudaloom.spi.StreamState;
import io.cudaloom.spi.StreamSubmission;
import io.cudaloom.internal.KernelRuns;
import io.cudaloom.internal.WorkChecks;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * A stream of the {@link SimulatedDevice}: commands run in submission order on one platform
 * thread of its own. A kernel is a duration to spend or a Java task to run; a fault injected with
 * {@link #injectFault} behaves like a sticky CUDA error: every later command, flag writes and host
 * callbacks included, is discarded and the stream reports {@link StreamState#FAULTED}. The fault is
 * reported, by the stream's thread as the command fails, to the device's fault owner
 * ({@code StreamSubmission#faults()}), which keeps it: this class keeps no copy.
 */
public final class SimulatedStream extends GpuStream {
    /** Below this a simulated kernel busy-waits (a timed park would oversleep); above, it parks. */
    private static final long SPIN_BELOW_NANOS = 20_000;

    private final SimulatedDevice device;
    private final String name;
    private final LinkedBlockingQueue<Command> queue = new LinkedBlockingQueue<>();
    private final AtomicLong submitted = new AtomicLong();
    private final AtomicLong finished = new AtomicLong();
    private final Thread worker;
    private final Runnable workerStop;
    /**
     * Set by {@link Backend#shutdown()} as it queues {@link Command#SHUTDOWN}, read by {@link #enqueue};
     * guarded by {@link #queue}'s monitor, so that nothing is ever queued behind SHUTDOWN (it would
     * never run, and the stream would never settle): a command whose closed check passed just
     * before a concurrent close is refused here instead.
     */
    private boolean shutDown;
    /** The reactor's object for this stream: every command is handed to it ({@link StreamSubmission#submit}). */
    private final StreamSubmission submission;

    SimulatedStream(SimulatedDevice device, int id) {
        super(device);
        this.device = device;
        this.submission = SimulatedDevice.API.submission(this);
        this.name = "sim-stream-" + id;
        LinkedBlockingQueue<Command> commands = queue; // the stop action holds the queue, not the stream
        this.workerStop = () -> commands.add(Command.SHUTDOWN);
        this.worker = Thread.ofPlatform().daemon(true).name(device.name() + " " + name)
                .unstarted(new Worker(new WeakReference<>(this), queue));
        worker.start();
    }

    /** Spends {@code duration} on the stream's thread (parking, then spinning for the last 20 us). */
    @Override
    public void launchKernel(Duration duration) {
        long nanos = WorkChecks.durationNanos(duration);
        submit(() -> spend(nanos));
    }

    /** Runs the kernel's Java body once per thread of the grid, on this stream's thread. */
    @Override
    public void launch(GpuKernel kernel, int gridX, int blockX, Object... args) {
        WorkChecks.launch(device, kernel, gridX, blockX, args);
        SimulatedMemory[] uses = memoryArguments(args);
        GpuKernel.Body body = SimulatedDevice.API.kernelBody(kernel);
        submitUsing("kernel " + kernel.entry(), uses, () -> {
            Runnable threads = KernelRuns.prepare(kernel.entry(), gridX, blockX, args,
                    m -> device.memory(m, false).commandBuffer(), body);
            return threads::run;
        });
    }

    @Override
    public void copy(HostMemory src, long srcOffset, DeviceMemory dst, long dstOffset, long bytes) {
        WorkChecks.copy(device, src, srcOffset, dst, dstOffset, bytes);
        SimulatedMemory from = device.memory(src, true);
        SimulatedMemory to = device.memory(dst, false);
        submitUsing("copy host to device", new SimulatedMemory[] {from, to},
                () -> move(from.commandBuffer(), srcOffset, to.commandBuffer(), dstOffset, bytes));
    }

    @Override
    public void copy(DeviceMemory src, long srcOffset, HostMemory dst, long dstOffset, long bytes) {
        WorkChecks.copy(device, dst, dstOffset, src, srcOffset, bytes);
        SimulatedMemory from = device.memory(src, false);
        SimulatedMemory to = device.memory(dst, true);
        submitUsing("copy device to host", new SimulatedMemory[] {from, to},
                () -> move(from.commandBuffer(), srcOffset, to.commandBuffer(), dstOffset, bytes));
    }

    @Override
    public void memset32(DeviceMemory dst, int value, long count) {
        WorkChecks.memset32(device, dst, count);
        SimulatedMemory memory = device.memory(dst, false);
        submitUsing("memset32", new SimulatedMemory[] {memory}, () -> {
            ByteBuffer to = memory.commandBuffer();
            return () -> {
                for (int i = 0; i < count; i++) {
                    to.putInt(i * 4, value);
                }
            };
        });
    }

    /** The simulated memory among a launch's arguments (checked to be this device's by WorkChecks). */
    private SimulatedMemory[] memoryArguments(Object[] args) {
        int n = 0;
        for (Object a : args) {
            if (a instanceof DeviceMemory) {
                n++;
            }
        }
        SimulatedMemory[] uses = new SimulatedMemory[n];
        int i = 0;
        for (Object a : args) {
            if (a instanceof DeviceMemory m) {
                uses[i++] = device.memory(m, false);
            }
        }
        return uses;
    }

    /** {@link #submitUsing(String, SimulatedMemory[], java.util.function.Supplier)} of a command made now. */
    private void submitUsing(String what, SimulatedMemory[] uses, Command command) {
        submitUsing(what, uses, () -> command);
    }

    /**
     * Submits the command {@code make} prepares, which uses {@code uses}: inside each memory's
     * lifetime ({@link io.cudaloom.internal.MemoryLifetime}: entered here, at the call, before
     * anything is checked; the entry holds them until its command is in the stream's queue, or was
     * discarded, and exits them then, {@link SimOp#finish}), so that a close frees the memory only
     * after the command ran. The command checks on the stream's thread that none of its memory was
     * freed meanwhile (a fault naming the command and the memory if so).
     *
     * @throws IllegalStateException if a memory is closed (nothing is enqueued)
     */
    private void submitUsing(String what, SimulatedMemory[] uses, Supplier<Command> make) {
        int entered = 0;
        boolean handedOver = false;
        try {
            for (SimulatedMemory m : uses) {
                if (!m.lifetime.enter()) {
                    throw m.closedError();
                }
                entered++;
            }
            checkUsable();
            Command c = make.get();
            String stream = name;
            SimOp op = new SimOp(this, () -> {
                for (SimulatedMemory m : uses) {
                    m.checkNotFreed(what, stream);
                }
                c.run();
            }, uses);
            handedOver = true; // the entry exits the lifetimes now, whatever happens
            if (!submission.submit(op)) {
                throw closed(); // raced the close and came after it (combining)
            }
        } finally {
            if (!handedOver) {
                for (int i = 0; i < entered; i++) {
                    uses[i].lifetime.exit();
                }
            }
        }
    }

    private static final SimulatedMemory[] NO_MEMORY = new SimulatedMemory[0];

    /**
     * A work entry: the command, handed to the stream's queue by the caller (direct, {@link #call()})
     * or by the drainer of the submission queue (combining, {@link #submit}).
     */
    private static final class SimOp extends StreamOp {
        private final SimulatedStream stream;
        private final Command command;
        private final SimulatedMemory[] uses;
        private boolean queued;

        SimOp(SimulatedStream stream, Command command, SimulatedMemory[] uses) {
            super(true);
            this.stream = stream;
            this.command = command;
            this.uses = uses;
        }

        @Override
        public @org.jspecify.annotations.Nullable String submit(long position) {
            // Refused only after the close's shutdown (work that raced the close): dropped, no fault.
            queued = stream.enqueue(stream.inOrder(position, command));
            return null;
        }

        /** Direct: queued on the caller's thread, after the checks again (a close or fault lets parked callers through). */
        @Override
        public void call() {
            stream.checkUsable();
            if (!stream.enqueue(command)) {
                throw stream.closed(); // closed since the check above
            }
            queued = true;
        }

        @Override
        public void finish(boolean submitted) {
            for (SimulatedMemory m : uses) {
                if (submitted && queued) {
                    m.lifetime.usedOn(stream);
                }
                m.lifetime.exit();
            }
        }
    }

    /** The highest queue position run so far (the stream's thread only), and the entries run out of order or twice. */
    private long lastPosition = -1;
    private final AtomicLong outOfOrder = new AtomicLong();
    private final AtomicLong positionsRun = new AtomicLong();
    /** Threads inside a submission of this stream now, and the most seen at once. */
    private final AtomicInteger inSubmission = new AtomicInteger();
    private final AtomicInteger maxInSubmission = new AtomicInteger();

    private Command inOrder(long position, Command c) {
        return () -> {
            positionsRun.incrementAndGet();
            if (position <= lastPosition) {
                outOfOrder.incrementAndGet();
            }
            lastPosition = position;
            c.run();
        };
    }

    /**
     * The most threads seen at once inside a submission to this stream (handing a command to its
     * queue, holding the device's modelled driver lock): 1 when one thread at a time submits.
     */
    public int maxThreadsInSubmission() {
        return maxInSubmission.get();
    }

    /**
     * Submissions made on a reactor's scanner thread (named {@value DeviceProbes#SCANNER_THREAD_PREFIX}...):
     * 0 under submission by combining, whose scanner hands its drains off.
     */
    public long submissionsByScanner() {
        return submissionsByScanner.sum();
    }

    private final LongAdder submissionsByScanner = new LongAdder();

    /** Work entries of the submission queue (combining) that ran on this stream: each once, in position order. */
    public long queuedWorkRun() {
        return positionsRun.get();
    }

    /** Work entries of the submission queue that ran out of position order or twice (0 when the queue is sound). */
    public long queuedWorkOutOfOrder() {
        return outOfOrder.get();
    }

    private static void move(ByteBuffer from, long fromOffset, ByteBuffer to, long toOffset, long bytes) {
        to.put((int) toOffset, from, (int) fromOffset, (int) bytes);
    }

    /**
     * Submit a kernel that runs {@code task} on the stream's thread, in order with the rest.
     *
     * @throws GpuFaultException if the stream has faulted
     * @throws ReactorClosedException if the device is closed
     * @throws IllegalStateException if the stream is closed
     */
    public void launch(Runnable task) {
        Objects.requireNonNull(task, "task");
        submit(task::run);
    }

    /**
     * Submit a command that faults the stream when it runs, like a kernel's illegal memory access:
     * it and everything after it never completes.
     *
     * @throws GpuFaultException if the stream has faulted already
     * @throws ReactorClosedException if the device is closed
     * @throws IllegalStateException if the stream is closed
     */
    public void injectFault(String error) {
        Objects.requireNonNull(error, "error");
        submit(() -> {
            throw new InjectedFault(error);
        });
    }

    /** The simulated device this stream belongs to. */
    public SimulatedDevice simulatedDevice() {
        return device;
    }

    @Override
    public String toString() {
        return name;
    }

    // ---- the stream's thread ------------------------------------------------------------------

    private void submit(Command c) {
        checkUsable();
        if (!submission.submit(new SimOp(this, c, NO_MEMORY))) {
            throw closed(); // raced the close and came after it (combining)
        }
    }

    private void checkUsable() {
        if (isClosed() || device.isClosed()) {
            throw closed();
        }
        if (submission.faults().hasFaulted()) {
            throw submission.faults().failure("work refused, the stream faulted earlier");
        }
    }

    private RuntimeException closed() {
        // The device closes itself (closed = true) before its streams, so a stream closed by the
        // device's close always sees the device closed here.
        if (device.isClosed()) {
            return new ReactorClosedException(device.name() + " is closed: stream " + name + " takes no more work");
        }
        return new IllegalStateException("stream " + name + " is closed");
    }

    /**
     * Queues {@code c} unless the stream has shut down; false if it has. Like the CUDA driver's
     * per-stream queue, it holds at most {@link SimulatedDevice#queueEntries()} commands (kernels,
     * copies, flag writes, host callbacks): a submission to a full queue spins the submitting thread
     * until one finishes, as {@code cuLaunchKernel} does inside the driver, and is counted
     * ({@link SimulatedDevice#queueFullWaits()}). The bound is checked outside the monitor, so
     * racing submitters may overfill it by a few, as they may the driver's.
     */
    private boolean enqueue(Command c) {
        int inside = inSubmission.incrementAndGet(); // threads inside a submission of this stream
        maxInSubmission.accumulateAndGet(inside, Math::max);
        device.submissionEntered();
        if (Thread.currentThread().getName().startsWith(DeviceProbes.SCANNER_THREAD_PREFIX)) {
            submissionsByScanner.increment();
        }
        try {
            if (submitted.get() - finished.get() >= device.queueEntries()) {
                waitForRoom();
            }
            boolean locked = device.enterDriver(); // the modelled per-context lock, held for the submission's cost
            try {
                synchronized (queue) {
                    if (shutDown) {
                        return false;
                    }
                    submitted.incrementAndGet(); // before the queue: queryState never reports IDLE with c pending
                    queue.add(c);
                    return true;
                }
            } finally {
                device.exitDriver(locked);
            }
        } finally {
            device.submissionLeft();
            inSubmission.decrementAndGet();
        }
    }

    /** Spins, as the driver does, until the queue has room (or the stream can take nothing anyway). */
    private void waitForRoom() {
        long start = System.nanoTime();
        int limit = device.queueEntries();
        while (submitted.get() - finished.get() >= limit && !shutDownSeen()) {
            Thread.onSpinWait();
        }
        device.queueFullWait(System.nanoTime() - start);
    }

    private boolean shutDownSeen() {
        synchronized (queue) {
            return shutDown;
        }
    }

    /** Ends the worker after the commands already queued, holding nothing but the queue (for a device dropped unclosed). */
    Runnable workerStop() {
        return workerStop;
    }

    /**
     * The stream's thread. Waiting for a command it holds only the queue and a weak reference to
     * the stream, so an idle stream (and its device) dropped unclosed can be collected; the
     * device's clean-up then queues {@link Command#SHUTDOWN} and the thread ends.
     */
    private static final class Worker implements Runnable {
        private final WeakReference<SimulatedStream> stream;
        private final LinkedBlockingQueue<Command> queue;

        Worker(WeakReference<SimulatedStream> stream, LinkedBlockingQueue<Command> queue) {
            this.stream = stream;
            this.queue = queue;
        }

        @Override
        public void run() {
            while (true) {
                Command c;
                try {
                    c = queue.take();
                } catch (InterruptedException e) {
                    continue; // nothing interrupts this thread on purpose; keep serving the queue
                }
                SimulatedStream s = stream.get();
                if (s == null) {
                    return; // collected: only its clean-up's SHUTDOWN can have come
                }
                if (c == Command.SHUTDOWN) {
                    s.device.streamFinished(s);
                    return;
                }
                s.execute(c);
                s = null; // not held while waiting for the next command
            }
        }
    }

    private void execute(Command c) {
        if (!submission.faults().hasFaulted()) {
            try {
                c.run();
            } catch (InjectedFault | SimulatedMemory.UseAfterFree e) {
                submission.faults().streamFaulted(String.valueOf(e.getMessage()), null);
            } catch (KernelRuns.KernelFailed e) { // a GpuKernel's body: names the kernel and the thread
                submission.faults().streamFaulted(String.valueOf(e.getMessage()), e.getCause());
            } catch (RuntimeException | Error e) { // a task of launch(Runnable)
                submission.faults().streamFaulted("kernel failed: " + e, e); // the kernel's exception: every fault's cause
            }
        }
        finished.incrementAndGet(); // executed or discarded after a fault; after the report (queryState)
    }

    private static void spend(long nanos) {
        if (nanos <= 0) {
            return;
        }
        long end = System.nanoTime() + nanos;
        if (nanos >= SPIN_BELOW_NANOS) {
            long remaining;
            while ((remaining = end - System.nanoTime()) > SPIN_BELOW_NANOS) {
                LockSupport.parkNanos(remaining - SPIN_BELOW_NANOS);
            }
        }
        while (System.nanoTime() - end < 0) {
            Thread.onSpinWait();
        }
    }

    @FunctionalInterface
    private interface Command {
        Command SHUTDOWN = () -> {};

        void run();
    }

    private static final class InjectedFault extends RuntimeException {
        private static final long serialVersionUID = 1L;

        InjectedFault(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * The stream's side for the reactor (the SPI), made by the device's stream factory
     * (BackendAccess.Hooks#startReactor) and held by the reactor's object for the stream, which calls
     * it directly: the stream's state, the flag writes and host callbacks queued on its thread, and
     * its end.
     */
    final class Backend implements StreamBackend {

        @Override
        public StreamState queryState() {
            // The count first: the worker reports a fault before it counts the failed command as
            // finished, so a query that sees every command finished also sees the fault.
            boolean idle = finished.get() == submitted.get();
            if (submission.faults().hasFaulted()) {
                return StreamState.FAULTED;
            }
            return idle ? StreamState.IDLE : StreamState.BUSY;
        }

        @Override
        public boolean enqueueFlagWrite(FlagMemory memory, int slot) {
            // Refused once shut down (enqueue), not once closed: with combining the drainer submits the
            // entries appended before the close after it (the closed check was made at the append).
            if (submission.faults().hasFaulted()) {
                return false;
            }
            return enqueue(() -> device.writeFlag(memory, slot));
        }

        @Override
        public boolean enqueueHostCallback(Runnable callback) {
            if (submission.faults().hasFaulted()) {
                return false;
            }
            return enqueue(callback::run);
        }

        @Override
        public boolean flagWritesSettled() {
            return finished.get() == submitted.get();
        }

        /**
         * The backend's half of {@link #close()}, once, after the stream was marked closed and its
         * drain's flag write or host callback was queued: commands already queued still run, then the
         * stream's thread ends.
         */
        @Override
        public void shutdown() {
            synchronized (queue) {
                shutDown = true;
                queue.add(Command.SHUTDOWN);
            }
        }

        @Override
        public boolean runsOnCurrentThread() {
            return Thread.currentThread() == worker;
        }
    }
}
