package io.cudaloom.reactor;

import io.cudaloom.GpuFaultException;
import io.cudaloom.spi.FaultSink;
import io.cudaloom.spi.StreamState;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The fault owner of one device (one per {@link io.cudaloom.GpuDevice}, made with it): everything about device
 * faults is here, and nowhere else.
 * <ul>
 *   <li>the device's <b>first fault</b> ({@link #first()}: what, on which stream, the cause), which
 *       {@code CudaDevice.fault()} and {@code SimulatedDevice.fault()} report and after which a CUDA
 *       device resets its context on close;
 *   <li>each <b>stream's fault</b> ({@link Sink}, one per {@link io.cudaloom.GpuStream}: the backend's
 *       {@link FaultSink}), which the backends report and ask about instead of keeping copies;
 *   <li>the scanner's two <b>fault decisions</b>: which probed stream's registrations fail, and
 *       with what ({@link #probe}); and when a slot quarantined on a stream may be reused
 *       ({@link #mayRecycle}; see "Quarantine" below). The scanner, the single consumer of the
 *       slot table, carries them out: it fails the slots, keeps the quarantine list and recycles;
 *   <li>the <b>one factory of {@link GpuFaultException}</b>, with one message shape
 *       ({@link FaultSink#message}: {@code "<stream> of <device>: <what happened> (<error>)"}) and
 *       the fault's cause attached. No other class of the library constructs one
 *       (FaultFactoryOnlyTest), except {@code io.cudaloom.cuda.Cuda}'s translation of a driver call
 *       that failed with a sticky error outside any stream (no stream to record it on; it uses the
 *       same message shape).
 * </ul>
 *
 * <h2>Invariants</h2>
 * <ol>
 *   <li><b>The first report wins, once.</b> A stream's fault and the device's first fault are each
 *       set once, by a compare-and-set from null, and never cleared; a later report is dropped
 *       ({@link Sink#streamFaulted} returns false). No lock.
 *   <li><b>Who writes.</b> Whichever thread sees the fault reports it: a simulated stream's worker
 *       (the kernel that threw), a thread whose CUDA call on the stream returned a sticky error (a
 *       submitter, a registrant, the scanner's probe), or the reactor for a backend that answered
 *       {@code FAULTED} without reporting (ReactorStream#queryState). Readers only load: volatile
 *       reads, no driver call.
 *   <li><b>Both directions are visible.</b> A report sets the device's first fault before the
 *       stream's, and a stream's fault reads as "its own, else the device's first if that is on
 *       this stream" ({@link Sink#fault()}). So whoever sees the device faulted sees the stream
 *       faulted (a test that waits for {@code device.isFaulted()} and then awaits the stream), and
 *       whoever sees the stream faulted sees the device faulted (the JUnit extension's check after
 *       a test that saw the fault).
 *   <li><b>Concurrent reports on one stream agree.</b> A report that loses the device's
 *       compare-and-set to a fault on the same stream records that fault, not its own, so a
 *       stream's fault is always the device's first when the device's first is on it.
 *   <li><b>A fault opens the stream's admission gate</b> ({@link ReactorStream#openGate}) as it is
 *       reported: a faulted stream releases no permit again, so submitters parked for room are let
 *       through, and find the fault.
 * </ol>
 *
 * <h2>Quarantine</h2>
 * A registration failed because its stream faulted (or its query threw, or the device closed)
 * leaves a flag write enqueued on the stream that nobody waits for any more. On a sticky CUDA error
 * the write never runs while the dead context lives, but it is not gone: reusing its slot would let
 * it land, if ever, in the next registration of the slot, and complete that one before its own work
 * is done (a slot's generation cannot tell: the device writes a bare 1). So the scanner quarantines
 * every slot it fails instead of recycling it, and recycles it only once {@link #mayRecycle} says no
 * write of its stream can land any more ({@code StreamBackend.flagWritesSettled()}: for CUDA once the faulted
 * context has been reset by the device's close; for the simulated device once the discarded
 * commands have drained). A backend whose check throws keeps the slot quarantined: nobody can vouch
 * for it. The close's reclaim holds its slots by the same rule before it frees the flag memory.
 */
public final class DeviceFaults {
    /**
     * What the fault owner asks of a stream ({@link ReactorStream} implements it): its state, its
     * fault record, whether its flag writes have settled, its gate, and names for messages.
     */
    interface Stream {
        StreamState queryState();

        Sink faults();

        boolean flagWritesSettled();

        /** The stream can take nothing any more: let whoever waits for room through ({@link ReactorStream#openGate}). */
        void openGate();

        String deviceName();
    }

    /** The device's first fault: set once, by a compare-and-set from null (invariant 1); on lines of its own ({@link FirstFault}). */
    private final FirstFault first = new FirstFault();

    // ---- padding ---------------------------------------------------------------------------------
    // Every work call of every stream reads its Sink's fault and the device's first (Sink.fault(),
    // through hasFaulted: the backends' checks before a call, and the drainer's before each entry),
    // and both are written once, on a fault. Objects allocated beside them are written all the time
    // (a stream's Sink is made right after its group commit's atomics): sharing a cache line with
    // such a write makes each of those reads a miss. A JFR profile of the demo on an H100 put 7% of
    // its samples in Sink.fault(). So each lives between 128 bytes of padding on both sides (two
    // lines: the adjacent-line prefetcher pairs them), laid out by inheritance, which HotSpot keeps
    // in order (a superclass's fields before a subclass's), as JCTools pads its queue indices.

    /**
     * 128 bytes before the padded fields. The int fills the gap after a compact object header,
     * where HotSpot would otherwise put a subclass's field (before the padding).
     */
    @SuppressWarnings("unused")
    abstract static class PadBefore {
        int gap;
        long p00, p01, p02, p03, p04, p05, p06, p07, p08, p09, p10, p11, p12, p13, p14, p15;
    }

    /** The device's first fault's field. */
    abstract static class FirstFaultField extends PadBefore {
        @SuppressWarnings("unused") // through FirstFault.VALUE
        volatile @Nullable Fault value;
    }

    /** The device's first fault, between its paddings: an AtomicReference of its own lines. */
    @SuppressWarnings("unused")
    static final class FirstFault extends FirstFaultField {
        private static final VarHandle VALUE;

        static {
            try {
                VALUE = MethodHandles.lookup().findVarHandle(FirstFaultField.class, "value", Fault.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        long q00, q01, q02, q03, q04, q05, q06, q07, q08, q09, q10, q11, q12, q13, q14, q15;

        @Nullable Fault get() {
            return value;
        }

        @Nullable Fault compareAndExchange(@Nullable Fault expected, Fault newValue) {
            return (Fault) VALUE.compareAndExchange(this, expected, newValue);
        }
    }

    /** A stream's fault record's fields, read on every work call: after the padding before them. */
    abstract static class SinkFields extends PadBefore {
        final DeviceFaults owner;
        public final Stream stream;
        /** Set once, through {@link Sink#FAULT} from null; read with volatile loads (invariants 1, 3). */
        @SuppressWarnings("unused") // through FAULT
        volatile @Nullable Fault fault;

        SinkFields(DeviceFaults owner, Stream stream) {
            this.owner = owner;
            this.stream = stream;
        }
    }

    /** What the reactor records for a backend that answered FAULTED without reporting a fault. */
    public static final String UNREPORTED = "the backend answered FAULTED without reporting a fault";

    /** One fault: what happened, on which stream, and the Java exception behind it (a simulated kernel's), if any. */
    public record Fault(Sink on, String error, @Nullable Throwable cause) {
        /** {@code "<error> on <stream>"}, as the backends' {@code fault()} report it. */
        String description() {
            return error + " on " + on.stream;
        }
    }

    /** The fault record of {@code stream}; made once, by its constructor. */
    public Sink sink(Stream stream) {
        return new Sink(this, stream);
    }

    /** The device's first fault, or null while none of its streams has faulted. */
    public @Nullable Fault first() {
        return first.get();
    }

    /** {@code "<error> on <stream>"} of the device's first fault, or null. */
    public @Nullable String firstDescription() {
        Fault f = first.get();
        return f == null ? null : f.description();
    }

    /**
     * One stream's fault, and the stream's {@link FaultSink}: the backend reports here, asks
     * {@link #hasFaulted()} before each call, and throws {@link #failure} for a call refused after
     * the fault; the reactor reads the same record (see the class comment's invariants).
     */
    @SuppressWarnings("unused")
    public static final class Sink extends SinkFields implements FaultSink {
        private static final VarHandle FAULT;

        static {
            try {
                FAULT = MethodHandles.lookup().findVarHandle(SinkFields.class, "fault", Fault.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        /** 128 bytes after the fields (see "padding" above). */
        long q00, q01, q02, q03, q04, q05, q06, q07, q08, q09, q10, q11, q12, q13, q14, q15;

        private Sink(DeviceFaults owner, Stream stream) {
            super(owner, stream);
        }

        @Override
        public boolean streamFaulted(String error, @Nullable Throwable cause) {
            Objects.requireNonNull(error, "error");
            if (fault() != null) {
                return false; // the first report won (invariant 1)
            }
            Fault mine = new Fault(this, error, cause);
            Fault deviceFirst = owner.first.compareAndExchange(null, mine); // the device's first (invariant 3)
            Fault recorded = deviceFirst != null && deviceFirst.on == this ? deviceFirst : mine; // invariant 4
            FAULT.compareAndSet(this, null, recorded);
            stream.openGate(); // invariant 5
            return fault() == mine;
        }

        @Override
        public boolean hasFaulted() {
            return fault() != null;
        }

        /** The stream's fault: its own, else the device's first if that is on this stream (invariant 3); null if none. */
        public @Nullable Fault fault() {
            Fault f = fault;
            if (f == null) {
                Fault d = owner.first.get();
                if (d != null && d.on == this) {
                    return d;
                }
            }
            return f;
        }

        @Override
        public GpuFaultException failure(String what) {
            Objects.requireNonNull(what, "what");
            Fault f = fault();
            if (f == null) {
                throw new IllegalStateException("no fault of " + stream + " was reported: " + what);
            }
            return create(FaultSink.message(subject(stream), what, f.error()), f.cause());
        }

        /** A wait or registration on the faulted stream: its work can never complete. */
        GpuFaultException neverCompletes() {
            return failure("its work can never complete");
        }

        /** The backend answered FAULTED: make sure a fault is recorded (it must have reported one first). */
        public void answeredFaulted() {
            if (fault() == null) {
                streamFaulted(UNREPORTED, null);
            }
        }
    }

    // ---- the scanner's decisions (scanner thread only) -------------------------------------------

    /**
     * The fault probe's verdict on one stream the scanner holds registrations for.
     *
     * @param error what happened, for the {@code DeviceFault} JFR event
     * @param failure what every registration on the stream is failed with
     */
    public record Verdict(String error, GpuFaultException failure) {}

    /**
     * The fault probe's decision for {@code stream}: null while it has not faulted (its
     * registrations stay); else the failure for every registration on it. A stream that faulted
     * fails with its recorded fault. A stream whose query throws (reported to {@code errors}, which
     * counts it) is not recorded as faulted, since the query may work again, but its registrations
     * are failed, since the scanner cannot tell when they complete, and its admission gate opens,
     * since their flag writes were its proofs on the way. Either way the failed slots are
     * quarantined (class comment).
     */
    public @Nullable Verdict probe(Stream stream, Consumer<? super RuntimeException> errors) {
        StreamState state;
        try {
            state = stream.queryState();
        } catch (RuntimeException e) {
            errors.accept(e);
            stream.openGate();
            return new Verdict("the stream could not be queried: " + e, queryFailed(stream, e));
        }
        if (state != StreamState.FAULTED) {
            return null;
        }
        Sink faults = stream.faults(); // recorded by now: ReactorStream.queryState
        return new Verdict(Objects.requireNonNull(faults.fault(), "recorded").error(), faults.neverCompletes());
    }

    /**
     * The quarantine rule (class comment): whether a slot quarantined on {@code stream} may be reused,
     * because no flag write of the stream can land any more. A backend whose check throws (reported
     * to {@code errors}) says "not yet".
     */
    public boolean mayRecycle(Stream stream, Consumer<? super RuntimeException> errors) {
        try {
            return stream.flagWritesSettled();
        } catch (RuntimeException e) {
            errors.accept(e);
            return false;
        }
    }

    // ---- the one factory --------------------------------------------------------------------------

    /** Who a stream's fault is about: {@code "<stream> of <device>"}. */
    static String subject(Stream stream) {
        return stream + " of " + stream.deviceName();
    }

    /**
     * The scanner's probe could not query {@code stream} ({@code e}): its work is taken as failed.
     * Not recorded as the stream's fault: the query may work again, and nothing says the device
     * faulted.
     */
    static GpuFaultException queryFailed(Stream stream, RuntimeException e) {
        return create(FaultSink.message(subject(stream), "its work is taken as failed: the backend could not query it",
                e.toString()), e);
    }

    /**
     * {@code delivered} (made by this factory on another thread) made anew on the waiter's thread,
     * so that the stack trace is the waiter's: the same message and the same cause
     * ({@link Failures}).
     */
    static GpuFaultException anew(GpuFaultException delivered) {
        String message = Objects.requireNonNullElse(delivered.getMessage(), delivered.toString());
        return create(message, delivered.getCause());
    }

    /** The one place the library constructs a {@link GpuFaultException} (but see the class comment on Cuda). */
    private static GpuFaultException create(String message, @Nullable Throwable cause) {
        return cause != null ? new GpuFaultException(message, cause) : new GpuFaultException(message);
    }
}
