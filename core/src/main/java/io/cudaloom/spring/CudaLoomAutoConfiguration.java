package io.cudaloom.spring;

import io.cudaloom.GpuDevice;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * A {@link GpuDevice} bean, opened from the {@code cudaloom.*} properties
 * ({@link CudaLoomProperties}) with {@link GpuDevice#open(String, io.cudaloom.ReactorConfig)} when
 * the context starts and closed ({@link GpuDevice#close()}) when it closes, after the beans that use
 * it. None if the application defines a {@code GpuDevice} bean of its own (its metrics and health
 * are then bound all the same), or with {@code cudaloom.enabled=false}.
 *
 * <p>Its meters: {@link CudaLoomMetricsAutoConfiguration}; its health:
 * {@link CudaLoomHealthAutoConfiguration}.
 */
@AutoConfiguration
@ConditionalOnProperty(prefix = "cudaloom", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(CudaLoomProperties.class)
public class CudaLoomAutoConfiguration {
    /** For Spring. */
    public CudaLoomAutoConfiguration() {}

    /**
     * The device of {@code cudaloom.device} ({@code auto}: a GPU if there is one, else the simulated
     * device), with the reactor settings of {@code cudaloom.reactor.*}.
     *
     * @throws IllegalArgumentException for a bad property value, naming the property
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public GpuDevice gpuDevice(CudaLoomProperties properties) {
        return GpuDevice.open(properties.getDevice(), properties.toReactorConfig());
    }
}
