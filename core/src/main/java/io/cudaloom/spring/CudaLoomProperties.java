package io.cudaloom.spring;

import io.cudaloom.CompletionStrategy;
import io.cudaloom.GpuDevice;
import io.cudaloom.ReactorConfig;
import java.time.Duration;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code cudaloom.*} properties of the Spring Boot auto-configuration
 * ({@link CudaLoomAutoConfiguration}): which backend to open, and the {@link ReactorConfig}
 * settings a server sets most. A setting left out keeps {@link ReactorConfig}'s default; a bad
 * value fails the start with the one-line message of {@link ReactorConfig.Builder}'s setter,
 * prefixed with the property's name.
 *
 * <pre>
 * cudaloom.enabled=true                   # false: no GpuDevice bean, binder or health indicator
 * cudaloom.device=auto                    # auto | cuda | sim (GpuDevice.open(backend, config))
 * cudaloom.reactor.capacity=4096          # completion slots
 * cudaloom.reactor.admission-limit=256    # work entries in flight per stream before a submitter parks
 * cudaloom.reactor.coalesce=true          # waiters on one stream share flag writes
 * cudaloom.reactor.flag-writes-in-flight=1
 * cudaloom.reactor.strategy=reactor       # reactor | host-callback
 * cudaloom.reactor.waiter-spin=50us       # how long a waiter spins on its flag before it parks
 * cudaloom.reactor.fault-probe-interval=1ms
 * cudaloom.reactor.slow-await-factor=4    # the JFR SlowAwait event's relative threshold; 0: off
 * cudaloom.reactor.jmx=true               # register the device's MXBeans
 * </pre>
 *
 * <p>{@code cudaloom.device} is also the system property {@link GpuDevice#BACKEND_PROPERTY}, which
 * Spring reads like any other property: {@code -Dcudaloom.device=sim} picks the simulated device
 * here as it does for {@link GpuDevice#open()}.
 */
@ConfigurationProperties(prefix = "cudaloom")
public class CudaLoomProperties {
    /** Whether the auto-configuration does anything at all. */
    private boolean enabled = true;
    /** The backend: {@code auto} (a GPU if there is one, else the simulated device), {@code cuda} or {@code sim}. */
    private String device = "auto";
    private final Reactor reactor = new Reactor();

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public String getDevice() {
        return device;
    }

    public void setDevice(String device) {
        this.device = device;
    }

    public Reactor getReactor() {
        return reactor;
    }

    /**
     * The reactor's settings as a {@link ReactorConfig}: the defaults, with each property that is
     * set applied through its builder's setter.
     *
     * @throws IllegalArgumentException naming the property, for a value the setter refuses
     */
    public ReactorConfig toReactorConfig() {
        ReactorConfig.Builder b = ReactorConfig.builder();
        Reactor r = reactor;
        apply("capacity", r.capacity, b::capacity);
        apply("admission-limit", r.admissionLimit, b::admissionLimit);
        apply("coalesce", r.coalesce, b::coalesce);
        apply("flag-writes-in-flight", r.flagWritesInFlight, b::flagWritesInFlight);
        apply("strategy", r.strategy, b::strategy);
        apply("waiter-spin", r.waiterSpin, b::waiterSpin);
        apply("fault-probe-interval", r.faultProbeInterval, b::faultProbeInterval);
        apply("slow-await-factor", r.slowAwaitFactor, b::slowAwaitFactor);
        apply("jmx", r.jmx, b::jmx);
        return b.build();
    }

    private static <T> void apply(String name, @Nullable T value, Consumer<T> setter) {
        if (value == null) {
            return;
        }
        try {
            setter.accept(value);
        } catch (IllegalArgumentException e) {
            // the setter's one-line message, naming the property; its stack says nothing more
            throw new IllegalArgumentException("cudaloom.reactor." + name + ": " + e.getMessage());
        }
    }

    /**
     * {@code cudaloom.reactor.*}: the {@link ReactorConfig.Builder} setters of the same names (see
     * there, and docs/TUNING.md); null (unset) keeps the default.
     */
    public static class Reactor {
        private @Nullable Integer capacity;
        private @Nullable Integer admissionLimit;
        private @Nullable Boolean coalesce;
        private @Nullable Integer flagWritesInFlight;
        private @Nullable CompletionStrategy strategy;
        private @Nullable Duration waiterSpin;
        private @Nullable Duration faultProbeInterval;
        private @Nullable Double slowAwaitFactor;
        private @Nullable Boolean jmx;

        public @Nullable Integer getCapacity() {
            return capacity;
        }

        public void setCapacity(@Nullable Integer capacity) {
            this.capacity = capacity;
        }

        public @Nullable Integer getAdmissionLimit() {
            return admissionLimit;
        }

        public void setAdmissionLimit(@Nullable Integer admissionLimit) {
            this.admissionLimit = admissionLimit;
        }

        public @Nullable Boolean getCoalesce() {
            return coalesce;
        }

        public void setCoalesce(@Nullable Boolean coalesce) {
            this.coalesce = coalesce;
        }

        public @Nullable Integer getFlagWritesInFlight() {
            return flagWritesInFlight;
        }

        public void setFlagWritesInFlight(@Nullable Integer flagWritesInFlight) {
            this.flagWritesInFlight = flagWritesInFlight;
        }

        public @Nullable CompletionStrategy getStrategy() {
            return strategy;
        }

        public void setStrategy(@Nullable CompletionStrategy strategy) {
            this.strategy = strategy;
        }

        public @Nullable Duration getWaiterSpin() {
            return waiterSpin;
        }

        public void setWaiterSpin(@Nullable Duration waiterSpin) {
            this.waiterSpin = waiterSpin;
        }

        public @Nullable Duration getFaultProbeInterval() {
            return faultProbeInterval;
        }

        public void setFaultProbeInterval(@Nullable Duration faultProbeInterval) {
            this.faultProbeInterval = faultProbeInterval;
        }

        public @Nullable Double getSlowAwaitFactor() {
            return slowAwaitFactor;
        }

        public void setSlowAwaitFactor(@Nullable Double slowAwaitFactor) {
            this.slowAwaitFactor = slowAwaitFactor;
        }

        public @Nullable Boolean getJmx() {
            return jmx;
        }

        public void setJmx(@Nullable Boolean jmx) {
            this.jmx = jmx;
        }
    }
}
