package io.cudaloom.spring;

import io.cudaloom.GpuDevice;
import io.cudaloom.micrometer.CudaLoomMetrics;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;

/**
 * The device's Micrometer meters: a {@link CudaLoomMetrics} bean for the context's one
 * {@link GpuDevice}, when Micrometer is on the class path and the context has a
 * {@code MeterRegistry} bean (Spring Boot Actuator's, or one of the application's). Spring Boot
 * Actuator binds every {@code MeterBinder} bean to every registry, this one too. None if the
 * application defines a {@code CudaLoomMetrics} bean itself (e.g. with tags or streams), has several
 * {@code GpuDevice} beans and none primary (then bind each device's own), or sets
 * {@code cudaloom.enabled=false}.
 *
 * <p>Ordered after the actuator's registries (named, not referenced: the actuator is optional) and
 * {@link CudaLoomAutoConfiguration}, so that the conditions see them.
 */
@AutoConfiguration(after = CudaLoomAutoConfiguration.class, afterName = {
        "org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration"})
@ConditionalOnProperty(prefix = "cudaloom", name = "enabled", havingValue = "true", matchIfMissing = true)
@ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
@ConditionalOnBean(type = "io.micrometer.core.instrument.MeterRegistry")
@ConditionalOnSingleCandidate(GpuDevice.class)
public class CudaLoomMetricsAutoConfiguration {
    /** For Spring. */
    public CudaLoomMetricsAutoConfiguration() {}

    /** {@code CudaLoomMetrics.of(device)}: the meters of io.cudaloom.micrometer, tagged {@code device=<its name>}. */
    @Bean
    @ConditionalOnMissingBean
    public CudaLoomMetrics cudaLoomMetrics(GpuDevice device) {
        return CudaLoomMetrics.of(device);
    }
}
