package io.cudaloom.micrometer;

import io.cudaloom.AwaitLatency;
import io.cudaloom.AwaitListener;
import io.cudaloom.CompletionReactor;
import io.cudaloom.GpuDevice;
import io.cudaloom.GpuStream;
import io.cudaloom.ReactorStats;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * A Micrometer {@link MeterBinder} for one {@link GpuDevice}: its await latency as a {@link Timer}
 * with a percentile histogram and an {@code outcome} tag, its operator metrics ({@link ReactorStats}),
 * every meter tagged {@code device=<device name>} (plus the tags given to {@link #tags}). The timer
 * is recorded by the awaits themselves (an {@link AwaitListener} this binder adds to the reactor,
 * removed by {@link #close()}); every other meter reads the reactor when the registry polls it.
 *
 * <pre>{@code
 * GpuDevice device = GpuDevice.open();
 * GpuStream stream = device.newStream();
 * CudaLoomMetrics.of(device).tags(Tags.of("app", "scale")).stream(stream).bindTo(registry);
 * }</pre>
 *
 * <table>
 * <caption>Meters</caption>
 * <tr><th>name</th><th>type</th><th>what</th></tr>
 * <tr><td>{@code cudaloom.await}, tag {@code outcome} = {@code completed}, {@code timeout},
 *     {@code interrupted}, {@code fault}, {@code closed}, {@code failed}</td><td>timer, seconds, with
 *     a percentile histogram</td><td>every blocking await that registered, as it ends: how long it
 *     waited (registering to returning) and how it ended ({@link AwaitListener.Outcome}, lower
 *     case). The histogram's buckets (Prometheus: {@code cudaloom_await_seconds_bucket{le=...}})
 *     span 1 us to 30 s, plus the SLO boundaries ({@link #serviceLevelObjectives}; by default 100 us,
 *     1 ms, 10 ms, 100 ms and 1 s), so the latency aggregates across instances and over any window;
 *     a {@code MeterFilter} can change any of it as for any timer. Counts the awaits
 *     {@link AwaitLatency} counts, from the binding on. The count of {@code outcome=timeout} is
 *     {@link ReactorStats#timeouts()} (there is no other timeout meter)</td></tr>
 * <tr><td>{@code cudaloom.await.recent.p99}</td><td>time gauge</td><td>the p99 of the recent window
 *     (the last 10 to 20 s, {@link AwaitLatency#recentP99Nanos()}; 0 while it holds fewer than 10
 *     awaits)</td></tr>
 * <tr><td>{@code cudaloom.await.slow.threshold}</td><td>time gauge</td><td>the relative
 *     {@code SlowAwait} threshold now ({@link AwaitLatency#slowAwaitThresholdNanos()})</td></tr>
 * <tr><td>{@code cudaloom.waiters}</td><td>gauge</td><td>threads inside a blocking await now</td></tr>
 * <tr><td>{@code cudaloom.work.in.flight}</td><td>gauge</td><td>work submitted to open streams, not
 *     yet proven complete; 0 once the work is done, awaited or not (a read asks each stream whose
 *     counts show unproven work, once, whether it is idle: {@link GpuStream#workInFlight()})</td></tr>
 * <tr><td>{@code cudaloom.slots.free}, {@code .armed}, {@code .quarantined}, {@code .capacity}</td>
 *     <td>gauges</td><td>the completion slots</td></tr>
 * <tr><td>{@code cudaloom.completions}, {@code cudaloom.awaits.immediate},
 *     {@code cudaloom.registrations}, {@code cudaloom.faults}, {@code cudaloom.abandoned},
 *     {@code cudaloom.fallbacks}, {@code cudaloom.admission.waits},
 *     {@code cudaloom.scanner.errors}, {@code cudaloom.callback.errors}</td><td>function counters</td><td>the {@link ReactorStats}
 *     counters of those names (completions and faults count callbacks and futures too, and
 *     awaits that registered nothing)</td></tr>
 * <tr><td>{@code cudaloom.admission.wait}</td><td>function counter, seconds</td><td>
 *     {@link ReactorStats#admissionWaitNanos()}</td></tr>
 * <tr><td>{@code cudaloom.stream.work.in.flight}, tag {@code stream}</td><td>gauge</td><td>
 *     {@link GpuStream#workInFlight()} of each stream named with {@link #stream}</td></tr>
 * <tr><td>{@code cudaloom.internal.<counter>} (only with {@link #internals})</td><td>function
 *     counters</td><td>{@link ReactorStats.Internals}: scan passes, scanner parks, flag writes...</td></tr>
 * </table>
 *
 * <p>The polled meters hold the reactor and the streams weakly (Micrometer's default), so binding
 * keeps nothing alive; a closed device's meters keep reporting its final values. The timer is
 * held by the reactor's listener until {@link #close()} (or the device is collected). Streams are
 * named one by one because a device's streams come and go: bind again ({@code bindTo} with the same
 * registry) after naming more; meters already registered are reused, and the awaits are still
 * recorded once per registry. Two binders of one device bound to one registry record each await
 * twice: bind one.
 */
// Implementation note: every counter of ReactorStats has its meter here, under the name its
// declaration in the core gives it (timeouts: the timer's outcome=timeout count); this package
// names only the public API, so the meters are listed here one by one, and the core's
// CounterSurfacesTest fails for a counter left out, bound under another name, or of the wrong kind.
public final class CudaLoomMetrics implements MeterBinder, AutoCloseable {
    /** The timer's name: one meter, tagged by outcome. */
    private static final String AWAIT = "cudaloom.await";
    /** The default SLO boundaries of the await timer's histogram. */
    private static final List<Duration> DEFAULT_SLOS = List.of(Duration.ofNanos(100_000), Duration.ofMillis(1),
            Duration.ofMillis(10), Duration.ofMillis(100), Duration.ofSeconds(1));
    /** The histogram's range: a spin-completed await takes microseconds, a timeout seconds. */
    private static final Duration MIN_EXPECTED = Duration.ofNanos(1_000);
    private static final Duration MAX_EXPECTED = Duration.ofSeconds(30);
    private static final AwaitListener.Outcome[] OUTCOMES = AwaitListener.Outcome.values();

    private final CompletionReactor reactor;
    private final String deviceName;
    private Tags tags = Tags.empty();
    private final List<GpuStream> streams = new ArrayList<>();
    private boolean internals;
    private List<Duration> slos = DEFAULT_SLOS;
    /**
     * The listener recording into each registry's timers, by registry (identity), so that binding
     * a registry again adds no second one; removed by {@link #close()}. Guarded by {@code this}.
     */
    private final Map<MeterRegistry, AwaitListener> listeners = new IdentityHashMap<>();

    private CudaLoomMetrics(GpuDevice device) {
        this.reactor = Objects.requireNonNull(device, "device").reactor();
        this.deviceName = device.name();
    }

    /** A binder for {@code device}'s metrics. */
    public static CudaLoomMetrics of(GpuDevice device) {
        return new CudaLoomMetrics(device);
    }

    /** Extra tags on every meter (beside {@code device}). */
    public CudaLoomMetrics tags(Iterable<Tag> extra) {
        this.tags = this.tags.and(extra);
        return this;
    }

    /** Also a {@code cudaloom.stream.work.in.flight} gauge for {@code stream}, tagged {@code stream=<its name>}. */
    public CudaLoomMetrics stream(GpuStream stream) {
        if (stream.device().reactor() != reactor) {
            throw new IllegalArgumentException("stream " + stream + " is not a stream of " + deviceName);
        }
        streams.add(stream);
        return this;
    }

    /**
     * The SLO boundaries of the {@code cudaloom.await} timer's histogram: buckets at exactly these
     * durations, besides the percentile histogram's own (default 100 us, 1 ms, 10 ms, 100 ms, 1 s;
     * none to add none). Set before {@link #bindTo}: a registry keeps a timer's buckets as first
     * registered.
     *
     * @throws IllegalArgumentException if a boundary is zero or negative
     */
    public CudaLoomMetrics serviceLevelObjectives(Duration... boundaries) {
        List<Duration> copy = List.of(boundaries); // null array or element: NullPointerException
        for (Duration d : copy) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("SLO boundaries must be positive durations, got " + d);
            }
        }
        this.slos = copy;
        return this;
    }

    /** Also the reactor's internals, as {@code cudaloom.internal.*} counters (off by default). */
    public CudaLoomMetrics internals(boolean bind) {
        this.internals = bind;
        return this;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Tags base = Tags.of("device", deviceName).and(tags);
        Timer[] timers = new Timer[OUTCOMES.length];
        Duration[] boundaries = slos.toArray(Duration[]::new);
        for (AwaitListener.Outcome o : OUTCOMES) {
            timers[o.ordinal()] = Timer.builder(AWAIT).tags(base).tag("outcome", o.name().toLowerCase(Locale.ROOT))
                    .description("Blocking awaits that registered, by how they ended, and how long they waited"
                            + " (registering to returning)")
                    .publishPercentileHistogram().minimumExpectedValue(MIN_EXPECTED)
                    .maximumExpectedValue(MAX_EXPECTED).serviceLevelObjectives(boundaries)
                    .register(registry);
        }
        synchronized (this) {
            if (!listeners.containsKey(registry)) {
                // Called on each awaiting thread (AwaitListener): an array index and Timer.record.
                AwaitListener listener = (outcome, nanos) -> timers[outcome.ordinal()].record(nanos, TimeUnit.NANOSECONDS);
                reactor.addAwaitListener(listener);
                listeners.put(registry, listener);
            }
        }
        TimeGauge.builder("cudaloom.await.recent.p99", reactor, TimeUnit.NANOSECONDS,
                        r -> r.awaitLatency().recentP99Nanos())
                .tags(base).description("The p99 await of the last 10 to 20 s (0: fewer than 10 awaits)")
                .register(registry);
        TimeGauge.builder("cudaloom.await.slow.threshold", reactor, TimeUnit.NANOSECONDS,
                        r -> r.awaitLatency().slowAwaitThresholdNanos())
                .tags(base).description("The relative SlowAwait threshold now (0: none yet)").register(registry);

        gauge(registry, base, "cudaloom.waiters", "Threads inside a blocking await now", s -> s.waitersNow());
        gauge(registry, base, "cudaloom.work.in.flight", "Work submitted to open streams, not yet proven complete",
                s -> s.workInFlight());
        gauge(registry, base, "cudaloom.slots.free", "Completion slots on the free list", s -> s.freeSlots());
        gauge(registry, base, "cudaloom.slots.armed", "Completion slots armed", s -> s.armedNow());
        gauge(registry, base, "cudaloom.slots.quarantined", "Slots held back after a fault", s -> s.quarantined());
        gauge(registry, base, "cudaloom.slots.capacity", "Completion slots", s -> s.capacity());

        counter(registry, base, "cudaloom.completions",
                "Awaits that returned normally and callbacks completed without failure", s -> s.completions());
        counter(registry, base, "cudaloom.awaits.immediate", "Awaits that found their work done", s -> s.immediate());
        counter(registry, base, "cudaloom.registrations", "Awaits and callbacks that armed a slot", s -> s.registrations());
        counter(registry, base, "cudaloom.faults", "Awaits and callbacks that ended with a device fault", s -> s.faults());
        counter(registry, base, "cudaloom.abandoned", "Registrations withdrawn (timeout, interrupt, cancel)",
                s -> s.abandoned());
        counter(registry, base, "cudaloom.fallbacks", "Registrations served by a host callback", s -> s.fallbacks());
        counter(registry, base, "cudaloom.admission.waits", "Submissions that waited for admission",
                s -> s.admissionWaits());
        FunctionCounter.builder("cudaloom.admission.wait", reactor, r -> r.stats().admissionWaitNanos() / 1e9)
                .tags(base).baseUnit("seconds").description("Time submissions waited for admission")
                .register(registry);
        counter(registry, base, "cudaloom.scanner.errors", "Exceptions the scanner caught", s -> s.scannerErrors());
        counter(registry, base, "cudaloom.callback.errors", "Completion callbacks that threw (logged, then ignored)",
                s -> s.callbackErrors());

        for (GpuStream stream : streams) {
            Gauge.builder("cudaloom.stream.work.in.flight", stream, GpuStream::workInFlight)
                    .tags(base).tag("stream", stream.toString())
                    .description("Work submitted to the stream, not yet proven complete")
                    .register(registry);
        }
        if (internals) {
            internal(registry, base, "inline.completions", i -> i.inlineCompletions());
            internal(registry, base, "coalesced", i -> i.coalesced());
            internal(registry, base, "flag.writes", i -> i.flagWrites());
            internal(registry, base, "trackers", i -> i.trackers());
            internal(registry, base, "scanner.parks", i -> i.scannerParks());
            internal(registry, base, "scanner.timed.parks", i -> i.scannerTimedParks());
            internal(registry, base, "scanner.unparks", i -> i.scannerUnparks());
            internal(registry, base, "scanner.missed.wakeups", i -> i.scannerMissedWakeups());
            internal(registry, base, "pre.wakes", i -> i.preWakes());
            internal(registry, base, "scan.passes", i -> i.scanPasses());
            internal(registry, base, "fault.probes", i -> i.faultProbes());
            FunctionCounter.builder("cudaloom.internal.scanner.cpu", reactor,
                            r -> Math.max(0, r.stats().internals().scannerCpuNanos()) / 1e9)
                    .tags(base).baseUnit("seconds").description("CPU time of the scanner thread").register(registry);
        }
    }

    /**
     * Stops recording the awaits into the {@code cudaloom.await} timers of every registry this
     * binder was bound to (removes its listeners from the reactor). The meters stay registered,
     * the polled ones still reading the reactor. Idempotent; binding again after it records again.
     */
    @Override
    public synchronized void close() {
        for (AwaitListener l : listeners.values()) {
            reactor.removeAwaitListener(l);
        }
        listeners.clear();
    }

    private void gauge(MeterRegistry registry, Tags base, String name, String description,
            ToDoubleFunction<ReactorStats> value) {
        Gauge.builder(name, reactor, r -> value.applyAsDouble(r.stats())).tags(base).description(description)
                .register(registry);
    }

    private void counter(MeterRegistry registry, Tags base, String name, String description,
            ToDoubleFunction<ReactorStats> value) {
        FunctionCounter.builder(name, reactor, r -> value.applyAsDouble(r.stats())).tags(base)
                .description(description).register(registry);
    }

    private void internal(MeterRegistry registry, Tags base, String name, ToDoubleFunction<ReactorStats.Internals> value) {
        FunctionCounter.builder("cudaloom.internal." + name, reactor, r -> value.applyAsDouble(r.stats().internals()))
                .tags(base).register(registry);
    }
}
