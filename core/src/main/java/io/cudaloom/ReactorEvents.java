package io.cudaloom;

import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import org.jspecify.annotations.Nullable;

/**
 * Where the reactor emits its JDK Flight Recorder events ({@link SlowAwaitEvent},
 * {@link FallbackEvent}, {@link DeviceFaultEvent}, {@link ReactorCountersEvent}).
 *
 * <p>Cost when disabled: each emitter first asks a static {@link EventType} handle whether the
 * event is enabled in a running recording (a field read) and allocates nothing if not, so the
 * await path stays allocation-free without relying on escape analysis (AwaitAllocationTest
 * checks it, with no recording and with a recording that disables the event). On a JVM without
 * Flight Recorder the handles are null and every emitter returns at once.
 */
final class ReactorEvents {
    private static final @Nullable EventType SLOW_AWAIT;
    private static final @Nullable EventType FALLBACK;
    private static final @Nullable EventType DEVICE_FAULT;

    static {
        boolean available = FlightRecorder.isAvailable();
        SLOW_AWAIT = available ? EventType.getEventType(SlowAwaitEvent.class) : null;
        FALLBACK = available ? EventType.getEventType(FallbackEvent.class) : null;
        DEVICE_FAULT = available ? EventType.getEventType(DeviceFaultEvent.class) : null;
    }

    private ReactorEvents() {}

    private static boolean enabled(@Nullable EventType type) {
        return type != null && type.isEnabled();
    }

    /**
     * A begun {@link SlowAwaitEvent} if a recording has it enabled, else null (and nothing
     * allocated). {@link BlockingWait} sets its path, ends it and commits it if it was slow.
     */
    static @Nullable SlowAwaitEvent beginAwait() {
        if (!enabled(SLOW_AWAIT)) {
            return null;
        }
        SlowAwaitEvent event = new SlowAwaitEvent();
        event.begin();
        return event;
    }

    static void fallback(GpuStream stream, String reason) {
        if (enabled(FALLBACK)) {
            FallbackEvent event = new FallbackEvent();
            event.device = stream.device().name();
            event.stream = stream.toString();
            event.reason = reason;
            event.commit();
        }
    }

    static void deviceFault(GpuStream stream, String error, int registrationsFailed) {
        if (enabled(DEVICE_FAULT)) {
            DeviceFaultEvent event = new DeviceFaultEvent();
            event.device = stream.device().name();
            event.stream = stream.toString();
            event.error = error;
            event.registrationsFailed = registrationsFailed;
            event.commit();
        }
    }

    /** The periodic hook's body: one {@link ReactorCountersEvent} with the reactor's counters now. */
    static void counters(CompletionReactor reactor) {
        ReactorCountersEvent event = new ReactorCountersEvent();
        if (!event.isEnabled()) {
            return;
        }
        ReactorStats s = reactor.stats();
        event.device = reactor.device().name();
        event.capacity = s.capacity();
        event.armedNow = s.armedNow();
        event.freeSlots = s.freeSlots();
        event.quarantined = s.quarantined();
        event.registrations = s.registrations();
        event.completions = s.completions();
        event.inlineCompletions = s.inlineCompletions();
        event.immediate = s.immediate();
        event.fallbacks = s.fallbacks();
        event.abandoned = s.abandoned();
        event.faults = s.faults();
        event.coalesced = s.coalesced();
        event.scannerParks = s.scannerParks();
        event.scannerTimedParks = s.scannerTimedParks();
        event.scannerUnparks = s.scannerUnparks();
        event.scanPasses = s.scanPasses();
        event.faultProbes = s.faultProbes();
        event.scannerErrors = s.scannerErrors();
        long cpu = s.scannerCpuNanos();
        event.scannerCpuNanos = cpu < 0 ? Long.MIN_VALUE : cpu; // JFR's "N/A" for a timespan
        event.commit();
    }
}
