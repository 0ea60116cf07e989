/**
 * Spring Boot support: an auto-configuration that opens a {@link io.cudaloom.GpuDevice} bean from
 * the {@code cudaloom.*} properties ({@link io.cudaloom.spring.CudaLoomProperties}) and closes it
 * with the context, binds its Micrometer meters when there is a {@code MeterRegistry}, and reports
 * its fault state as the actuator's health component {@code cudaloom}
 * ({@link io.cudaloom.spring.CudaLoomHealthIndicator}). Registered in
 * {@code META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports}, so a
 * Spring Boot 3 application with cuda-loom-core on its class path gets it; {@code cudaloom.enabled=false}
 * turns all of it off.
 *
 * <p>Needs {@code org.springframework.boot:spring-boot-autoconfigure} (and
 * {@code spring-boot-actuator} for the health indicator, {@code micrometer-core} for the meters):
 * optional dependencies of core, which a Spring Boot application has already. No other package of
 * the library names this one or Spring, so nothing here is loaded unless Spring Boot reads the
 * imports file.
 *
 * <p>Null-marked (JSpecify): every type here is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package io.cudaloom.spring;

import org.jspecify.annotations.NullMarked;
