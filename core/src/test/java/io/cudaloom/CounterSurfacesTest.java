package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.cudaloom.micrometer.CudaLoomMetrics;
import io.cudaloom.reactor.metrics.Counter;
import io.cudaloom.reactor.metrics.CountersEvent;
import io.cudaloom.reactor.metrics.JfrEvents;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import jdk.jfr.EventType;
import jdk.jfr.Recording;
import jdk.jfr.ValueDescriptor;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each {@link Counter} is declared once, and shown on every surface: {@link ReactorStats} (an
 * accessor, a builder setter, and {@link ReactorStats.Internals} for an internal one), its group's
 * MXBean, the periodic JFR event and the Micrometer binder, under the names users rely on. A
 * counter declared but missing from a surface, shown under another name, or a surface showing a
 * counter that is not declared, fails here, naming it.
 */
class CounterSurfacesTest {
    private static final MBeanServer MBEANS = ManagementFactory.getPlatformMBeanServer();

    /**
     * The published names, frozen: ReactorStats accessor (= JFR field, = JMX attribute
     * capitalized) and Micrometer meter, in declaration ({@code toString}) order. A new counter is
     * added here too; an existing one is never renamed.
     */
    private static final Map<String, String> NAMES = names(
            "capacity", "cudaloom.slots.capacity",
            "armedNow", "cudaloom.slots.armed",
            "freeSlots", "cudaloom.slots.free",
            "registrations", "cudaloom.registrations",
            "completions", "cudaloom.completions",
            "inlineCompletions", "cudaloom.internal.inline.completions",
            "immediate", "cudaloom.awaits.immediate",
            "fallbacks", "cudaloom.fallbacks",
            "abandoned", "cudaloom.abandoned",
            "faults", "cudaloom.faults",
            "scannerParks", "cudaloom.internal.scanner.parks",
            "scannerTimedParks", "cudaloom.internal.scanner.timed.parks",
            "scannerUnparks", "cudaloom.internal.scanner.unparks",
            "scannerMissedWakeups", "cudaloom.internal.scanner.missed.wakeups",
            "preWakes", "cudaloom.internal.pre.wakes",
            "scanPasses", "cudaloom.internal.scan.passes",
            "faultProbes", "cudaloom.internal.fault.probes",
            "quarantined", "cudaloom.slots.quarantined",
            "coalesced", "cudaloom.internal.coalesced",
            "scannerErrors", "cudaloom.scanner.errors",
            "callbackErrors", "cudaloom.callback.errors",
            "scannerCpuNanos", "cudaloom.internal.scanner.cpu",
            "flagWrites", "cudaloom.internal.flag.writes",
            "admissionWaits", "cudaloom.admission.waits",
            "admissionWaitNanos", "cudaloom.admission.wait",
            "trackers", "cudaloom.internal.trackers",
            "timeouts", "cudaloom.await", // the await timer's count with outcome=timeout
            "waitersNow", "cudaloom.waiters",
            "workInFlight", "cudaloom.work.in.flight");

    /**
     * The binder's meters that are no counter (the latency's gauges, the per-stream gauges), and
     * the await timer's histogram as a SimpleMeterRegistry shows it (gauges of its own name).
     */
    private static final Set<String> NOT_COUNTERS = Set.of("cudaloom.await.histogram", "cudaloom.await.recent.p99",
            "cudaloom.await.slow.threshold", "cudaloom.stream.work.in.flight");

    @TempDir
    Path dir;

