package io.cudaloom.kotlin

import io.cudaloom.GpuDevice
import io.cudaloom.ReactorConfig
import io.cudaloom.cuda.Cuda
import io.cudaloom.cuda.CudaDevice
import io.cudaloom.cuda.GpuTestSupport
import java.time.Duration
import java.util.concurrent.Executors
import java.util.concurrent.atomic.AtomicInteger
import kotlin.coroutines.CoroutineContext
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.joinAll
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.awaitility.Awaitility
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assumptions
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test

/** [awaitSuspending] on a real GPU: kernels, copies, 10,000 suspended coroutines, cancellation. */
@Tag("gpu")
class AwaitSuspendingGpuTest {

    /** Counts dispatches made from the reactor's scanner thread, then hands the block on. */
    private class ScannerCountingDispatcher(private val delegate: CoroutineDispatcher) : CoroutineDispatcher() {
        val fromScanner = AtomicInteger()

        override fun isDispatchNeeded(context: CoroutineContext): Boolean = delegate.isDispatchNeeded(context)

        override fun dispatch(context: CoroutineContext, block: Runnable) {
            if (Thread.currentThread().name.startsWith("cuda-loom-scanner-")) fromScanner.incrementAndGet()
            delegate.dispatch(context, block)
        }
    }

    /** CUDA device 0, or the test is skipped with the reason printed (these tests open devices of several configs). */
    private fun openOrSkip(config: ReactorConfig): CudaDevice {
        if (!Cuda.isAvailable()) {
            val reason = "no CUDA device: ${Cuda.unavailableReason()}"
            println("SKIPPED gpu test: $reason")
            Assumptions.abort<Unit>(reason)
        }
        return CudaDevice.open(0, config)
    }

    private fun assertNothingLeaked(device: GpuDevice) {
        Awaitility.await().atMost(Duration.ofSeconds(30)).untilAsserted {
            val s = device.reactor().stats()
            assertEquals(0L, s.armedNow(), "armed slots left: $s")
            assertEquals(s.capacity(), s.freeSlots(), "slots not back on the free list: $s")
            assertEquals(0, s.quarantined(), "quarantined slots left: $s")
        }
    }

    @Test
    fun openPicksTheGpuWhenJCudaAndADeviceAreThere() {
        openOrSkip(ReactorConfig.defaults()).close()
        val old = System.clearProperty(GpuDevice.BACKEND_PROPERTY)
        try {
            GpuDevice.open().use { device ->
                assertFalse(device.isSimulated, "auto opened ${device.name()}")
                assertTrue(device is CudaDevice)
            }
        } finally {
            if (old != null) System.setProperty(GpuDevice.BACKEND_PROPERTY, old)
        }
    }

    @Test
    fun aKernelAndACopyAreAwaitedBySuspending() {
        openOrSkip(GpuTestSupport.reactorOnly()).use { gpu ->
            gpu.loadKernels().use { k ->
                gpu.allocate(4096).use { buf ->
                    gpu.allocateHost(4096).use { host ->
                        val stream = gpu.newStream()
                        runBlocking {
                            withTimeout(30_000) {
                                k.launchSpin(stream, 5_000_000L) // 5 ms: the await surely suspends
                                stream.launch(k.fill, 1, 1024, buf, 42, 1024)
                                stream.copy(buf, host, 4096)
                                stream.awaitSuspending()
                            }
                        }
                        assertEquals(42, host.ints().get(0))
                        assertEquals(42, host.ints().get(1023))
                        stream.close()
                    }
                }
            }
        }
    }

    @Test
    fun tenThousandCoroutinesOnTwoThreadsResumeFromTheScanner() {
        val n = 10_000
        openOrSkip(ReactorConfig.builder().capacity(16_384).build()).use { gpu ->
            gpu.loadKernels().use { k ->
                // Each coroutine puts two entries on its stream (its launch and its flag write), and
                // a stream takes about 1,000 before a launch blocks behind the 2 s kernel. 40 streams:
                // 250 coroutines, 500 entries each. (On the H200, 8 streams (2,500 entries each) had
                // 9,469 finish before all had registered, and 16 streams (1,250 each) all 10,000.)
                val streams = List(40) { gpu.newStream() }
                streams.forEach { k.launchSpin(it, 2_000_000_000L) } // 2 s: everyone registers behind it
                val pool = Executors.newFixedThreadPool(2)
                val dispatcher = ScannerCountingDispatcher(pool.asCoroutineDispatcher())
                val finished = AtomicInteger()
                try {
                    runBlocking {
                        val jobs = (0 until n).map { i ->
                            launch(dispatcher) {
                                val stream = streams[i % streams.size]
                                k.launchEmpty(stream)
                                stream.event().awaitSuspending()
                                finished.incrementAndGet()
                            }
                        }
                        Awaitility.await().atMost(Duration.ofSeconds(30))
                            .until { gpu.reactor().stats().armedNow() == n.toLong() || finished.get() > 0 }
                        assertEquals(0, finished.get(), "all registered while the 2 s kernels ran")
                        withTimeout(60_000) { jobs.joinAll() }
                    }
                } finally {
                    pool.shutdownNow()
                }
                assertEquals(n, finished.get())
                assertEquals(n, dispatcher.fromScanner.get(), "each resumed straight from the scanner's delivery")
                val s = gpu.reactor().stats()
                assertEquals(0L, s.fallbacks(), s.toString())
                assertNothingLeaked(gpu)
                streams.forEach { it.close() }
            }
        }
    }

    @Test
    fun cancellingWithdrawsAndTheSlotComesBackWhenTheKernelEnds() {
        openOrSkip(ReactorConfig.defaults()).use { gpu ->
            gpu.loadKernels().use { k ->
                val stream = gpu.newStream()
                k.launchSpin(stream, 300_000_000L) // 300 ms
                runBlocking {
                    val job = launch(Dispatchers.Default) { stream.awaitSuspending() }
                    Awaitility.await().atMost(Duration.ofSeconds(10)).until { gpu.reactor().stats().armedNow() == 1L }
                    withTimeout(10_000) { job.cancelAndJoin() }
                    assertTrue(job.isCancelled)
                }
                assertEquals(1L, gpu.reactor().stats().abandoned())
                assertNothingLeaked(gpu) // once the kernel ends and the flag write lands
                runBlocking { withTimeout(30_000) { stream.awaitSuspending() } }
                stream.close()
            }
        }
    }
}
