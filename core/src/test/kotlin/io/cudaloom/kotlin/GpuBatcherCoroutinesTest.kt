package io.cudaloom.kotlin

import io.cudaloom.DeviceMemory
import io.cudaloom.GpuBatcher
import io.cudaloom.GpuKernel
import io.cudaloom.GpuStream
import io.cudaloom.sim.SimulatedDevice
import java.nio.ByteBuffer
import java.time.Duration
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** [callSuspending]: a batched call from coroutines, and a cancelled one leaves its batch. */
class GpuBatcherCoroutinesTest {
    /** x -> 2x; an input above 1e9 makes its batch take 300 ms. */
    private class Double : GpuBatcher.Step<Float, Float> {
        @Volatile var slow = false

        override fun pack(input: Float, slot: ByteBuffer) {
            if (input > 1e9f) slow = true
            slot.putFloat(input)
        }

        override fun launch(stream: GpuStream, `in`: DeviceMemory, out: DeviceMemory, count: Int) {
            if (slow) {
                slow = false
                stream.launchKernel(Duration.ofMillis(300))
            }
            stream.launch(GpuKernel.SCALE_F32, (count + 255) / 256, 256, `in`, 2f, count)
        }

        override fun unpack(slot: ByteBuffer): Float = slot.getFloat()
    }

    @Test
    fun aThousandCoroutinesShareFewBatches() {
        SimulatedDevice.create().use { d ->
            GpuBatcher.builder(d, Double()).inPlace(4).maxBatch(128).build().use { b ->
                val out = runBlocking(Dispatchers.Default) {
                    (0 until 1000).map { i -> async { b.callSuspending(i.toFloat()) } }.awaitAll()
                }
                out.forEachIndexed { i, y -> assertEquals(2f * i, y, "call $i") }
                assertTrue(b.stats().batches() < 500, "batched: ${b.stats()}")
            }
        }
    }

    @Test
    fun aCancelledCallLeavesItsBatch() {
        SimulatedDevice.create().use { d ->
            GpuBatcher.builder(d, Double()).inPlace(4).maxBatch(64).streams(1).maxDelay(Duration.ofSeconds(5))
                .build().use { b ->
                    val slow = b.submit(2e9f) // in flight for 300 ms: the next call waits for the next batch
                    val result = runBlocking { withTimeoutOrNull(20) { b.callSuspending(1f) } }
                    assertNull(result, "cancelled by the timeout")
                    assertEquals(4e9f, slow.get())
                    assertEquals(1, b.stats().left(), "it left while waiting for a batch")
                }
        }
    }
}
