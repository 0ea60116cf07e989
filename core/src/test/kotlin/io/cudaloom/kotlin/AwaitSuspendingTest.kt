package io.cudaloom.kotlin

import io.cudaloom.GpuDevice
import io.cudaloom.GpuFaultException
import io.cudaloom.ReactorClosedException
import io.cudaloom.ReactorConfig
import io.cudaloom.sim.SimulatedDevice
import io.cudaloom.sim.SimulatedStream
import java.time.Duration
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.CountDownLatch
import java.util.concurrent.CyclicBarrier
import java.util.concurrent.Executors
import java.util.concurrent.ThreadLocalRandom
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicReference
import kotlin.coroutines.CoroutineContext
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.async
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.joinAll
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import org.awaitility.Awaitility
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * [awaitSuspending]: completes, reports faults and closing as the blocking await does, withdraws
 * its registration when the coroutine is cancelled, and resumes coroutines straight from the
 * reactor's delivery without parking or creating a thread.
 */
class AwaitSuspendingTest {
    private val devices = mutableListOf<GpuDevice>()

    private fun track(device: SimulatedDevice): SimulatedDevice = device.also { devices += it }

    @AfterEach
    fun closeDevices() = devices.forEach(GpuDevice::close)

    /** Holds this stream busy until the returned latch opens (at most 30 s, so a failed test cannot hang it). */
    private fun SimulatedStream.gate(): CountDownLatch {
        val gate = CountDownLatch(1)
        launch { gate.await(30, TimeUnit.SECONDS) }
        return gate
    }

    /** Eventually: nothing armed, every slot back on the free list, nothing quarantined. */
    private fun assertNothingLeaked(device: GpuDevice) {
        Awaitility.await().atMost(Duration.ofSeconds(30)).untilAsserted {
            val s = device.reactor().stats()
            assertEquals(0L, s.armedNow(), "armed slots left: $s")
            assertEquals(s.capacity(), s.freeSlots(), "slots not back on the free list: $s")
            assertEquals(0, s.quarantined(), "quarantined slots left: $s")
        }
    }

    /** The thread's name without the " @coroutine#N" that kotlinx's debug mode (on under -ea) appends. */
    private fun threadName(): String = Thread.currentThread().name.substringBefore(" @coroutine#")

    private fun awaitArmed(device: GpuDevice, armed: Long) {
        Awaitility.await().atMost(Duration.ofSeconds(30)).until { device.reactor().stats().armedNow() == armed }
    }

    /** Counts the threads [dispatch] was called on, then hands the block to [delegate]. */
    private class RecordingDispatcher(private val delegate: CoroutineDispatcher) : CoroutineDispatcher() {
        val dispatchedFrom = ConcurrentHashMap<String, AtomicInteger>()
        val dispatchedFromVirtualThreads = AtomicInteger()

        override fun isDispatchNeeded(context: CoroutineContext): Boolean = delegate.isDispatchNeeded(context)

        override fun dispatch(context: CoroutineContext, block: Runnable) {
            val thread = Thread.currentThread()
            if (thread.isVirtual) dispatchedFromVirtualThreads.incrementAndGet()
            dispatchedFrom.computeIfAbsent(thread.name) { AtomicInteger() }.incrementAndGet()
            delegate.dispatch(context, block)
        }

        fun fromScanner(): Int =
            dispatchedFrom.filterKeys { it.startsWith("cuda-loom-scanner-") }.values.sumOf { it.get() }
    }

    @Test
    fun completesWhenTheWorkIsDone() {
        val device = track(SimulatedDevice.create())
        val stream = device.newStream()
        val gate = stream.gate()
        val data = FloatArray(16) { it.toFloat() }
        stream.launch { for (i in data.indices) data[i] *= 3f }
        val event = stream.event()
        val finished = AtomicBoolean()
        runBlocking {
            withTimeout(30_000) {
                val job = launch(Dispatchers.Default) {
                    event.awaitSuspending()
                    finished.set(true)
                }
                awaitArmed(device, 1)
                assertFalse(finished.get(), "not before the work is done")
                gate.countDown()
                job.join()
            }
        }
        assertTrue(finished.get())
        assertEquals(45f, data[15])
        assertTrue(event.isDone)
        val before = device.reactor().stats()
        runBlocking { event.awaitSuspending() } // done: returns without a reactor call
        runBlocking { stream.awaitSuspending() } // the stream is idle: an immediate completion
        val after = device.reactor().stats()
        assertEquals(before.registrations(), after.registrations())
        assertEquals(before.immediate() + 1, after.immediate())
        assertEquals(0L, after.abandoned())
        assertNothingLeaked(device)
    }

