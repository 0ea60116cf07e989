package io.cudaloom;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.IntBuffer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * docs/SEMANTICS.md, "Semantics", its bullet on closing memory:
 * <blockquote>Closing memory is stream-ordered: {@code close()} returns at once, and the memory is
 * freed once the work queued on it (copies, memsets, launches that take it) is done, on a thread of
 * the library's, never the caller's; memory no queued work uses is freed at once. A use after the
 * close throws at the call. A fault of the stream, or the device's close, frees what waits for
 * it.</blockquote>
 * {@link #closingMemoryUnderQueuedWorkReturnsAtOnceAndFreesItOnceTheWorkIsDone},
 * {@link #memoryNoQueuedWorkUsesIsFreedAtOnce}, {@link #aFaultFreesTheMemoryThatWaitsForIt},
 * {@link #theDevicesCloseFreesTheMemoryThatWaitsForIt},
 * {@link #memoryUsedOnAStreamClosedMeanwhileIsFreedOnceItsDrainIsDone}. The simulated device's
 * check that no command runs on freed memory, and a pipeline of timed-out requests, are
 * {@code io.cudaloom.sim.StreamOrderedFreeTest}'s.
 *
 * <p>A section of the semantics suite, run by every backend and strategy ({@link SemanticsSuite}).
 */
abstract class StreamOrderedFreeSemantics extends SemanticsSuite {
    private static final int N = 1024;

    /** Allocates on {@code device}, or skips the test on a backend without memory. */
    private static DeviceMemory deviceMemory(BackendFixture b, GpuDevice device, long bytes) {
        try {
            return device.allocate(bytes);
        } catch (UnsupportedOperationException e) {
            b.unsupported("it has no memory (" + e.getMessage() + ")");
            throw e; // not reached
        }
    }

    private static int count(GpuDevice device, LiveResources.Kind kind) {
        return device.liveResources().count(kind);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void closingMemoryUnderQueuedWorkReturnsAtOnceAndFreesItOnceTheWorkIsDone(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        DeviceMemory d = deviceMemory(b, device, 4L * N);
        HostMemory in = device.allocateHost(4L * N);
        HostMemory out = device.allocateHost(4L * N); // stays open: the result is read through it
        DeviceMemory spare = device.allocate(16);       // stays open: for the uses after the close
        IntBuffer src = in.ints();
        for (int i = 0; i < N; i++) {
            src.put(i, 7 * i + 1);
        }
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        stream.copy(in, d, 4L * N);
        stream.copy(d, out, 4L * N);
        GpuEvent event = stream.event();

        long t0 = System.nanoTime();
        in.close();
        d.close();
        long closeNanos = System.nanoTime() - t0;
        assertTrue(closeNanos < CLOSE_BOUND.toNanos(), "closing took " + closeNanos / 1_000 + " us: it must not wait for the work");
        assertThrows(IllegalStateException.class, () -> stream.copy(in, spare, 4), "a use after the close throws at the call");
        assertThrows(IllegalStateException.class, () -> stream.copy(out, d, 4), "a use after the close throws at the call");
        in.close(); // idempotent
        d.close();
        assertEquals(1, count(device, LiveResources.Kind.DEVICE_MEMORY), "closed memory is no longer open");
        assertEquals(1, count(device, LiveResources.Kind.HOST_MEMORY), "only the result's memory is open");
        assertEquals(2, count(device, LiveResources.Kind.FREEING_MEMORY), "both wait for the held work");
        await().during(QUIET).atMost(QUIET.plus(LONG))
                .until(() -> count(device, LiveResources.Kind.FREEING_MEMORY) == 2);

        gate.open();
        event.await();
        IntBuffer result = out.ints();
        for (int i = 0; i < N; i++) {
            assertEquals(7 * i + 1, result.get(i), "element " + i + ": the copies ran on memory that was not freed");
        }
        await().atMost(LONG).until(() -> count(device, LiveResources.Kind.FREEING_MEMORY) == 0);
        out.close();
        spare.close();
        for (LiveResources.Kind k : java.util.List.of(LiveResources.Kind.DEVICE_MEMORY, LiveResources.Kind.HOST_MEMORY,
                LiveResources.Kind.FREEING_MEMORY)) {
            assertEquals(0, count(device, k), k + ": " + device.liveResources());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void memoryNoQueuedWorkUsesIsFreedAtOnce(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        DeviceMemory d = deviceMemory(b, device, 4L * N);
        HostMemory h = device.allocateHost(4L * N);
        GpuStream stream = b.newStream(device);
        stream.copy(h, d, 4L * N);
        stream.await();
        d.close();
        h.close();
        DeviceMemory unused = device.allocate(16);
        unused.close();
        assertEquals(0, count(device, LiveResources.Kind.FREEING_MEMORY), "nothing queued uses them: freed at once");
        assertEquals(0, count(device, LiveResources.Kind.DEVICE_MEMORY));
        assertEquals(0, count(device, LiveResources.Kind.HOST_MEMORY));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aFaultFreesTheMemoryThatWaitsForIt(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        DeviceMemory d = deviceMemory(b, device, 4L * N);
        GpuStream stream = b.newStream(device);
        BackendFixture.Fault fault = b.fault(stream); // held until triggered
        stream.memset32(d, 5, N);
        d.close();
        assertEquals(1, count(device, LiveResources.Kind.FREEING_MEMORY));
        fault.trigger();
        await().atMost(LONG).until(() -> count(device, LiveResources.Kind.FREEING_MEMORY) == 0);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void theDevicesCloseFreesTheMemoryThatWaitsForIt(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        DeviceMemory d = deviceMemory(b, device, 4L * N);
        GpuStream stream = b.newStream(device);
        b.hold(stream);
        stream.memset32(d, 5, N);
        d.close();
        assertEquals(1, count(device, LiveResources.Kind.FREEING_MEMORY));
        device.close();
        await().atMost(LONG).until(() -> count(device, LiveResources.Kind.FREEING_MEMORY) == 0);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void memoryUsedOnAStreamClosedMeanwhileIsFreedOnceItsDrainIsDone(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        DeviceMemory d = deviceMemory(b, device, 4L * N);
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        stream.memset32(d, 5, N);
        stream.close();
        d.close();
        await().during(QUIET).atMost(QUIET.plus(LONG))
                .until(() -> count(device, LiveResources.Kind.FREEING_MEMORY) == 1);
        gate.open();
        await().atMost(LONG).until(() -> count(device, LiveResources.Kind.FREEING_MEMORY) == 0);
    }
}
