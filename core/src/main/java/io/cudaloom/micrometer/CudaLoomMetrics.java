package io.cudaloom.micrometer;

import io.cudaloom.AwaitLatency;
import io.cudaloom.CompletionReactor;
import io.cudaloom.GpuDevice;
import io.cudaloom.GpuStream;
import io.cudaloom.ReactorStats;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * A Micrometer {@link MeterBinder} for one {@link GpuDevice}: its operator metrics
 * ({@link ReactorStats}) and its await-latency distribution ({@link AwaitLatency}), every meter
 * tagged {@code device=<device name>} (plus the tags given to {@link #tags}). Each meter reads the
 * reactor when the registry polls it; the awaits themselves only record, as without a registry.
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
 * <tr><td>{@code cudaloom.await}</td><td>function timer</td><td>blocking awaits that registered and
 *     the time they waited ({@link AwaitLatency#count()}, {@link AwaitLatency#totalNanos()})</td></tr>
 * <tr><td>{@code cudaloom.await.latency}, tag {@code quantile} = 0.5, 0.9, 0.99, 0.999</td><td>time
 *     gauges</td><td>the percentiles of the wait since the device opened (HdrHistogram, within 1%)</td></tr>
 * <tr><td>{@code cudaloom.await.latency.max}</td><td>time gauge</td><td>the longest wait</td></tr>
 * <tr><td>{@code cudaloom.await.slow.threshold}</td><td>time gauge</td><td>the relative
 *     {@code SlowAwait} threshold now ({@link AwaitLatency#slowAwaitThresholdNanos()})</td></tr>
 * <tr><td>{@code cudaloom.waiters}</td><td>gauge</td><td>threads inside a blocking await now</td></tr>
 * <tr><td>{@code cudaloom.work.in.flight}</td><td>gauge</td><td>work submitted to open streams, not
 *     yet proven complete; 0 once the work is done, awaited or not (a read asks each stream whose
 *     counts show unproven work, once, whether it is idle: {@link GpuStream#workInFlight()})</td></tr>
 * <tr><td>{@code cudaloom.slots.free}, {@code .armed}, {@code .quarantined}, {@code .capacity}</td>
 *     <td>gauges</td><td>the completion slots</td></tr>
 * <tr><td>{@code cudaloom.awaits.completed} ({@code completions}), {@code cudaloom.awaits.immediate},
 *     {@code cudaloom.registrations}, {@code cudaloom.faults}, {@code cudaloom.timeouts},
 *     {@code cudaloom.abandoned}, {@code cudaloom.fallbacks}, {@code cudaloom.admission.waits},
 *     {@code cudaloom.scanner.errors}, {@code cudaloom.callback.errors}</td><td>function counters</td><td>the {@link ReactorStats}
 *     counters of those names</td></tr>
 * <tr><td>{@code cudaloom.admission.wait}</td><td>function counter, seconds</td><td>
 *     {@link ReactorStats#admissionWaitNanos()}</td></tr>
 * <tr><td>{@code cudaloom.stream.work.in.flight}, tag {@code stream}</td><td>gauge</td><td>
 *     {@link GpuStream#workInFlight()} of each stream named with {@link #stream}</td></tr>
 * <tr><td>{@code cudaloom.internal.<counter>} (only with {@link #internals})</td><td>function
 *     counters</td><td>{@link ReactorStats.Internals}: scan passes, scanner parks, flag writes...</td></tr>
 * </table>
 *
 * <p>The meters hold the reactor and the streams weakly (Micrometer's default), so binding keeps
 * nothing alive; a closed device's meters keep reporting its final values. Streams are named one
 * by one because a device's streams come and go: bind again ({@code bindTo} with the same registry)
 * after naming more; meters already registered are reused.
 */
// Implementation note: every counter of ReactorStats has its meter here, under the name its
// declaration in the core gives it; this package names only the public API, so the meters are
// listed here one by one, and the core's CounterSurfacesTest fails for a counter left out, bound
// under another name, or of the wrong kind.
public final class CudaLoomMetrics implements MeterBinder {
    /** The quantiles published as {@code cudaloom.await.latency}. */
    private static final double[] QUANTILES = {0.5, 0.9, 0.99, 0.999};

    private final CompletionReactor reactor;
    private final String deviceName;
    private Tags tags = Tags.empty();
    private final List<GpuStream> streams = new ArrayList<>();
    private boolean internals;

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

    /** Also the reactor's internals, as {@code cudaloom.internal.*} counters (off by default). */
    public CudaLoomMetrics internals(boolean bind) {
        this.internals = bind;
        return this;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Tags base = Tags.of("device", deviceName).and(tags);
        FunctionTimer.builder("cudaloom.await", reactor, r -> r.awaitLatency().count(),
                        r -> r.awaitLatency().totalNanos(), TimeUnit.NANOSECONDS)
                .tags(base)
                .description("Blocking awaits that registered, and the time they waited (registering to returning)")
                .register(registry);
        for (double q : QUANTILES) {
            TimeGauge.builder("cudaloom.await.latency", reactor, TimeUnit.NANOSECONDS, r -> percentile(r.awaitLatency(), q))
                    .tags(base).tag("quantile", String.format(Locale.ROOT, "%s", q))
                    .description("Await wait percentile since the device opened (HdrHistogram, within 1%)")
                    .register(registry);
        }
        TimeGauge.builder("cudaloom.await.latency.max", reactor, TimeUnit.NANOSECONDS, r -> r.awaitLatency().maxNanos())
                .tags(base).description("The longest await since the device opened").register(registry);
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

        counter(registry, base, "cudaloom.awaits.completed", "Awaits and callbacks that completed", s -> s.completions());
        counter(registry, base, "cudaloom.awaits.immediate", "Awaits that found their work done", s -> s.immediate());
        counter(registry, base, "cudaloom.registrations", "Awaits and callbacks that armed a slot", s -> s.registrations());
        counter(registry, base, "cudaloom.faults", "Awaits and callbacks that ended with a device fault", s -> s.faults());
        counter(registry, base, "cudaloom.timeouts", "Blocking awaits that timed out", s -> s.timeouts());
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
            internal(registry, base, "pre.wakes", i -> i.preWakes());
            internal(registry, base, "scan.passes", i -> i.scanPasses());
            internal(registry, base, "fault.probes", i -> i.faultProbes());
            FunctionCounter.builder("cudaloom.internal.scanner.cpu", reactor,
                            r -> Math.max(0, r.stats().internals().scannerCpuNanos()) / 1e9)
                    .tags(base).baseUnit("seconds").description("CPU time of the scanner thread").register(registry);
        }
    }

    private static double percentile(AwaitLatency l, double q) {
        if (q == 0.5) {
            return l.p50Nanos();
        } else if (q == 0.9) {
            return l.p90Nanos();
        } else if (q == 0.99) {
            return l.p99Nanos();
        }
        return l.p999Nanos();
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