    @Test
    fun aFaultIsThrownAsGpuFaultException() {
        val device = track(SimulatedDevice.create())
        val stream = device.newStream()
        val gate = stream.gate()
        stream.injectFault("illegal address (injected)")
        val event = stream.event()
        val failure = runBlocking {
            val result = async(Dispatchers.Default) { runCatching { event.awaitSuspending() }.exceptionOrNull() }
            awaitArmed(device, 1)
            gate.countDown()
            withTimeout(30_000) { result.await() }
        }
        val fault = assertInstanceOf(GpuFaultException::class.java, failure)
        assertTrue(fault.message.orEmpty().contains("illegal address (injected)"), fault.message)
        assertFalse(event.isDone)
        // A later suspending await on the faulted stream fails the same way, at once.
        val late = runBlocking { runCatching { stream.awaitSuspending() }.exceptionOrNull() }
        assertInstanceOf(GpuFaultException::class.java, late)
    }

    @Test
    fun closingTheDeviceThrowsReactorClosedException() {
        val device = track(SimulatedDevice.create())
        val stream = device.newStream()
        val gate = stream.gate()
        try {
            val event = stream.event()
            val failure = runBlocking {
                val result = async(Dispatchers.Default) { runCatching { event.awaitSuspending() }.exceptionOrNull() }
                awaitArmed(device, 1)
                device.close() // the work is still running
                withTimeout(30_000) { result.await() }
            }
            val closed = assertInstanceOf(ReactorClosedException::class.java, failure)
            assertTrue(closed.message.orEmpty().contains(device.name()), closed.message)
            // And every later suspending await of an event taken before the close.
            val late = runBlocking { runCatching { event.awaitSuspending() }.exceptionOrNull() }
            assertInstanceOf(ReactorClosedException::class.java, late)
        } finally {
            gate.countDown()
        }
    }

    @Test
    fun anEventTakenBeforeTheStreamsCloseResumesOnceTheWorkIsDone() {
        val device = track(SimulatedDevice.create())
        val stream = device.newStream()
        val gate = stream.gate()
        val event = stream.event()
        stream.close()
        try {
            runBlocking {
                // Undispatched: it runs here until it suspends, so it has subscribed when async returns.
                val result = async(Dispatchers.Default, CoroutineStart.UNDISPATCHED) { event.awaitSuspending() }
                assertFalse(result.isCompleted, "the work is held")
                assertEquals(1L, device.reactor().stats().armedNow(), "the close's own registration, and no other")
                gate.countDown()
                withTimeout(30_000) { result.await() }
            }
            assertTrue(event.isDone)
            assertEquals(1L, device.reactor().stats().registrations(), "served by the close's registration")
            runBlocking { event.awaitSuspending() } // done: returns at once
            // No new event on the closed stream, so no suspending await of the stream itself.
            val e = assertThrows(IllegalStateException::class.java) { runBlocking { stream.awaitSuspending() } }
            assertEquals("stream $stream is closed", e.message)
            assertNothingLeaked(device)
        } finally {
            gate.countDown()
        }
    }

    @Test
    fun aFaultAfterTheStreamsCloseFailsTheSuspendedAwait() {
        val device = track(SimulatedDevice.create())
        val stream = device.newStream()
        val gate = stream.gate()
        stream.injectFault("illegal address after close (injected)")
        val event = stream.event()
        stream.close()
        try {
            val failure = runBlocking {
                val result = async(Dispatchers.Default, CoroutineStart.UNDISPATCHED) {
                    runCatching { event.awaitSuspending() }.exceptionOrNull()
                }
                assertFalse(result.isCompleted, "the work is held")
                gate.countDown()
                withTimeout(30_000) { result.await() }
            }
            val fault = assertInstanceOf(GpuFaultException::class.java, failure)
            assertTrue(fault.message.orEmpty().contains("illegal address after close"), fault.message)
        } finally {
            gate.countDown()
        }
    }

