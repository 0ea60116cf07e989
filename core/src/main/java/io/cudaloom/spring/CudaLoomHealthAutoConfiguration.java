package io.cudaloom.spring;

import io.cudaloom.GpuDevice;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;

/**
 * The device's health: a {@link CudaLoomHealthIndicator} bean named {@code cudaloomHealthIndicator},
 * which Spring Boot Actuator shows as the health component {@code cudaloom}, for the context's one
 * {@link GpuDevice}, when Spring Boot Actuator ({@code spring-boot-actuator}) is on the class path.
 * None if the application defines a bean of that name itself, has several {@code GpuDevice} beans
 * and none primary, or sets {@code management.health.cudaloom.enabled=false} or
 * {@code cudaloom.enabled=false}.
 */
@AutoConfiguration(after = CudaLoomAutoConfiguration.class)
// one annotation, both names (each must be true or missing): a repeated @ConditionalOnProperty
// needs Spring Boot 3.5
@ConditionalOnProperty(name = {"cudaloom.enabled", "management.health.cudaloom.enabled"}, havingValue = "true",
        matchIfMissing = true)
@ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
@ConditionalOnSingleCandidate(GpuDevice.class)
public class CudaLoomHealthAutoConfiguration {
    /** For Spring. */
    public CudaLoomHealthAutoConfiguration() {}

    /** The health component {@code cudaloom}: UP, or DOWN with the device's fault or once it is closed. */
    @Bean
    @ConditionalOnMissingBean(name = "cudaloomHealthIndicator")
    public CudaLoomHealthIndicator cudaloomHealthIndicator(GpuDevice device) {
        return new CudaLoomHealthIndicator(device);
    }
}
