package io.cudaloom;

import io.cudaloom.protocol.BatchFormation;
import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * A blocking call that many threads make at once and the GPU serves in batches: each caller passes
 * one input to {@link #call} and blocks (a virtual thread parks) until its own output is back, while
 * the batcher packs the inputs of all waiting callers into pinned staging memory and enqueues, per
 * batch, one host-to-device copy, one launch of the user's {@link Step} over the batch and one
 * device-to-host copy. A thread-per-request server keeps its plain blocking call, and 10,000 such
 * calls cost a few hundred launches.
 *
 * <p><b>When a batch closes.</b> At once when nothing of this batcher is in flight, so a lone caller
 * pays no added latency; when {@link Builder#maxBatch} callers wait; or when the oldest waiting
 * caller has waited {@link Builder#maxDelay}. So under load, while a batch runs, the next fills
 * itself (the group-commit rule; {@link BatchFormation} has the protocol). Up to
 * {@link Builder#streams} batches are in flight at once, each on a stream with staging of its own.
 *
 * <p><b>Outcomes</b> (each call ends with exactly one):
 * <ul>
 *   <li>its output;
 *   <li>the batch's failure, for every caller of that batch: a fault of the batch's work
 *       ({@link GpuFaultException} naming it), or the exception of {@link Step#launch};
 *   <li>its own failure, for that caller only: {@link IllegalArgumentException} if its input does not
 *       fit its staging slot ({@link Builder#inputBytes}), or what {@link Step#pack} or
 *       {@link Step#unpack} threw for it;
 *   <li>{@link InterruptedException} or a timeout ({@link TimeoutException}, {@link #call(Object, Duration)}):
 *       the caller leaves without disturbing the others; if a batch had already taken it, its
 *       result is dropped, and its staging slot is reused only after that batch completes;
 *   <li>{@link IllegalStateException} "closed": the batcher was closed before a batch took it.
 * </ul>
 *
 * <p>Nothing leaks: the staging memory and streams are the device's own ({@link GpuDevice#liveResources()}),
 * and {@link #close()} fails the waiting callers, waits for the batches in flight and gives them back.
 *
 * @param <I> the input of one call
 * @param <O> its output
 */
public final class GpuBatcher<I, O> implements AutoCloseable {
    /**
     * What the batcher does with a batch: pack each input into its slot, enqueue the work over the
     * batch, unpack each output. The slots are views of pinned staging memory in native byte order,
     * positioned at 0 with their limit at {@link Builder#inputBytes} or {@link Builder#outputBytes}.
     */
    public interface Step<I, O> {
        /** Writes {@code input} into {@code slot}, the input's place in the batch (relative puts from 0). */
        void pack(I input, ByteBuffer slot);

        /**
         * Enqueues the work over {@code count} inputs on {@code stream}: input {@code i} is at byte
         * {@code i * inputBytes} of {@code in}, its output goes to byte {@code i * outputBytes} of
         * {@code out}. The batcher copies {@code in} from the staging before and {@code out} back after.
         */
        void launch(GpuStream stream, DeviceMemory in, DeviceMemory out, int count);

        /** Reads one output from {@code slot} (relative gets from 0). */
        O unpack(ByteBuffer slot);
    }

    /** What the batcher has done so far. */
    public record Stats(long calls, long batches, long itemsLaunched, long left, long failedBatches, int maxBatch) {
        /** Mean items per batch; 0 before the first batch. */
        public double meanBatchSize() {
            return batches == 0 ? 0 : (double) itemsLaunched / batches;
        }
    }

    /** A builder of {@link GpuBatcher}s. */
    public static final class Builder<I, O> {
        private final GpuDevice device;
        private final Step<I, O> step;
        private int streams = 2;
        private int maxBatch = 256;
        private Duration maxDelay = Duration.ofMillis(1);
        private int inputBytes = -1;
        private int outputBytes = -1;
        private boolean inPlace;

        private Builder(GpuDevice device, Step<I, O> step) {
            this.device = Objects.requireNonNull(device, "device");
            this.step = Objects.requireNonNull(step, "step");
        }

        /** Batches in flight at once, each on a stream of its own (default 2, 1..64). */
        public Builder<I, O> streams(int n) {
            if (n < 1 || n > 64) {
                throw new IllegalArgumentException("streams must be between 1 and 64, was " + n);
            }
            this.streams = n;
            return this;
        }

        /** The most calls in one batch (default 256, 1..1,048,576). */
        public Builder<I, O> maxBatch(int n) {
            if (n < 1 || n > 1 << 20) {
                throw new IllegalArgumentException("maxBatch must be between 1 and 1048576, was " + n);
            }
            this.maxBatch = n;
            return this;
        }

        /**
         * How long the oldest waiting call may wait for its batch to fill while another batch is in
         * flight (default 1 ms; 0 closes a batch whenever a stream is free).
         */
        public Builder<I, O> maxDelay(Duration d) {
            Objects.requireNonNull(d, "maxDelay");
            if (d.isNegative() || d.compareTo(Duration.ofSeconds(10)) > 0) {
                throw new IllegalArgumentException("maxDelay must be between 0 and 10 s, was " + d);
            }
            this.maxDelay = d;
            return this;
        }

        /** Bytes of one input's staging slot (required, at least 1). */
        public Builder<I, O> inputBytes(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("inputBytes must be >= 1, was " + n);
            }
            this.inputBytes = n;
            return this;
        }

        /** Bytes of one output's staging slot (required, at least 1). */
        public Builder<I, O> outputBytes(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("outputBytes must be >= 1, was " + n);
            }
            this.outputBytes = n;
            return this;
        }

        /**
         * The step writes each output over its input, in the same device memory: {@link Step#launch}
         * gets the same memory as {@code in} and {@code out}, and {@code outputBytes} is
         * {@code inputBytes} (for kernels that work in place, such as {@code GpuKernel.SCALE_F32}).
         */
        public Builder<I, O> inPlace(int slotBytes) {
            inputBytes(slotBytes);
            outputBytes(slotBytes);
            this.inPlace = true;
            return this;
        }

        /**
         * Allocates the staging (pinned host and device memory for {@code maxBatch} inputs and
         * outputs per stream) and opens the streams.
         *
         * @throws IllegalStateException if inputBytes or outputBytes was not set, or the staging of
         *     one stream would exceed 2 GiB
         */
        public GpuBatcher<I, O> build() {
            if (inputBytes < 0 || outputBytes < 0) {
                throw new IllegalStateException("set inputBytes and outputBytes before build()");
            }
            if ((long) maxBatch * Math.max(inputBytes, outputBytes) > Integer.MAX_VALUE - 8) {
                throw new IllegalStateException("maxBatch x slot bytes must fit in 2 GiB, was " + maxBatch + " x "
                        + Math.max(inputBytes, outputBytes));
            }
            return new GpuBatcher<>(this);
        }
    }

    /** A builder for a batcher on {@code device} that runs {@code step}. */
    public static <I, O> Builder<I, O> builder(GpuDevice device, Step<I, O> step) {
        return new Builder<>(device, step);
    }

    /**
     * One call: its input, its outcome, its place in the batch formation; for a blocking call, its
     * thread, and the batch it leads if that thread launched it ({@link #launch}).
     */
    private static final class Call<I, O> extends BatchFormation.Request {
        final I input;
        final CompletableFuture<O> outcome = new CompletableFuture<>();
        /** The thread blocked in {@code call} for it, or null for {@link #submit}. */
        final @Nullable Thread caller;
        /**
         * Set by {@link #launch} when it ran on {@link #caller}'s own thread (inside this call's
         * {@code enter}) and the batch holds this call: the caller then waits for the batch and
         * delivers it. Written and read by that one thread only, so a plain field suffices.
         */
        @Nullable Lead lead;

        Call(I input, long now, @Nullable Thread caller) {
            super(now);
            this.input = input;
            this.caller = caller;
        }
    }

    /** A launched batch whose delivery belongs to one of its callers (see {@link #lead}). */
    private record Lead(Object lane, List<?> batch, GpuEvent done) {}

    /** One stream with its staging: busy from a launch until its batch is delivered. */
    private final class Lane {
        final int index;
        final GpuStream stream;
        final HostMemory hostIn;
        final HostMemory hostOut;
        final DeviceMemory deviceIn;
        final DeviceMemory deviceOut;
        /** Written by the dispatcher (true, before the launch) and by the delivery (false, before it drains). */
        volatile boolean busy;

        Lane(int index, GpuStream stream, HostMemory hostIn, HostMemory hostOut, DeviceMemory deviceIn,
                DeviceMemory deviceOut) {
            this.index = index;
            this.stream = stream;
            this.hostIn = hostIn;
            this.hostOut = hostOut;
            this.deviceIn = deviceIn;
            this.deviceOut = deviceOut;
        }
    }

    private final GpuDevice device;
    private final Step<I, O> step;
    private final int inputBytes;
    private final int outputBytes;
    private final int maxBatch;
    private final long maxDelayNanos;
    private final List<Lane> lanes = new ArrayList<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final BatchFormation<Call<I, O>> formation;
    /**
     * Runs each batch's delivery (unpacking, waking its callers, the next dispatch): one platform
     * thread of this batcher's own, so that under load a delivery does not queue behind thousands
     * of runnable virtual threads for a carrier (on 2 cores, a virtual thread per delivery waited
     * tens of milliseconds with 20,000 callers), and the next batch's driver calls hold no carrier.
     * A batch launched by one of its own blocking callers (inside that call, so that caller found a
     * lane free: a lone caller, or light load) is delivered by that caller instead, which is awake
     * and mounted when the event completes ({@link #awaitLead}). Ended by {@link #close()}.
     */
    private final ExecutorService delivery = Executors.newSingleThreadExecutor(
            Thread.ofPlatform().daemon(true).name("cuda-loom-batcher-delivery").factory());
    private final AtomicBoolean closed = new AtomicBoolean();
    /** The monitor close() waits on until no batch is in flight. */
    private final Object idle = new Object();
    private final AtomicLong calls = new AtomicLong();
    private final AtomicLong batches = new AtomicLong();
    private final AtomicLong items = new AtomicLong();
    private final AtomicLong left = new AtomicLong();
    private final AtomicLong failedBatches = new AtomicLong();
    /** The timer's drains so far (for tests: a timer that reschedules itself while due would count without pause). */
    final AtomicLong timerRuns = new AtomicLong();
    /** The next timer drain, if one is scheduled (for maxDelay); replaced as deadlines come. */
    private final AtomicReference<@Nullable ScheduledFuture<?>> timer =
            new AtomicReference<>();

    /** One timer thread for every batcher: it only calls drain() when a batch's maxDelay ends. */
    private static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().daemon(true).name("cuda-loom-batcher-timer").factory());

    private GpuBatcher(Builder<I, O> b) {
        this.device = b.device;
        this.step = b.step;
        this.inputBytes = b.inputBytes;
        this.outputBytes = b.outputBytes;
        this.maxBatch = b.maxBatch;
        this.maxDelayNanos = b.maxDelay.toNanos();
        try {
            for (int i = 0; i < b.streams; i++) {
                DeviceMemory in = device.allocate((long) maxBatch * inputBytes);
                lanes.add(new Lane(i, device.newStream(), device.allocateHost((long) maxBatch * inputBytes),
                        device.allocateHost((long) maxBatch * outputBytes), in,
                        b.inPlace ? in : device.allocate((long) maxBatch * outputBytes)));
            }
        } catch (RuntimeException | Error e) {
            release();
            throw e;
        }
        this.formation = new BatchFormation<>(new BatchFormation.Lanes<>() {
            @Override
            public int freeLane() {
                for (Lane l : lanes) {
                    if (!l.busy) {
                        return l.index;
                    }
                }
                return -1;
            }

            @Override
            public int inFlight() {
                return inFlight.get();
            }

            @Override
            public void launch(int lane, List<Call<I, O>> batch) {
                GpuBatcher.this.launch(lanes.get(lane), batch);
            }
        }, maxBatch, maxDelayNanos, System::nanoTime);
    }

    /**
     * Runs {@code input} in the next batch and returns its output; blocks (a virtual thread parks)
     * until then. Annotated {@code @Blocking}.
     *
     * @throws NullPointerException if {@code input} is null
     * @throws IllegalArgumentException if the input does not fit its staging slot
     * @throws InterruptedException if interrupted before the output came (the call leaves its batch)
     * @throws GpuFaultException if the batch's work faulted
     * @throws IllegalStateException if the batcher is closed
     * @throws RuntimeException what the step threw for this call's input or output, or for its batch
     */
    @org.jetbrains.annotations.Blocking
    public O call(I input) throws InterruptedException {
        Call<I, O> c = enter(input, Thread.currentThread());
        Lead lead = c.lead;
        try {
            if (lead != null) {
                awaitLead(c, lead, -1L); // then the outcome is complete
            }
            return c.outcome.get();
        } catch (ExecutionException e) {
            throw rethrow(e);
        } catch (InterruptedException e) {
            leave(c);
            throw e;
        }
    }

    /**
     * {@link #call(Object)} that gives up after {@code timeout}, as {@code Future.get} does.
     *
     * @throws TimeoutException if no output came in time (the call leaves its batch)
     */
    @org.jetbrains.annotations.Blocking
    public O call(I input, Duration timeout) throws InterruptedException, TimeoutException {
        Objects.requireNonNull(timeout, "timeout");
        Call<I, O> c = enter(input, Thread.currentThread());
        Lead lead = c.lead;
        long nanos = Math.max(0, timeout.toNanos());
        try {
            if (lead != null && !awaitLead(c, lead, nanos)) {
                throw new TimeoutException("no output within " + timeout);
            }
            return c.outcome.get(nanos, TimeUnit.NANOSECONDS); // at once if it led its batch
        } catch (ExecutionException e) {
            throw rethrow(e);
        } catch (InterruptedException | TimeoutException e) {
            leave(c);
            throw e;
        }
    }

    /**
     * {@link #call(Object)} without blocking: the future completes with the output or the call's
     * failure (as {@code call} would throw it); parks no thread. Cancelling it leaves the batch.
     */
    public CompletableFuture<O> submit(I input) {
        Call<I, O> c = enter(input, null);
        CompletableFuture<O> f = c.outcome.copy();
        f.whenComplete((o, t) -> {
            if (t instanceof CancellationException) {
                leave(c);
            }
        });
        return f;
    }

    private Call<I, O> enter(I input, @Nullable Thread caller) {
        Objects.requireNonNull(input, "input");
        if (closed.get()) {
            throw closedFailure();
        }
        calls.incrementAndGet();
        Call<I, O> c = new Call<>(input, System.nanoTime(), caller);
        formation.arrive(c);
        if (formation.waiting() > 0 && inFlight.get() > 0) {
            scheduleTimer();
        }
        return c;
    }

    private void leave(Call<I, O> c) {
        if (c.leave()) {
            left.incrementAndGet();
            c.outcome.cancel(false);
        }
    }

    /**
     * The caller launched its own batch (a lone caller, or one that found a lane free): it waits for
     * the batch's event itself, as {@code await()} does, and delivers the batch to every caller in
     * it, so its own wake-up is the event's and not a hand-off through the delivery thread and back
     * (a lone caller pays what a launch and {@code await()} pay). If it is interrupted or times out
     * first, it hands the delivery to the delivery thread ({@link #deliverLater}) and leaves, as
     * any caller leaves a batch that took it: the others are not disturbed.
     *
     * @param timeoutNanos the call's timeout, or -1 for none
     * @return false if it timed out (the delivery handed on, the call left), else true: the call's
     *     outcome is complete
     */
    @SuppressWarnings("unchecked")
    private boolean awaitLead(Call<I, O> c, Lead lead, long timeoutNanos) throws InterruptedException {
        Lane lane = (Lane) lead.lane();
        List<Call<I, O>> batch = (List<Call<I, O>>) lead.batch();
        @Nullable RuntimeException failure = null;
        try {
            if (timeoutNanos < 0) {
                lead.done().await();
            } else if (!lead.done().await(timeoutNanos, TimeUnit.NANOSECONDS)) {
                deliverLater(lane, batch, lead.done());
                leave(c);
                return false;
            }
        } catch (InterruptedException e) {
            deliverLater(lane, batch, lead.done());
            leave(c);
            throw e;
        } catch (RuntimeException e) {
            failure = e; // the batch's work failed (GpuFaultException, a closed stream or device)
        }
        if (failure == null) {
            deliver(lane, batch); // every caller's outcome, this one's too
        } else {
            fail(lane, batch, failure); // the batch's failure, for every caller in it, this one too
        }
        return true;
    }



    /** The batch's delivery, on the delivery thread once its work is done (or failed). */
    private void deliverLater(Lane lane, List<Call<I, O>> batch, GpuEvent done) {
        done.onComplete(delivery, () -> deliver(lane, batch), failure -> fail(lane, batch, failure));
    }

    private static RuntimeException rethrow(ExecutionException e) {
        Throwable cause = e.getCause();
        if (cause instanceof RuntimeException r) {
            return r;
        }
        if (cause instanceof Error err) {
            throw err;
        }
        return new IllegalStateException(cause);
    }

    /** Has the timer drain at the oldest waiting call's deadline (maxDelay), unless one is due sooner. */
    private void scheduleTimer() {
        long deadline = formation.nextDeadline();
        if (deadline == Long.MAX_VALUE || closed.get()) {
            return;
        }
        ScheduledFuture<?> current = timer.get();
        if (current != null && !current.isDone()) {
            return; // a drain is due at an earlier or equal deadline (deadlines only grow)
        }
        long delay = deadline - System.nanoTime();
        if (delay <= 0) {
            // Due already: the drain that ran just before this (on arrival, at a lane's release or
            // in the timer) closed the batch if a lane was free; if none was, the next lane's
            // release drains (laneFree). A timer due now would only find the lanes busy again and
            // ask once more: under load, where the oldest caller is usually past maxDelay, that
            // was a timer thread rescheduling itself without pause.
            return;
        }
        ScheduledFuture<?> next = TIMER.schedule(() -> {
            timerRuns.incrementAndGet();
            formation.drain();
            if (formation.waiting() > 0 && inFlight.get() > 0) {
                timer.set(null);
                scheduleTimer();
            }
        }, delay, TimeUnit.NANOSECONDS);
        if (!timer.compareAndSet(current, next)) {
            next.cancel(false); // another caller scheduled one
        }
    }

    /** The dispatcher launches {@code batch} on {@code lane} (BatchFormation.Lanes.launch: never throws). */
    private void launch(Lane lane, List<Call<I, O>> batch) {
        lane.busy = true;
        inFlight.incrementAndGet();
        List<Call<I, O>> packed = new ArrayList<>(batch.size());
        try {
            ByteBuffer in = lane.hostIn.byteBuffer();
            for (Call<I, O> c : batch) {
                int at = packed.size() * inputBytes;
                ByteBuffer slot = in.duplicate().order(ByteOrder.nativeOrder()).position(at).limit(at + inputBytes)
                        .slice().order(ByteOrder.nativeOrder());
                try {
                    step.pack(c.input, slot);
                    packed.add(c);
                } catch (BufferOverflowException e) {
                    c.outcome.completeExceptionally(new IllegalArgumentException(
                            "the input does not fit its staging slot of " + inputBytes + " bytes: " + c.input));
                } catch (RuntimeException e) {
                    c.outcome.completeExceptionally(e); // this call's failure only
                }
            }
            if (packed.isEmpty()) {
                laneFree(lane);
                return;
            }
            int n = packed.size();
            GpuStream s = lane.stream;
            s.copy(lane.hostIn, 0, lane.deviceIn, 0, (long) n * inputBytes);
            step.launch(s, lane.deviceIn, lane.deviceOut, n);
            s.copy(lane.deviceOut, 0, lane.hostOut, 0, (long) n * outputBytes);
            GpuEvent done = s.event();
            batches.incrementAndGet();
            items.addAndGet(n);
            Thread me = Thread.currentThread();
            for (Call<I, O> c : packed) {
                if (c.caller == me) { // launched inside this caller's enter(): it leads the batch (lead())
                    c.lead = new Lead(lane, packed, done);
                    return;
                }
            }
            deliverLater(lane, packed, done);
        } catch (RuntimeException | Error e) {
            fail(lane, packed.isEmpty() ? batch : packed, e);
        }
    }

    /** The batch's work is done: each caller gets its output; then the lane is free for the next batch. */
    private void deliver(Lane lane, List<Call<I, O>> batch) {
        ByteBuffer out = lane.hostOut.byteBuffer();
        for (int i = 0; i < batch.size(); i++) {
            Call<I, O> c = batch.get(i);
            int at = i * outputBytes;
            ByteBuffer slot = out.duplicate().order(ByteOrder.nativeOrder()).position(at).limit(at + outputBytes)
                    .slice().order(ByteOrder.nativeOrder());
            try {
                c.outcome.complete(step.unpack(slot)); // a call that left completes nobody's future
            } catch (RuntimeException e) {
                c.outcome.completeExceptionally(e);
            }
        }
        laneFree(lane);
    }

    /** The batch failed: every caller in it gets the failure; the lane is free again. */
    private void fail(Lane lane, List<Call<I, O>> batch, Throwable failure) {
        failedBatches.incrementAndGet();
        for (Call<I, O> c : batch) {
            c.outcome.completeExceptionally(failure);
        }
        laneFree(lane);
    }

    private void laneFree(Lane lane) {
        lane.busy = false; // volatile: before the drain, so its freeLane() sees it
        if (inFlight.decrementAndGet() == 0 && closed.get()) {
            synchronized (idle) {
                idle.notifyAll(); // close() waits for this under the same monitor, re-reading inFlight
            }
        }
        formation.drain();
        if (formation.waiting() > 0 && inFlight.get() > 0) {
            scheduleTimer();
        }
    }

    /** What the batcher has done so far. */
    public Stats stats() {
        return new Stats(calls.get(), batches.get(), items.get(), left.get(), failedBatches.get(), maxBatch);
    }

    /** The device it runs on. */
    public GpuDevice device() {
        return device;
    }

    private IllegalStateException closedFailure() {
        return new IllegalStateException("the batcher on " + device.name() + " is closed");
    }

    /**
     * Fails the calls still waiting for a batch ({@link IllegalStateException}), waits for the
     * batches in flight to be delivered, and gives the staging and the streams back. Idempotent.
     * Blocking (parks the calling thread while batches are in flight).
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        for (Call<I, O> c : formation.drainWaiting()) {
            c.outcome.completeExceptionally(closedFailure());
        }
        boolean interrupted = false;
        for (Lane l : lanes) {
            try {
                l.stream.await(); // the batch in flight on it, if any, and its delivery's inputs
            } catch (InterruptedException e) {
                interrupted = true;
            } catch (RuntimeException e) {
                // a fault or a closed device: the batch's callers got it; nothing more to wait for
            }
        }
        synchronized (idle) { // the deliveries run on virtual threads right after the awaits above
            while (inFlight.get() > 0) {
                try {
                    idle.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        release();
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void release() {
        delivery.shutdown(); // every delivery ran: close() waited for the batches in flight
        for (Lane l : lanes) {
            l.hostIn.close();
            l.hostOut.close();
            l.deviceIn.close();
            l.deviceOut.close(); // idempotent: the same memory in place
            l.stream.close();
        }
    }

    @Override
    public String toString() {
        return "GpuBatcher[" + device.name() + ", " + lanes.size() + " streams, maxBatch " + maxBatch + ", " + formation + "]";
    }
}
