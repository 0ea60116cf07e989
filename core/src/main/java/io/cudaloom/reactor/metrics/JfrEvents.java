package io.cudaloom.reactor.metrics;

import io.cudaloom.GpuFaultException;
import io.cudaloom.ReactorClosedException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.Supplier;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import org.jspecify.annotations.Nullable;

/**
 * Where the reactor emits its JDK Flight Recorder events ({@link FallbackEvent},
 * {@link DeviceFaultEvent}, {@link CountersEvent}), and the outcomes of {@link SlowAwaitEvent},
 * which an await begins and commits with its latency record ({@link LatencyRecorder#beginAwait},
 * {@link LatencyRecorder#awaitEnded}: the waiter's one metrics call, by the same rules as here).
 *
 * <p>Cost when disabled: each emitter first asks whether the event is enabled in a running
 * recording, and allocates nothing if not, so the await path stays allocation-free without
 * relying on escape analysis (AwaitAllocationTest checks it, with no recording and with a
 * recording that disables the event). The question is two field reads: whether Flight Recorder
 * has been initialized at all (no recording can run before), and then a static {@link EventType}
 * handle's enabled flag. The handles are looked up only once Flight Recorder is initialized, since
 * the lookup initializes JFR's metadata (about 0.1 s), which a JVM that never records should not
 * pay. On a JVM without Flight Recorder it is never initialized, so every emitter returns at once.
 *
 * <p>What of {@code jdk.jfr} loads when: with no recording, {@link FlightRecorder} alone (the
 * class whose static field says whether it is initialized), when a device opens; this class's
 * holders, the event classes and JFR's own classes only once Flight Recorder is initialized (a
 * recording exists or starts). {@code JfrClassLoadingTest} checks it in a fresh JVM.
 */
public final class JfrEvents {
    /** The event types; loaded (holder idiom) on first use, after Flight Recorder is initialized. */
    private static final class Types {
        static final EventType FALLBACK = EventType.getEventType(FallbackEvent.class);
        static final EventType DEVICE_FAULT = EventType.getEventType(DeviceFaultEvent.class);
    }

    private JfrEvents() {}

    /** The {@link AwaitOutcome} of an await that threw {@code e}: one mapping for every wait. */
    public static AwaitOutcome awaitOutcome(Exception e) {
        if (e instanceof InterruptedException) {
            return AwaitOutcome.INTERRUPTED;
        } else if (e instanceof GpuFaultException) {
            return AwaitOutcome.FAULT;
        } else if (e instanceof ReactorClosedException) {
            return AwaitOutcome.CLOSED;
        }
        return AwaitOutcome.FAILED;
    }

    /**
     * The {@link SlowAwaitEvent} outcome of an await that ended so: the event's documented values
     * ("timed out" where the listeners' outcome is {@code TIMEOUT}). Here, not in the event class:
     * calling a static method of an event class would load it, and Flight Recorder with it.
     */
    public static String eventOutcome(AwaitOutcome outcome) {
        return switch (outcome) {
            case COMPLETED -> SlowAwaitEvent.COMPLETED;
            case TIMEOUT -> SlowAwaitEvent.TIMED_OUT;
            case INTERRUPTED -> "interrupted";
            case FAULT -> "fault";
            case CLOSED -> "closed";
            case FAILED -> SlowAwaitEvent.FAILED;
        };
    }

    /**
     * Whether a recording may have {@link FallbackEvent} enabled: two field reads, nothing
     * allocated. The caller asks before it gathers the event's values ({@link #fallback}).
     */
    public static boolean fallbackEnabled() {
        return FlightRecorder.isInitialized() && Types.FALLBACK.isEnabled();
    }

    /**
     * Commits a {@link FallbackEvent}; after {@link #fallbackEnabled()} answered true.
     *
     * @param stream the stream served by a host callback (its {@code toString()} is taken here)
     * @param reason the event's {@code reason} ({@code FallbackReason.eventReason})
     */
    public static void fallback(String device, Object stream, String reason) {
        FallbackEvent event = new FallbackEvent();
        event.device = device;
        event.stream = stream.toString();
        event.reason = reason;
        event.commit();
    }

    /** Whether a recording may have {@link DeviceFaultEvent} enabled: as {@link #fallbackEnabled()}. */
    public static boolean deviceFaultEnabled() {
        return FlightRecorder.isInitialized() && Types.DEVICE_FAULT.isEnabled();
    }

    /** Commits a {@link DeviceFaultEvent}; after {@link #deviceFaultEnabled()} answered true. */
    public static void deviceFault(String device, Object stream, String error, int registrationsFailed) {
        DeviceFaultEvent event = new DeviceFaultEvent();
        event.device = device;
        event.stream = stream.toString();
        event.error = error;
        event.registrationsFailed = registrationsFailed;
        event.commit();
    }

    /**
     * The {@link CountersEvent} field of each counter, by {@link Counter#ordinal()}: the field
     * named {@link Counter#statName}, of the counter's type. Looked up once, when the first counters
     * event is emitted (Flight Recorder is initialized by then). A counter without its field is left
     * out of the event (monitoring never fails the reactor); CounterSurfacesTest fails for it.
     */
    private static final class CounterFields {
        static final @Nullable VarHandle[] FIELDS = new VarHandle[Counter.COUNT];

        static {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            for (Counter c : Counter.ALL) {
                try {
                    FIELDS[c.ordinal()] = lookup.findVarHandle(CountersEvent.class, c.statName, c.type.javaType);
                } catch (ReflectiveOperationException e) {
                    FIELDS[c.ordinal()] = null; // a declaration missing from the event: left out
                }
            }
        }
    }

    /**
     * The periodic hook's body: one {@link CountersEvent} with the reactor's counters now,
     * each in its field by name; a negative nanosecond counter (scannerCpuNanos where the JVM cannot
     * tell) as {@code Long.MIN_VALUE}, JFR's "N/A".
     */
    public static void counters(String deviceName, Supplier<CounterSnapshot> counters, Supplier<LatencySnapshot> awaitLatency) {
        CountersEvent event = new CountersEvent();
        if (!event.isEnabled()) {
            return;
        }
        CounterSnapshot s = counters.get();
        event.device = deviceName;
        for (Counter c : Counter.ALL) {
            long value = s.get(c);
            VarHandle field = CounterFields.FIELDS[c.ordinal()];
            if (field == null) {
                continue;
            }
            if (c.type == Counter.Type.INT) {
                field.set(event, (int) value);
            } else {
                field.set(event, c.unit == Counter.Unit.NANOSECONDS && value < 0 ? Long.MIN_VALUE : value);
            }
        }
        LatencySnapshot latency = awaitLatency.get();
        event.awaitP99Nanos = latency.p99Nanos();
        event.awaitMaxNanos = latency.maxNanos();
        event.slowAwaitThresholdNanos = latency.slowAwaitThresholdNanos();
        event.commit();
    }
}
