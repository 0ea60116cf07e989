package io.cudaloom.spring;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.CompletionStrategy;
import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuDevice;
import io.cudaloom.GpuKernel;
import io.cudaloom.GpuStream;
import io.cudaloom.HostMemory;
import io.cudaloom.LiveResources;
import io.cudaloom.ReactorConfig;
import io.cudaloom.micrometer.CudaLoomMetrics;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.autoconfigure.health.HealthContributorAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.health.HealthEndpointAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthEndpoint;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.annotation.ImportCandidates;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The Spring Boot auto-configuration, in application contexts started by Spring's
 * {@link ApplicationContextRunner} with the auto-configurations an application would have: the
 * device bean from the properties and its close, the binder only with a registry, the health
 * component {@code cudaloom} going DOWN on a fault, and nothing with {@code cudaloom.enabled=false}.
 */
class CudaLoomAutoConfigurationTest {
    private static final Duration LONG = Duration.ofSeconds(30);
    private static final List<Class<?>> OURS = List.of(CudaLoomAutoConfiguration.class,
            CudaLoomMetricsAutoConfiguration.class, CudaLoomHealthAutoConfiguration.class);

    /** Ours and the actuator's (metrics: binds MeterBinder beans; health: the endpoint), the simulated device, no JMX. */
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(CudaLoomAutoConfiguration.class,
                    CudaLoomMetricsAutoConfiguration.class, CudaLoomHealthAutoConfiguration.class,
                    MetricsAutoConfiguration.class, HealthContributorAutoConfiguration.class,
                    HealthEndpointAutoConfiguration.class))
            .withPropertyValues("cudaloom.device=sim", "cudaloom.reactor.jmx=false");

    @Test
    void theAutoConfigurationsAreRegisteredForSpringBoot() {
        List<String> imported = ImportCandidates.load(AutoConfiguration.class, getClass().getClassLoader())
                .getCandidates();
        for (Class<?> c : OURS) {
            assertTrue(imported.contains(c.getName()), c.getName() + " is not in the imports file: " + imported);
        }
    }

    @Test
    void theDeviceOpensFromThePropertiesAndClosesWithTheContext() {
        AtomicReference<GpuDevice> opened = new AtomicReference<>();
        runner.withPropertyValues("cudaloom.reactor.capacity=128", "cudaloom.reactor.admission-limit=32",
                        "cudaloom.reactor.coalesce=false", "cudaloom.reactor.strategy=host-callback",
                        "cudaloom.reactor.waiter-spin=20us", "cudaloom.reactor.slow-await-factor=0")
                .run(context -> {
                    GpuDevice device = context.getBean(GpuDevice.class);
                    opened.set(device);
                    assertInstanceOf(SimulatedDevice.class, device, "cudaloom.device=sim");
                    ReactorConfig config = device.reactor().config();
                    assertEquals(128, config.capacity());
                    assertEquals(32, config.admissionLimit());
                    assertFalse(config.coalesce());
                    assertEquals(CompletionStrategy.HOST_CALLBACK, config.strategy());
                    assertEquals(20_000, config.waiterSpinNanos());
                    assertEquals(0.0, config.slowAwaitFactor());
                    assertFalse(config.jmx());
                    assertEquals(ReactorConfig.defaults().faultProbeIntervalNanos(), config.faultProbeIntervalNanos(),
                            "an unset property keeps the default");
                    assertEquals(12f, scaleOnDevice(device, 3f, 4f), "the device runs kernels");
                    assertFalse(device.reactor().isClosed());
                });
        GpuDevice device = opened.get();
        assertNotNull(device);
        assertTrue(device.reactor().isClosed(), "closing the context closes the device");
        assertTrue(LiveResources.openDevices().stream().noneMatch(d -> d.name().equals(device.name())),
                "no longer listed open: " + LiveResources.openDevices());
    }

    @Test
    void aBadPropertyFailsTheStartNamingIt() {
        runner.withPropertyValues("cudaloom.reactor.capacity=0").run(context -> {
            Throwable failure = context.getStartupFailure();
            assertNotNull(failure, "the context started with capacity 0");
            assertTrue(rootCause(failure).getMessage().startsWith("cudaloom.reactor.capacity: capacity must be between 1 and"),
                    rootCause(failure).getMessage());
        });
        runner.withPropertyValues("cudaloom.device=tpu").run(context -> {
            Throwable failure = context.getStartupFailure();
            assertNotNull(failure, "the context started with device tpu");
            assertEquals("cudaloom.device must be auto or one of [cuda, sim], was 'tpu'", rootCause(failure).getMessage());
        });
    }

    @Test
    void theBinderIsRegisteredWhenThereIsAMeterRegistry() {
        runner.withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new).run(context -> {
            assertNull(context.getStartupFailure());
            GpuDevice device = context.getBean(GpuDevice.class);
            assertEquals(1, context.getBeansOfType(CudaLoomMetrics.class).size());
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            List<Meter> ours = registry.getMeters().stream()
                    .filter(m -> m.getId().getName().startsWith("cudaloom."))
                    .toList();
            assertFalse(ours.isEmpty(), "no cudaloom.* meter in the registry: the binder was not bound");
            assertTrue(ours.stream().allMatch(m -> device.name().equals(m.getId().getTag("device"))), ours.toString());
        });
    }

    @Test
    void noBinderWithoutARegistryOrWithoutMicrometer() {
        runner.run(context -> {
            assertEquals(1, context.getBeansOfType(GpuDevice.class).size());
            assertEquals(0, context.getBeansOfType(MeterRegistry.class).size());
            assertEquals(0, context.getBeansOfType(CudaLoomMetrics.class).size(), "a binder with no registry");
        });
        // An application without Micrometer: the device and its health all the same, and no binder.
        runner.withClassLoader(new FilteredClassLoader("io.micrometer.")).run(context -> {
            assertNull(context.getStartupFailure());
            assertEquals(1, context.getBeansOfType(GpuDevice.class).size());
            assertEquals(1, context.getBeansOfType(CudaLoomHealthIndicator.class).size());
            assertFalse(context.containsBean("cudaLoomMetrics"));
        });
    }

    @Test
    void theHealthIsUpThenDownWithTheFaultOfAStream() {
        runner.run(context -> {
            SimulatedDevice device = (SimulatedDevice) context.getBean(GpuDevice.class);
            HealthIndicator indicator = context.getBean("cudaloomHealthIndicator", HealthIndicator.class);
            HealthEndpoint endpoint = context.getBean(HealthEndpoint.class);
            Health up = indicator.health();
            assertEquals(Status.UP, up.getStatus());
            assertEquals(device.name(), up.getDetails().get("device"));
            assertEquals(true, up.getDetails().get("simulated"));
            assertEquals(Status.UP, endpoint.healthForPath("cudaloom").getStatus(), "the component is named cudaloom");

            try (SimulatedStream stream = device.newStream()) {
                stream.injectFault("ILLEGAL_ADDRESS (test)");
                await().atMost(LONG).until(device::isFaulted);
                Health down = indicator.health();
                assertEquals(Status.DOWN, down.getStatus());
                assertEquals("ILLEGAL_ADDRESS (test) on " + stream, down.getDetails().get("fault"));
                assertEquals(Status.DOWN, endpoint.healthForPath("cudaloom").getStatus());
                assertEquals(Status.DOWN, endpoint.health().getStatus(), "the application's health follows");
            }
        });
    }

    @Test
    void theHealthIsDownOnceTheDeviceIsClosed() {
        runner.run(context -> {
            GpuDevice device = context.getBean(GpuDevice.class);
            device.close();
            Health health = context.getBean(CudaLoomHealthIndicator.class).health();
            assertEquals(Status.DOWN, health.getStatus());
            assertEquals(true, health.getDetails().get("closed"));
        });
    }

    @Test
    void anApplicationsOwnDeviceIsUsedInstead() {
        SimulatedDevice own = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build());
        try {
            runner.withBean(GpuDevice.class, () -> own).withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new)
                    .run(context -> {
                        assertSame(own, context.getBean(GpuDevice.class));
                        assertEquals(Status.UP, context.getBean(CudaLoomHealthIndicator.class).health().getStatus());
                        assertTrue(context.getBean(MeterRegistry.class).getMeters().stream()
                                .anyMatch(m -> own.name().equals(m.getId().getTag("device"))));
                    });
        } finally {
            own.close();
        }
    }

    @Test
    void disabledConfiguresNothing() {
        int before = LiveResources.openDevices().size();
        runner.withPropertyValues("cudaloom.enabled=false").withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new)
                .run(context -> {
                    assertNull(context.getStartupFailure());
                    assertEquals(0, context.getBeansOfType(GpuDevice.class).size());
                    assertEquals(0, context.getBeansOfType(CudaLoomMetrics.class).size());
                    assertEquals(0, context.getBeansOfType(CudaLoomHealthIndicator.class).size());
                    assertEquals(0, context.getBeansOfType(CudaLoomProperties.class).size());
                    assertEquals(before, LiveResources.openDevices().size(), "a device was opened");
                });
    }

    /** {@code value * factor} through host memory, device memory and {@link GpuKernel#SCALE_F32}. */
    private static float scaleOnDevice(GpuDevice device, float value, float factor) throws InterruptedException {
        try (GpuStream stream = device.newStream(); DeviceMemory data = device.allocate(4);
             HostMemory host = device.allocateHost(4)) {
            host.floats().put(0, value);
            stream.copy(host, data, 4);
            stream.launch(GpuKernel.SCALE_F32, 1, 32, data, factor, 1);
            stream.copy(data, host, 4);
            stream.event().await();
            return host.floats().get(0);
        }
    }

    private static Throwable rootCause(Throwable t) {
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }
}
