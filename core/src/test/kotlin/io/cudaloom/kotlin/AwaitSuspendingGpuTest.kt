package io.cudaloom.kotlin

import io.cudaloom.cuda.Kernels
import io.cudaloom.GpuDevice
import io.cudaloom.ReactorConfig
import io.cudaloom.cuda.Cuda
import io.cudaloom.cuda.CudaDevice
import io.cudaloom.cuda.GpuTestSupport
import java.time.Duration
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.cancelAndJoin
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

/** [awaitSuspending] on a real GPU: kernels, copies, 10,000 suspended coroutines (in a child JVM), cancellation. */
@Tag("gpu")
class AwaitSuspendingGpuTest {

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
            Kernels.load(gpu).use { k ->
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

    /**
     * 10,000 coroutines on two threads suspend at once and each is resumed straight from the
     * scanner's delivery. In a child JVM ([TenThousandCoroutinesScenario], which says why) with
     * `CUDA_DEVICE_MAX_CONNECTIONS=32`: the earlier version counted suspended waiters with
     * `armedNow` (slots, which waiters may share) and queued 20,000 entries on 40 streams that
     * shared the default 8 hardware queues, more than those hold behind a running kernel, so its
     * two threads blocked in the driver and it failed on the H200 ("all registered while the 2 s
     * kernels ran ==> expected: <0> but was: <10000>").
     */
    @Test
    fun tenThousandCoroutinesOnTwoThreadsResumeFromTheScanner() {
        openOrSkip(ReactorConfig.defaults()).close()
        val child = GpuTestSupport.runChild(TenThousandCoroutinesScenario::class.java,
            mapOf("CUDA_DEVICE_MAX_CONNECTIONS" to "32"), Duration.ofSeconds(180))
        println(child.output())
        assertEquals("32", child.get("connections"), "the child's environment")
        assertEquals("10000", child.get("entered"), "every coroutine reached awaitSuspending while the kernels ran")
        assertEquals("true", child.get("dispatcherHeld"), "both dispatcher threads free: none blocked in the driver")
        assertEquals("10000", child.get("suspendedAtOnce"), "all 10,000 suspended at once, on two threads")
        assertEquals("true", child.get("kernelsStillRunning"), "checked before the 5 s kernels ended")
        assertEquals("10000", child.get("finished"))
        assertEquals("10000", child.get("fromScanner"), "each resumed straight from the scanner's delivery")
        assertEquals("0", child.get("fallbacks"))
        assertEquals("true", child.get("slotsBack"), "every slot back, none quarantined")
        assertEquals(0, child.exitCode(), child.output())
    }

    @Test
    fun cancellingWithdrawsAndTheSlotComesBackWhenTheKernelEnds() {
        openOrSkip(ReactorConfig.defaults()).use { gpu ->
            Kernels.load(gpu).use { k ->
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
