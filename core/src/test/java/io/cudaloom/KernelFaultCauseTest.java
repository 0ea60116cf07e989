package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.LONG;
import static io.cudaloom.ReactorTestSupport.gate;
import static io.cudaloom.ReactorTestSupport.parked;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.*;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A simulated kernel's exception is the {@link GpuFaultException}'s cause on every path, as the
 * CHANGELOG promises: the fault found before registering, a parked await woken by the scanner's
 * fault probe (plain, timed, uninterruptible, coalesced), the non-blocking forms, and an event of a
 * closed stream served by its drain. Before, the blocking forms woken by a delivery threw a
 * GpuFaultException whose cause was the delivered GpuFaultException (the kernel's exception one
 * level further down): {@code PARKED}, {@code TIMED}, {@code UNINTERRUPTIBLE}, {@code COALESCED},
 * {@code DRAIN} and {@code DRAIN_TIMED} failed; the others passed.
 */
class KernelFaultCauseTest {
    @RegisterExtension
    final OpenedDevices devices = new OpenedDevices();

    enum Path {
        /** The stream had faulted already: the check before registering throws. */
        FOUND_BEFORE,
        PARKED,
        TIMED,
        UNINTERRUPTIBLE,
        COALESCED,
        FUTURE,
        ON_COMPLETE,
        SUBSCRIBE,
        /** The stream was closed after the event was taken: its drain serves the await. */
        DRAIN,
        DRAIN_TIMED
    }

    @ParameterizedTest
    @EnumSource(Path.class)
    void theKernelsExceptionIsTheCause(Path path) throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create(ReactorConfig.builder()
                .waiterSpin(Duration.ZERO) // every wait parks and is woken by a delivery
                .faultProbeInterval(Duration.ofMillis(1))
                .coalesce(path == Path.COALESCED)
                .build()));
        SimulatedStream stream = device.newStream();
        IllegalArgumentException boom = new IllegalArgumentException("index 7 out of range (test, " + path + ")");
        if (path == Path.FOUND_BEFORE) {
            stream.launch(() -> {
                throw boom;
            });
            await().atMost(LONG).until(device::isFaulted);
            GpuFaultException e = assertThrows(GpuFaultException.class, () -> stream.event().await());
            assertSame(boom, e.getCause(), e.toString());
            return;
        }
        CountDownLatch gate = gate(stream);
        stream.launch(() -> {
            throw boom; // runs once the gate opens
        });
        GpuEvent event = stream.event();
        if (path == Path.DRAIN || path == Path.DRAIN_TIMED) {
            stream.close();
        }
        Throwable seen = switch (path) {
            case FUTURE -> {
                CompletableFuture<?> f = event.toCompletableFuture();
                gate.countDown();
                ExecutionException ee = assertThrows(ExecutionException.class, () -> f.get(30, TimeUnit.SECONDS));
                yield ee.getCause();
            }
            case ON_COMPLETE, SUBSCRIBE -> {
                CompletableFuture<RuntimeException> outcome = new CompletableFuture<>();
                if (path == Path.ON_COMPLETE) {
                    event.onComplete(Runnable::run, () -> outcome.complete(null), outcome::complete);
                } else {
                    event.subscribe(Runnable::run, outcome::complete);
                }
                gate.countDown();
                yield outcome.get(30, TimeUnit.SECONDS);
            }
            default -> blocking(path, event, gate);
        };
        GpuFaultException fault = assertInstanceOf(GpuFaultException.class, seen);
        assertSame(boom, fault.getCause(), "the kernel's exception is the cause, one level down: " + describe(fault));
    }

    /** A virtual thread awaits in the form of {@code path}, parks, then the gate opens; returns what it threw. */
    private static Throwable blocking(Path path, GpuEvent event, CountDownLatch gate) throws Exception {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread waiter = Thread.ofVirtual().start(() -> {
            try {
                switch (path) {
                    case TIMED, DRAIN_TIMED -> event.await(LONG);
                    case UNINTERRUPTIBLE -> event.awaitUninterruptibly();
                    default -> event.await();
                }
                thrown.set(new AssertionError("the await returned normally"));
            } catch (Throwable t) {
                thrown.set(t);
            }
        });
        await().atMost(LONG).until(() -> parked(waiter));
        gate.countDown();
        waiter.join(LONG.toMillis());
        assertFalse(waiter.isAlive(), "the waiter was woken");
        return thrown.get();
    }

    private static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder(t.toString());
        for (Throwable c = t.getCause(); c != null && c != t; c = c.getCause()) {
            sb.append(" <- caused by ").append(c);
            t = c;
        }
        return sb.toString();
    }
}