    @Test
    fun cancellingTheCoroutineWithdrawsTheRegistration() {
        val device = track(SimulatedDevice.create())
        val stream = device.newStream()
        val gate = stream.gate()
        val event = stream.event()
        val resumedNormally = AtomicBoolean()
        val cancellation = AtomicReference<Throwable>()
        runBlocking {
            val job = launch(Dispatchers.Default) {
                try {
                    event.awaitSuspending()
                    resumedNormally.set(true)
                } catch (e: CancellationException) {
                    cancellation.set(e)
                    throw e
                }
            }
            awaitArmed(device, 1)
            withTimeout(30_000) { job.cancelAndJoin() }
            assertTrue(job.isCancelled)
        }
        assertInstanceOf(CancellationException::class.java, cancellation.get())
        val withdrawn = device.reactor().stats()
        assertEquals(1L, withdrawn.abandoned(), "the cancellation withdrew the registration: $withdrawn")
        assertEquals(1L, withdrawn.armedNow(), "the device write is still in flight: the slot stays armed")

        gate.countDown()
        assertNothingLeaked(device) // the withdrawn slot came back once the write landed
        val after = device.reactor().stats()
        assertEquals(withdrawn.completions(), after.completions(), "nothing was delivered to the withdrawn registration")
        assertFalse(resumedNormally.get())
        assertTrue(event.isDone, "its work is done (isDone reports the work), though nothing was delivered for it")
        runBlocking { withTimeout(30_000) { stream.awaitSuspending() } } // the stream and reactor go on
        assertEquals(1L, device.reactor().stats().abandoned())
    }

    @Test
    fun withTimeoutWithdrawsLikeATimedOutAwait() {
        val device = track(SimulatedDevice.create())
        val stream = device.newStream()
        val gate = stream.gate()
        val event = stream.event()
        val result = runBlocking { withTimeoutOrNull(20) { event.awaitSuspending(); "done" } }
        assertNull(result, "timed out while the work was held")
        assertEquals(1L, device.reactor().stats().abandoned())
        gate.countDown()
        assertNothingLeaked(device)
    }

    /**
     * Cancellation racing delivery: every registration has exactly one outcome, delivered
     * (counted in completions) or withdrawn (counted in abandoned), and a coroutine resumes
     * normally only if it was delivered.
     */
    @Test
    fun cancellationRacingDeliveryHasExactlyOneOutcomePerRegistration() {
        val device = track(SimulatedDevice.create())
        val stream = device.newStream()
        val n = 200
        val normal = AtomicInteger()
        val cancelled = AtomicInteger()
        val before = device.reactor().stats()
        val start = CyclicBarrier(2)
        Executors.newSingleThreadExecutor().use { opener ->
            runBlocking {
                repeat(n) { i ->
                    val gate = stream.gate()
                    val registrations = device.reactor().stats().registrations()
                    val job = launch(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                        try {
                            stream.event().awaitSuspending()
                            normal.incrementAndGet()
                        } catch (e: CancellationException) {
                            cancelled.incrementAndGet()
                            throw e
                        }
                    }
                    assertEquals(registrations + 1, device.reactor().stats().registrations(), "iteration $i registered")
                    opener.execute {
                        start.await()
                        gate.countDown()
                    }
                    start.await()
                    repeat(ThreadLocalRandom.current().nextInt(2_000)) { Thread.onSpinWait() } // jitter
                    job.cancel()
                    withTimeout(30_000) { job.join() }
                }
            }
        }
        assertNothingLeaked(device)
        val after = device.reactor().stats()
        val delivered = after.completions() - before.completions()
        val withdrawn = after.abandoned() - before.abandoned()
        assertEquals(n, normal.get() + cancelled.get())
        assertEquals(n.toLong(), delivered + withdrawn, "one outcome per registration: $after")
        assertTrue(withdrawn <= cancelled.get(), "only cancelled coroutines withdrew: $withdrawn of ${cancelled.get()}")
        assertTrue(normal.get() <= delivered, "a coroutine resumed normally only when delivered")
        println("AwaitSuspendingTest race: $withdrawn withdrawn, $delivered delivered, ${normal.get()} resumed normally")
    }