    private static Map<String, String> names(String... pairs) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            m.put(pairs[i], pairs[i + 1]);
        }
        return m;
    }

    @Test
    void theNamesAreTheOnesPublished() {
        Map<String, String> declared = new LinkedHashMap<>();
        for (Counter c : Counter.ALL) {
            declared.put(c.statName, c.meter);
        }
        assertEquals(NAMES, declared, "ReactorStats/JFR/JMX names and Micrometer meters, in order");
        assertEquals(Counter.values().length, Counter.COUNT);
    }

    // ---- ReactorStats ----------------------------------------------------------------------------

    @Test
    void everyCounterHasItsAccessorsAndEveryAccessorIsACounter() throws Exception {
        List<String> missing = new ArrayList<>();
        ReactorStats.Builder builder = ReactorStats.builder();
        for (Counter c : Counter.ALL) {
            Method setter;
            try {
                setter = ReactorStats.Builder.class.getMethod(c.statName, c.type.javaType);
            } catch (NoSuchMethodException e) {
                missing.add("ReactorStats.Builder." + c.statName + "(" + c.type.javaType + ")");
                continue;
            }
            long distinct = 1000 + c.ordinal();
            setter.invoke(builder, c.type == Counter.Type.INT ? (Object) (int) distinct : (Object) distinct);
        }
        ReactorStats stats = builder.build();
        ReactorStats.Internals internals = stats.internals();
        for (Counter c : Counter.ALL) {
            long distinct = 1000 + c.ordinal();
            assertEquals(distinct, stats.get(c), c + ": the builder's setter sets this counter");
            check(missing, ReactorStats.class, stats, c, distinct);
            if (c.group == Counter.Group.INTERNAL) {
                check(missing, ReactorStats.Internals.class, internals, c, distinct);
            }
        }
        // And the other way round: no accessor without its counter.
        Set<String> declared = Counter.ALL.stream().map(c -> c.statName).collect(Collectors.toSet());
        Set<String> internal = Counter.ALL.stream().filter(c -> c.group == Counter.Group.INTERNAL)
                .map(c -> c.statName).collect(Collectors.toSet());
        assertEquals(declared, accessors(ReactorStats.class), "ReactorStats' accessors");
        assertEquals(internal, accessors(ReactorStats.Internals.class), "ReactorStats.Internals' accessors");
        assertEquals(declared, Arrays.stream(ReactorStats.Builder.class.getDeclaredMethods())
                .filter(m -> Modifier.isPublic(m.getModifiers()) && m.getReturnType() == ReactorStats.Builder.class)
                .map(Method::getName).collect(Collectors.toSet()), "the builder's setters");
        assertEquals(List.of(), missing);
    }

    /** {@code type}'s accessor of {@code c} on {@code target} returns {@code expected}, with the counter's type. */
    private static void check(List<String> missing, Class<?> type, Object target, Counter c, long expected)
            throws Exception {
        Method m;
        try {
            m = type.getMethod(c.statName);
        } catch (NoSuchMethodException e) {
            missing.add(type.getSimpleName() + "." + c.statName + "()");
            return;
        }
        if (m.getReturnType() != c.type.javaType) {
            missing.add(type.getSimpleName() + "." + c.statName + "() returns " + m.getReturnType());
            return;
        }
        assertEquals(expected, ((Number) m.invoke(target)).longValue(), type.getSimpleName() + "." + c.statName
                + "() reads its own counter");
    }

    private static Set<String> accessors(Class<?> type) {
        return Arrays.stream(type.getDeclaredMethods())
                .filter(m -> Modifier.isPublic(m.getModifiers()) && !Modifier.isStatic(m.getModifiers())
                        && m.getParameterCount() == 0 && (m.getReturnType() == int.class || m.getReturnType() == long.class)
                        && !m.getName().equals("hashCode"))
                .map(Method::getName).collect(Collectors.toCollection(TreeSet::new));
    }

    // ---- JMX ------------------------------------------------------------------------------------

    @Test
    void everyCounterIsAnAttributeOfItsGroupsMXBeanOnly() throws Exception {
        List<String> missing = new ArrayList<>();
        for (Counter c : Counter.ALL) {
            String getter = "get" + c.attribute();
            Class<?> bean = c.group == Counter.Group.INTERNAL ? ReactorInternalsMXBean.class : ReactorMXBean.class;
            Class<?> other = c.group == Counter.Group.INTERNAL ? ReactorMXBean.class : ReactorInternalsMXBean.class;
            try {
                Method attribute = bean.getMethod(getter);
                if (attribute.getReturnType() != c.type.javaType) {
                    missing.add(bean.getSimpleName() + "." + getter + " returns " + attribute.getReturnType());
                }
            } catch (NoSuchMethodException e) {
                missing.add(bean.getSimpleName() + "." + getter);
            }
            if (Arrays.stream(other.getMethods()).anyMatch(o -> o.getName().equals(getter))) {
                missing.add(getter + " is on " + other.getSimpleName() + " too: one group each");
            }
        }
        assertEquals(List.of(), missing);
    }

    @Test
    void theRegisteredMXBeansAnswerEveryCounterWithItsDescription() throws Exception {
        ObjectName operator;
        ObjectName internals;
        try (SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().capacity(32).build())) {
            SimulatedStream stream = device.newStream();
            stream.launchKernel(Duration.ofMillis(1));
            stream.await();
            operator = device.reactor().observability().mbeanName();
            internals = device.reactor().observability().internalsName();
            assertNotNull(operator, "registered: every getter of ReactorMXBean was resolved");
            assertNotNull(internals, "registered: every getter of ReactorInternalsMXBean was resolved");
            for (Counter c : Counter.ALL) {
                ObjectName name = c.group == Counter.Group.INTERNAL ? internals : operator;
                Object value = MBEANS.getAttribute(name, c.attribute());
                assertEquals(c.type == Counter.Type.INT ? Integer.class : Long.class, value.getClass(), c.attribute());
                if (c == Counter.CAPACITY || c == Counter.COMPLETIONS || c == Counter.REGISTRATIONS) {
                    assertEquals(device.reactor().stats().get(c), ((Number) value).longValue(), c.attribute());
                }
                MBeanInfo info = MBEANS.getMBeanInfo(name);
                MBeanAttributeInfo attribute = Arrays.stream(info.getAttributes())
                        .filter(a -> a.getName().equals(c.attribute())).findFirst().orElseThrow();
                assertEquals(c.description, attribute.getDescription(), c.attribute());
            }
            assertEquals(32, MBEANS.getAttribute(operator, "Capacity"));
            assertEquals(device.name(), MBEANS.getAttribute(internals, "DeviceName"));
            assertEquals("REACTOR", MBEANS.getAttribute(operator, "Strategy"));
        }
    }

    // ---- JFR ------------------------------------------------------------------------------------

    @Test
    void everyCounterIsAFieldOfThePeriodicEventOfItsType() {
        EventType event = EventType.getEventType(CountersEvent.class);
        List<String> missing = new ArrayList<>();
        for (Counter c : Counter.ALL) {
            ValueDescriptor field = event.getField(c.statName);
            if (field == null) {
                missing.add(CountersEvent.NAME + "." + c.statName);
            } else if (!field.getTypeName().equals(c.type.javaType.getName())) {
                missing.add(CountersEvent.NAME + "." + c.statName + " is a " + field.getTypeName());
            }
        }
        assertEquals(List.of(), missing);
    }

    @Test
    void thePeriodicEventCarriesEveryCounterOfTheSnapshot() throws Exception {
        Path file = dir.resolve("counters.jfr");
        ReactorStats after;
        String device;
        try (Recording recording = new Recording()) {
            recording.enable(CountersEvent.NAME).withPeriod(Duration.ofHours(1));
            recording.start();
            SimulatedDevice d = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build());
            device = d.name();
            SimulatedStream stream = d.newStream();
            for (int i = 0; i < 3; i++) {
                stream.launchKernel(Duration.ofMillis(1));
                stream.await();
            }
            d.close(); // the counters no longer move
            after = d.reactor().stats();
            JfrEvents.counters(d.name(), d.reactor().observed()::counters, d.reactor().observed()::awaitLatency);
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().equals(CountersEvent.NAME)
                        && e.getString("device").equals(device)).toList();
        RecordedEvent last = events.get(events.size() - 1);
        for (Counter c : Counter.ALL) {
            long expected = after.get(c);
            if (c.unit == Counter.Unit.NANOSECONDS && expected < 0) {
                expected = Long.MIN_VALUE; // JFR's N/A
            }
            long recorded = c.type == Counter.Type.INT ? last.getInt(c.statName) : last.getLong(c.statName);
            assertEquals(expected, recorded, c.statName + " in " + last);
        }
        assertEquals(3, last.getLong("completions"));
    }

    // ---- Micrometer -----------------------------------------------------------------------------

    @Test
    void theBinderBindsEveryCounterUnderItsMeterAndNothingElse() throws Exception {
        SimpleMeterRegistry all = new SimpleMeterRegistry();
        SimpleMeterRegistry operators = new SimpleMeterRegistry();
        ReactorStats after;
        SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build());
        try {
            CudaLoomMetrics.of(device).internals(true).bindTo(all);
            CudaLoomMetrics.of(device).bindTo(operators);
            SimulatedStream stream = device.newStream();
            for (int i = 0; i < 3; i++) {
                stream.launchKernel(Duration.ofMillis(1));
                stream.await();
            }
            java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
            stream.launch(() -> {
                try {
                    gate.await();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            assertEquals(false, stream.event().await(Duration.ofMillis(2)), "a timeout, for the timeouts' meter");
            gate.countDown();
            stream.await();
        } finally {
            device.close(); // the counters no longer move
        }
        after = device.reactor().stats();
        List<String> wrong = new ArrayList<>();
        for (Counter c : Counter.ALL) {
            boolean timer = c.meter.equals(Counter.AWAIT_TIMER); // the timeouts: a count of the await timer
            Meter meter = timer ? all.find(c.meter).tags("device", device.name(), "outcome", "timeout").meter()
                    : all.find(c.meter).tag("device", device.name()).meter();
            if (meter == null) {
                wrong.add("no meter " + c.meter + " for " + c);
                continue;
            }
            double value;
            if (timer) {
                if (c != Counter.TIMEOUTS || !(meter instanceof Timer t)) {
                    wrong.add(c.meter + " is a " + meter.getId().getType() + " for " + c + ", not the timeouts' timer");
                    continue;
                }
                value = t.count();
            } else if (c.measure == Counter.Measure.LEVEL) {
                if (!(meter instanceof Gauge g)) {
                    wrong.add(c.meter + " is a " + meter.getId().getType() + ", not a gauge");
                    continue;
                }
                value = g.value();
            } else {
                if (!(meter instanceof FunctionCounter f)) {
                    wrong.add(c.meter + " is a " + meter.getId().getType() + ", not a function counter");
                    continue;
                }
                value = f.count();
            }
            double expected = after.get(c);
            if (c.unit == Counter.Unit.NANOSECONDS) {
                expected = Math.max(0, expected) / 1e9;
                if (!"seconds".equals(meter.getId().getBaseUnit())) {
                    wrong.add(c.meter + " is in " + meter.getId().getBaseUnit() + ", not seconds");
                }
            }
            if (expected != value) {
                wrong.add(c.meter + " reads " + value + ", " + c + " is " + expected);
            }
            boolean boundByDefault = operators.find(c.meter).meter() != null;
            if (boundByDefault != (c.group == Counter.Group.OPERATOR)) {
                wrong.add(c.meter + (boundByDefault ? " is bound without internals(true)" : " is bound only with internals(true)"));
            }
        }
        Set<String> bound = all.getMeters().stream().map(m -> m.getId().getName())
                .filter(n -> !NOT_COUNTERS.contains(n)).collect(Collectors.toCollection(TreeSet::new));
        Set<String> declared = Counter.ALL.stream().map(c -> c.meter).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(List.of(), wrong);
        assertEquals(declared, bound, "the binder's counter meters: one per counter");
        assertEquals(4, after.completions(), after.toString());
        assertEquals(1, after.timeouts(), after.toString());
    }
}
