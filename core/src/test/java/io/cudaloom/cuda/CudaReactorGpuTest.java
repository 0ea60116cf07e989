package io.cudaloom.cuda;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.*;

import io.cudaloom.GpuDevice;
import io.cudaloom.LiveResources;
import io.cudaloom.ReactorConfig;
import io.cudaloom.ReactorStats;
import io.cudaloom.junit.GpuTest;
import java.nio.IntBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * What only a real GPU shows: the original crate's GPU scenarios that are about data and load
 * (64 MiB memsets, abandoned awaits followed by good rounds, idle gaps, 1,000 threads on 8 streams),
 * with virtual threads instead of futures and the reactor path forced (no waiter spin), plus the
 * device fault in a child JVM, context currency and device selection. The semantics of docs/SEMANTICS.md
 * (spurious unparks, timed-out awaits, pool exhaustion, the strategies, ...) are the semantics
 * suite's ({@code io.cudaloom.SemanticsSuite} and its section suites, e.g. {@code AwaitSemantics},
 * {@code FallbackAndStrategySemantics}), run here by {@code io.cudaloom.CudaSemanticsGpuTest}.
 * Runs on a real GPU only: {@link GpuTest} skips the class elsewhere, injects the class's device
 * (the reactor path forced) and a fresh stream per test, and checks after each test that every slot
 * came back and every pinned buffer was closed. The tests share the device, so they compare the
 * reactor's counters with their values at the start of the test.
 */
@Tag("gpu")
@GpuTest(config = "io.cudaloom.cuda.GpuTestSupport#reactorOnly")
class CudaReactorGpuTest {
    private static final Duration LONG = Duration.ofSeconds(60);
    private static final int WORDS_64MIB = 16 * 1024 * 1024;

    private static void assertAll(IntBuffer data, int expected, String what) {
        for (int i = 0; i < data.limit(); i++) {
            if (data.get(i) != expected) {
                fail(what + ": element " + i + " is " + data.get(i) + ", expected " + expected);
            }
        }
    }

    @Test
    void openPicksTheGpuWhenPresent(CudaDevice device) {
        System.out.println("GPU: " + device.name() + ", compute capability " + device.computeCapability());
        try (GpuDevice d = GpuDevice.open()) {
            assertFalse(d.isSimulated(), "GpuDevice.open() should pick the CUDA device: " + d.name());
        }
    }

    /** (1) 16 passes of a 64 MiB memset, copied back, fully visible after the await; 8 rounds. */
    @Test
    void memsetDataIsVisibleAfterAwait(CudaDevice device, CudaStream stream) throws Exception {
        long registrations = device.reactor().stats().registrations();
        try (DeviceBuffer buf = device.allocate(4L * WORDS_64MIB);
                PinnedBuffer host = device.allocateHost(4L * WORDS_64MIB)) {
            for (int round = 0; round < 8; round++) {
                int last = 0;
                for (int pass = 0; pass < 16; pass++) {
                    last = round * 100 + pass + 1;
                    stream.memset32(buf, last, WORDS_64MIB);
                }
                host.ints().put(0, -1).put(WORDS_64MIB - 1, -1); // poison the ends
                stream.copy(buf, host, 4L * WORDS_64MIB);
                stream.await();
                assertAll(host.ints(), last, "round " + round);
            }
            assertTrue(device.reactor().stats().registrations() - registrations >= 8, "the reactor path was used");
        }
    }

    /** (4) 32 awaits abandoned mid-flight (16 timeouts, 16 interrupts), then 8 good rounds, all slots recycled. */
    @Test
    void abandonedAwaitsThenMoreRoundsWithCorrectData(CudaDevice device, CudaStream stream) throws Exception {
        ReactorStats before = device.reactor().stats();
        try (Kernels k = Kernels.load(device);
                DeviceBuffer buf = device.allocate(4L * 4096);
                PinnedBuffer host = device.allocateHost(4L * 4096)) {
            k.launchSpin(stream, 200_000_000L);
            List<Thread> quitters = new ArrayList<>();
            AtomicInteger gaveUp = new AtomicInteger();
            for (int i = 0; i < 32; i++) {
                boolean byTimeout = i % 2 == 0;
                quitters.add(Thread.ofVirtual().start(() -> {
                    try {
                        if (byTimeout) {
                            if (!stream.event().await(Duration.ofMillis(5))) {
                                gaveUp.incrementAndGet();
                            }
                        } else {
                            stream.event().await();
                        }
                    } catch (InterruptedException e) {
                        gaveUp.incrementAndGet();
                    }
                }));
            }
            // Each waiter armed a (shared) slot or joined one: coalescing is on by default.
            await().atMost(LONG).until(() -> {
                ReactorStats now = device.reactor().stats();
                return now.registrations() + now.coalesced() - before.registrations() - before.coalesced() >= 32;
            });
            for (int i = 1; i < 32; i += 2) {
                quitters.get(i).interrupt();
            }
            for (Thread q : quitters) {
                q.join();
            }
            assertEquals(32, gaveUp.get(), "all 32 gave up mid-flight");
            assertEquals(32, device.reactor().stats().abandoned() - before.abandoned());
            for (int round = 0; round < 8; round++) {
                stream.launch(k.fill, 4, 1024, buf, 1000 + round, 4096);
                stream.copy(buf, host, 4L * 4096);
                stream.await();
                assertAll(host.ints(), 1000 + round, "round " + round);
            }
        }
    }