    /**
     * 10,000 coroutines suspended at once on a dispatcher of two threads, while the work is held:
     * had any await blocked its thread, at most two could be waiting. Each is resumed straight
     * from the scanner's delivery (dispatch called on the scanner thread, never on a virtual thread).
     */
    @Test
    fun tenThousandSuspendedAwaitsOnTwoThreadsParkNoThread() {
        val n = 10_000
        // 250 launches and 250 flag writes per stream: within admission and the queue (combining counts
        // both against the room, hence the limit: no tracker, no armed slot beyond the awaits')
        val device = track(SimulatedDevice.create(ReactorConfig.builder().capacity(16_384).admissionLimit(896).build()))
        val streams = List(40) { device.newStream() }
        val gates = streams.map { it.gate() }
        val pool = Executors.newFixedThreadPool(2) { r -> Thread(r, "two-thread-pool").apply { isDaemon = true } }
        val dispatcher = RecordingDispatcher(pool.asCoroutineDispatcher())
        val resumedOn = ConcurrentHashMap<String, AtomicInteger>()
        val verified = AtomicInteger()
        try {
            runBlocking {
                val jobs = (0 until n).map { i ->
                    launch(dispatcher) {
                        val stream = streams[i % streams.size]
                        val v = FloatArray(4) { (i + it).toFloat() }
                        stream.launch { for (k in v.indices) v[k] *= 2f }
                        stream.event().awaitSuspending()
                        resumedOn.computeIfAbsent(threadName()) { AtomicInteger() }.incrementAndGet()
                        if (v.withIndex().all { (k, x) -> x == 2f * (i + k) }) verified.incrementAndGet()
                    }
                }
                awaitArmed(device, n.toLong())
                val waiting = device.reactor().stats()
                assertEquals(n.toLong(), waiting.registrations(), "each armed a slot: $waiting")
                assertEquals(0L, waiting.fallbacks(), waiting.toString())
                assertEquals(0, verified.get(), "all $n are waiting on GPU work")
                // Both threads are free while 10,000 awaits are pending: each takes a task that meets
                // this thread at a barrier, which it can only do once it finished every earlier task
                // (the pool's queue is FIFO), so every coroutine has suspended by then.
                val bothFree = CyclicBarrier(3)
                repeat(2) { pool.execute { bothFree.await(30, TimeUnit.SECONDS) } }
                bothFree.await(30, TimeUnit.SECONDS)
                val free = withTimeout(30_000) { withContext(dispatcher) { threadName() } }
                assertEquals("two-thread-pool", free)
                val dispatchesBefore = dispatcher.fromScanner()

                gates.forEach(CountDownLatch::countDown)
                withTimeout(60_000) { jobs.joinAll() }
                assertEquals(n, verified.get())
                assertEquals(setOf("two-thread-pool"), resumedOn.keys, "every coroutine resumed on its dispatcher")
                assertEquals(n, dispatcher.fromScanner() - dispatchesBefore,
                    "each resumed straight from the scanner's delivery: ${dispatcher.dispatchedFrom}")
                assertEquals(0, dispatcher.dispatchedFromVirtualThreads.get(), "no virtual thread in between")
            }
        } finally {
            gates.forEach(CountDownLatch::countDown)
            pool.shutdownNow()
        }
        val s = device.reactor().stats()
        assertEquals(n.toLong(), s.completions() - s.immediate(), s.toString())
        assertEquals(0L, s.abandoned())
        assertNothingLeaked(device)
    }

    /**
     * An Unconfined coroutine would run its code on the thread that resumes it: the scanner, were
     * it resumed from the delivery. It is resumed from a Dispatchers.IO thread instead.
     */
    @Test
    fun anUnconfinedCoroutineNeverRunsOnTheScanner() {
        val device = track(SimulatedDevice.create())
        val stream = device.newStream()
        val gate = stream.gate()
        val resumedOn = AtomicReference<Thread>()
        runBlocking {
            val job = launch(Dispatchers.Unconfined) {
                stream.awaitSuspending()
                resumedOn.set(Thread.currentThread())
            }
            awaitArmed(device, 1)
            gate.countDown()
            withTimeout(30_000) { job.join() }
        }
        val thread = resumedOn.get()
        assertFalse(thread.name.startsWith("cuda-loom-scanner-"), "resumed on ${thread.name}")
        assertTrue(thread.name.startsWith("DefaultDispatcher-worker-"), "resumed on ${thread.name}")
        assertFalse(thread.isVirtual)
        assertNothingLeaked(device)
    }
}