    /** (5) 200 sequential awaits, with the reactor going idle (scanner parked) every 10th. */
    @Test
    void sequentialAwaitsWithIdleGaps(CudaDevice device, CudaStream stream) throws Exception {
        long parks = device.reactor().stats().scannerParks();
        try (Kernels k = Kernels.load(device);
                DeviceBuffer buf = device.allocate(4096);
                PinnedBuffer host = device.allocateHost(4096)) {
            Thread scanner = io.cudaloom.TestAccess.scannerThread(device);
            for (int i = 0; i < 200; i++) {
                if (i % 10 == 0) {
                    await().atMost(LONG).until(() -> io.cudaloom.TestAccess.scannerParkedIdle(scanner));
                }
                stream.launch(k.fill, 1, 1024, buf, i, 1024);
                stream.copy(buf, host, 4096);
                stream.await();
                assertEquals(i, host.ints().get(1023), "await " + i);
            }
            assertTrue(device.reactor().stats().scannerParks() - parks >= 20, device.reactor().stats().toString());
        }
    }

    /** (6) 1,000 virtual threads on 8 streams, each with its own buffer and value, all intact. */
    @Test
    void thousandVirtualThreadsOnEightStreamsKeepTheirOwnData(CudaDevice device) throws Exception {
        List<CudaStream> streams = new ArrayList<>();
        try (Kernels k = Kernels.load(device)) {
            for (int i = 0; i < 8; i++) {
                streams.add(device.newStream());
            }
            final int threads = 1000, words = 256, rounds = 3;
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> vts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                CudaStream s = streams.get(t % 8);
                vts.add(Thread.ofVirtual().start(() -> {
                    try (DeviceBuffer buf = device.allocate(4L * words);
                            PinnedBuffer host = device.allocateHost(4L * words)) {
                        for (int r = 0; r < rounds; r++) {
                            int value = id * 10 + r;
                            s.launch(k.fill, 1, words, buf, value, words);
                            s.copy(buf, host, 4L * words);
                            s.await();
                            assertAll(host.ints(), value, "thread " + id + " round " + r);
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }));
            }
            for (Thread vt : vts) {
                vt.join();
            }
            assertNull(failure.get(), () -> String.valueOf(failure.get()));
            System.out.println("1,000 virtual threads x 3 awaits: " + device.reactor().stats());
        } finally {
            streams.forEach(CudaStream::close); // the device is the class's: its streams are this test's to close
        }
    }

    /**
     * A faulting kernel wakes its waiters with the CUDA error within 100 ms of the fault becoming
     * observable through the driver (the driver itself reports an MMU fault ~150 ms late on the
     * H200), and a fresh context afterwards works. A sticky error poisons the whole process on this
     * driver (see FaultRecoveryProbe), so the fault runs in a child JVM ({@link FaultScenario}) and
     * the fresh context is this process's.
     */
    @Test
    void faultWakesWaitersWithTheCudaErrorAndAFreshContextWorks(CudaDevice device) throws Exception {
        assertFalse(device.isFaulted());
        GpuTestSupport.ChildResult child = GpuTestSupport.runChild(FaultScenario.class, java.util.Map.of(),
                Duration.ofSeconds(120));
        String output = child.output();
        System.out.println(output);
        java.util.Map<String, String> result = child.results();
        assertEquals(0, child.exitCode(), "fault scenario failed:\n" + output);
        assertEquals("0", result.get("hung"), "no waiter hangs");
        assertEquals("8", result.get("namedErrors"), "every waiter got CUDA_ERROR_ILLEGAL_ADDRESS");
        double wakeMs = Double.parseDouble(result.get("worstWakeMsAfterObservable"));
        assertTrue(wakeMs <= 100, "waiters woken " + wakeMs + " ms after the fault was observable");
        assertEquals("true", result.get("closed"), "the faulted device closes");

        try (CudaDevice fresh = CudaDevice.open(0, GpuTestSupport.reactorOnly());
                Kernels k = Kernels.load(fresh);
                DeviceBuffer buf = fresh.allocate(4096);
                PinnedBuffer host = fresh.allocateHost(4096)) {
            CudaStream s = fresh.newStream();
            s.launch(k.fill, 1, 1024, buf, 4242, 1024);
            s.copy(buf, host, 4096);
            s.await();
            assertAll(host.ints(), 4242, "fresh context after the fault");
        }
    }

    /** Awaits and launches from virtual threads that migrate between carriers keep the context current. */
    @Test
    void contextStaysCurrentForVirtualThreadsThatMigrate(CudaDevice device, CudaStream stream) throws Exception {
        try (Kernels k = Kernels.load(device)) {
            Set<String> carriers = ConcurrentHashMap.newKeySet();
            AtomicInteger migrations = new AtomicInteger();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> vts = new ArrayList<>();
            for (int t = 0; t < 64; t++) {
                int id = t;
                vts.add(Thread.ofVirtual().start(() -> {
                    try (DeviceBuffer buf = device.allocate(1024); PinnedBuffer host = device.allocateHost(1024)) {
                        for (int i = 0; i < 20; i++) {
                            String before = carrierOf(Thread.currentThread());
                            stream.launch(k.fill, 1, 256, buf, id * 100 + i, 256);
                            stream.copy(buf, host, 1024);
                            stream.await();
                            String after = carrierOf(Thread.currentThread());
                            carriers.add(after);
                            if (!before.equals(after)) {
                                migrations.incrementAndGet();
                            }
                            assertAll(host.ints(), id * 100 + i, "thread " + id + " iteration " + i);
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }));
            }
            for (Thread vt : vts) {
                vt.join();
            }
            assertNull(failure.get(), () -> String.valueOf(failure.get()));
            System.out.println("carriers seen: " + carriers.size() + ", migrations across an await: " + migrations.get());
            assertTrue(carriers.size() >= 2, "needs 2 or more carriers, saw " + carriers);
            assertTrue(migrations.get() > 0, "no virtual thread changed carrier across an await");
        }
    }

    private static String carrierOf(Thread vt) {
        String s = vt.toString(); // VirtualThread[#22]/runnable@ForkJoinPool-1-worker-3
        int at = s.indexOf('@');
        return at >= 0 ? s.substring(at + 1) : s;
    }

    /** Work submitted through a stream of a closed device is refused with ReactorClosedException. */
    @Test
    void launchOnAClosedDeviceIsRefused() {
        CudaDevice device = CudaDevice.open(0, ReactorConfig.defaults()); // its own: the test closes it
        Kernels k = Kernels.load(device);
        CudaStream stream = device.newStream();
        device.close();
        io.cudaloom.ReactorClosedException e = assertThrows(io.cudaloom.ReactorClosedException.class,
                () -> k.launchEmpty(stream));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }

    /** Pinned buffers are counted until closed (what the extension's check after each test reads). */
    @Test
    void pinnedBuffersAreCountedUntilClosedAndAFaultFreeDeviceSaysSo(CudaDevice device) {
        int before = device.liveResources().count(LiveResources.Kind.HOST_MEMORY);
        PinnedBuffer a = device.allocateHost(64);
        try (PinnedBuffer b = device.allocateHost(64)) {
            assertEquals(before + 2, device.liveResources().count(LiveResources.Kind.HOST_MEMORY));
            a.close();
            a.close(); // a second close neither frees nor counts again
            assertEquals(before + 1, device.liveResources().count(LiveResources.Kind.HOST_MEMORY));
            assertEquals(64, b.bytes());
        }
        assertEquals(before, device.liveResources().count(LiveResources.Kind.HOST_MEMORY));
        assertFalse(device.isFaulted());
        assertNull(device.fault());
    }

    /**
     * {@link DeviceBuffer#address()} is the buffer's device address: a kernel given
     * {@code address() + 1024} as its pointer writes exactly the 16 words from byte 1,024 on, and
     * the words around them keep the first fill's value.
     */
    @Test
    void aKernelWritingThroughTheAddressPlusAnOffsetLandsThere(CudaDevice device) throws Exception {
        int words = 1024;
        try (Kernels k = Kernels.load(device); CudaStream stream = device.newStream();
                DeviceBuffer buf = device.allocate(4L * words); PinnedBuffer host = device.allocateHost(4L * words)) {
            assertNotEquals(0L, buf.address(), "a device address");
            stream.launch(k.fill, 1, words, buf, 5, words);
            stream.launch(k.fill, 1, 16, buf.address() + 1024, 7, 16); // a Long: a pointer-sized argument
            stream.copy(buf, host, 4L * words);
            stream.await();
            IntBuffer ints = host.ints();
            for (int i = 0; i < words; i++) {
                assertEquals(i >= 256 && i < 272 ? 7 : 5, ints.get(i), "word " + i);
            }
        }
    }
}
