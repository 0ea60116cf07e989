package io.cudaloom.demo

import io.cudaloom.CompletionReactor
import io.cudaloom.GpuDevice
import io.cudaloom.GpuEvent
import io.cudaloom.GpuFaultException
import io.cudaloom.GpuStream
import io.cudaloom.ReactorClosedException
import io.cudaloom.ReactorConfig
import io.cudaloom.ReactorStats
import io.cudaloom.kotlin.awaitSuspending
import io.cudaloom.sim.SimulatedDevice
import io.cudaloom.sim.SimulatedStream
import java.time.Duration
import java.util.concurrent.Callable
import java.util.concurrent.CompletableFuture
import java.util.concurrent.CountDownLatch
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicReference
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.future.await
import kotlinx.coroutines.joinAll
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.yield
import org.awaitility.Awaitility
import org.jspecify.annotations.NullMarked
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The library called from Kotlin: `use {}` on the AutoCloseable types, blocking `await()` on
 * virtual threads, coroutines suspending on `awaitSuspending()` (served by the same reactor and
 * slots, parking no thread; `toCompletableFuture().await()` still works, for comparison), and the
 * fault, close and bad-input rules seen from Kotlin.
 */
class KotlinCallersTest {

    /** Runs [block] on a new virtual thread and returns its result (or rethrows its failure). */
    private fun <T> onVirtualThread(block: () -> T): T {
        val result = AtomicReference<Result<T>>()
        val thread = Thread.ofVirtual().start { result.set(runCatching(block)) }
        assertTrue(thread.join(Duration.ofSeconds(30)), "virtual thread finished")
        return result.get().getOrThrow()
    }

    /** Holds [this] stream busy until [gate] opens (at most 30 s, so a failed test cannot hang it). */
    private fun SimulatedStream.holdUntil(gate: CountDownLatch) = launch { gate.await(30, TimeUnit.SECONDS) }

    @Test
    fun devicesAndStreamsCloseWithUse() {
        val device = SimulatedDevice.create()
        device.use { d ->
            d.newStream().use { stream ->
                val data = FloatArray(64) { it.toFloat() }
                stream.launch { for (i in data.indices) data[i] *= 3f }
                stream.event().await()
                assertEquals(189f, data[63])
                assertFalse(stream.isClosed)
            }
        }
        assertTrue(device.reactor().isClosed, "use {} closed the device and its reactor")

        // surefire sets cudaloom.device=sim, so open() never picks a GPU in CI
        val opened = GpuDevice.open().use { d ->
            assertTrue(d.isSimulated)
            d.newStream().use { it.await() }
            d
        }
        assertTrue(opened.reactor().isClosed)
    }

    @Test
    fun virtualThreadsAwaitInPlainBlockingStyle() {
        SimulatedDevice.create().use { device ->
            val streams = List(4) { device.newStream() }
            val checked = Executors.newVirtualThreadPerTaskExecutor().use { executor ->
                (0 until 1_000).map { i ->
                    executor.submit(Callable {
                        val stream = streams[i % streams.size]
                        val v = FloatArray(32) { (i + it).toFloat() }
                        stream.launch { for (k in v.indices) v[k] *= 2f }
                        stream.launchKernel(Duration.ofNanos(20_000))
                        stream.event().await()                       // parks this virtual thread only
                        Thread.currentThread().isVirtual && v.withIndex().all { (k, x) -> x == 2f * (i + k) }
                    })
                }.map { it.get() }
            }
            assertEquals(1_000, checked.count { it })
            streams.forEach(GpuStream::close)
        }
    }

    @Test
    fun timedAwaitTakesADuration() {
        SimulatedDevice.create().use { device ->
            device.newStream().use { stream ->
                val gate = CountDownLatch(1)
                stream.holdUntil(gate)
                val event = stream.event()
                assertFalse(onVirtualThread { event.await(Duration.ofMillis(20)) }, "times out while the work runs")
                assertFalse(event.isDone)
                gate.countDown()
                assertTrue(onVirtualThread { event.await(Duration.ofSeconds(30)) })
                assertTrue(event.isDone)
                assertTrue(event.await(0, TimeUnit.SECONDS), "a completed event returns at once")
                assertEquals(0L, device.reactor().stats().faults())
            }
        }
    }

    @Test
    fun coroutinesSuspendOnTheSameReactorWithoutParkingAThread() {
        SimulatedDevice.create().use { device ->
            val streams = List(4) { device.newStream() }
            val gate = CountDownLatch(1)
            streams.forEach { it.holdUntil(gate) }
            val before = device.reactor().stats()
            val suspended = AtomicInteger()
            val finished = AtomicInteger()
            // runBlocking has exactly one thread: if any await blocked it, the gate below would
            // never open and withTimeout would fail the test.
            runBlocking {
                withTimeout(30_000) {
                    val jobs = (0 until 200).map { i ->
                        launch {
                            val stream = streams[i % streams.size]
                            val data = FloatArray(8) { it.toFloat() }
                            stream.launch { for (k in data.indices) data[k] *= 5f }
                            val event: GpuEvent = stream.event()
                            suspended.incrementAndGet()
                            event.awaitSuspending()                    // suspends; no thread parks
                            assertEquals(35f, data[7])
                            finished.incrementAndGet()
                        }
                    }
                    while (suspended.get() < 200) yield()
                    assertEquals(0, finished.get(), "all 200 are waiting on GPU work")
                    val waiting = device.reactor().stats()
                    assertEquals(200L, waiting.registrations() - before.registrations(), "each armed a slot of the reactor")
                    assertEquals(200L, waiting.armedNow())
                    assertEquals(0L, waiting.fallbacks() - before.fallbacks())
                    gate.countDown()
                    jobs.joinAll()
                }
            }
            assertEquals(200, finished.get())
            streams.forEach(GpuStream::close)
        }
    }

    @Test
    fun theFutureBasedAwaitServesCoroutinesToo() {
        // The earlier way, kept for comparison: a CompletableFuture per await, whose cancellation
        // also withdraws the registration. awaitSuspending() needs no future.
        SimulatedDevice.create().use { device ->
            device.newStream().use { stream ->
                val gate = CountDownLatch(1)
                stream.holdUntil(gate)
                val data = FloatArray(4) { it.toFloat() }
                stream.launch { for (k in data.indices) data[k] += 1f }
                val event = stream.event()
                runBlocking {
                    val viaFuture = async { event.toCompletableFuture().await(); data.sum() }
                    val viaSubscribe = async { event.awaitSuspending(); data.sum() }
                    yield()
                    assertFalse(viaFuture.isCompleted || viaSubscribe.isCompleted, "both wait for the work")
                    gate.countDown()
                    assertEquals(10f, withTimeout(30_000) { viaFuture.await() })
                    assertEquals(10f, withTimeout(30_000) { viaSubscribe.await() })
                }
            }
        }
    }

    @Test
    fun coroutinesOnAVirtualThreadDispatcherMayAlsoAwaitBlocking() {
        SimulatedDevice.create().use { device ->
            device.newStream().use { stream ->
                Executors.newVirtualThreadPerTaskExecutor().asCoroutineDispatcher().use { virtualThreads ->
                    val sums = runBlocking {
                        (1..50).map { i ->
                            async(virtualThreads) {
                                val v = FloatArray(4) { i.toFloat() }
                                stream.launch { for (k in v.indices) v[k] *= 2f }
                                stream.event().await()  // blocking call, but it parks a virtual thread
                                v.sum()
                            }
                        }.map { it.await() }
                    }
                    assertEquals((1..50).map { 8f * it }, sums)
                }
            }
        }
    }

    @Test
    fun onCompleteRunsTheCallbackOnTheGivenExecutor() {
        SimulatedDevice.create().use { device ->
            device.newStream().use { stream ->
                val gate = CountDownLatch(1)
                stream.holdUntil(gate)
                val done = CountDownLatch(1)
                val ranOn = AtomicReference<Thread>()
                val failure = AtomicReference<RuntimeException>()
                Executors.newVirtualThreadPerTaskExecutor().use { executor ->
                    stream.event().onComplete(executor, {
                        ranOn.set(Thread.currentThread())
                        done.countDown()
                    }, { e -> failure.set(e) })
                    assertFalse(done.await(20, TimeUnit.MILLISECONDS), "not before the work is done")
                    gate.countDown()
                    assertTrue(done.await(30, TimeUnit.SECONDS))
                }
                assertTrue(ranOn.get().isVirtual)
                assertEquals(null, failure.get())
            }
        }
    }

    @Test
    fun aFaultReachesBlockingAndSuspendingCallers() {
        SimulatedDevice.create().use { device ->
            device.newStream().use { stream ->
                val gate = CountDownLatch(1)
                stream.holdUntil(gate)
                stream.injectFault("illegal address (injected)")
                val event = stream.event()
                val blockingFailure = AtomicReference<Throwable>()
                val waiter = Thread.ofVirtual().start {
                    try {
                        event.await()
                    } catch (e: Throwable) {
                        blockingFailure.set(e)
                    }
                }
                val suspending = CoroutineScope(Dispatchers.Default).async {
                    runCatching { event.awaitSuspending() }.exceptionOrNull()
                }
                Awaitility.await().atMost(Duration.ofSeconds(10)).until { waiter.state == Thread.State.WAITING || waiter.state == Thread.State.TIMED_WAITING }
                Awaitility.await().atMost(Duration.ofSeconds(10)).until { device.reactor().stats().armedNow() == 2L }
                gate.countDown()                                    // now the fault happens

                assertTrue(waiter.join(Duration.ofSeconds(30)))
                val blocking = assertInstanceOf(GpuFaultException::class.java, blockingFailure.get())
                assertTrue(blocking.message.orEmpty().contains("illegal address (injected)"), blocking.message)

                assertInstanceOf(GpuFaultException::class.java, runBlocking { withTimeout(30_000) { suspending.await() } })

                // Later awaits and launches see the same fault.
                assertThrows(GpuFaultException::class.java) { event.await() }
                assertThrows(GpuFaultException::class.java) { stream.event().await() }
                val late = runBlocking { runCatching { stream.event().awaitSuspending() }.exceptionOrNull() }
                assertInstanceOf(GpuFaultException::class.java, late)
                assertThrows(GpuFaultException::class.java) { stream.launchKernel(Duration.ZERO) }
            }
        }
    }

    @Test
    fun closeWakesEveryWaiterWithReactorClosedException() {
        val device = SimulatedDevice.create()
        val stream = device.newStream()
        val gate = CountDownLatch(1)
        try {
            stream.holdUntil(gate)
            val event = stream.event()
            val blockingFailure = AtomicReference<Throwable>()
            val waiter = Thread.ofVirtual().start {
                try {
                    event.await()
                } catch (e: Throwable) {
                    blockingFailure.set(e)
                }
            }
            val suspending = CoroutineScope(Dispatchers.Default).async {
                runCatching { event.awaitSuspending() }.exceptionOrNull()
            }
            Awaitility.await().atMost(Duration.ofSeconds(10)).until { waiter.state == Thread.State.WAITING || waiter.state == Thread.State.TIMED_WAITING }
            Awaitility.await().atMost(Duration.ofSeconds(10)).until { device.reactor().stats().armedNow() == 2L }

            device.close()                                          // the work is still running

            assertTrue(waiter.join(Duration.ofSeconds(30)))
            assertInstanceOf(ReactorClosedException::class.java, blockingFailure.get())
            assertInstanceOf(ReactorClosedException::class.java, runBlocking { withTimeout(30_000) { suspending.await() } })

            // And every later call, blocking or not.
            assertThrows(ReactorClosedException::class.java) { event.await() }
            assertThrows(ReactorClosedException::class.java) { stream.event() }
            val late = runBlocking { runCatching { event.awaitSuspending() }.exceptionOrNull() }
            assertInstanceOf(ReactorClosedException::class.java, late)
        } finally {
            gate.countDown()
            device.close()
        }
    }

    @Test
    fun badInputIsRejectedAtOnce() {
        SimulatedDevice.create().use { device ->
            device.newStream().use { stream ->
                val event = stream.event()
                // A negative timeout is no bad input: it polls (java.util.concurrent's convention).
                assertTrue(event.await(Duration.ofMillis(-1)), "nothing submitted: done")
                assertTrue(event.await(-1, TimeUnit.MILLISECONDS))
                assertThrows(IllegalArgumentException::class.java) { stream.launchKernel(Duration.ofMillis(-1)) }
                assertThrows(IllegalArgumentException::class.java) { ReactorConfig.builder().capacity(0) }
            }
        }
    }

    @Test
    fun theApiHasNonNullTypesWithoutBangBang() {
        // Compiles without `!!` or `?.`: what Kotlin callers write.
        SimulatedDevice.create().use { device ->
            val name: String = device.name()
            val reactor: CompletionReactor = device.reactor()
            val stream: GpuStream = device.newStream()
            val event: GpuEvent = stream.event()
            val future: CompletableFuture<Void?> = event.toCompletableFuture()
            runBlocking { future.await() }
            val stats: ReactorStats = reactor.stats()
            assertTrue(name.startsWith("simulated device"))
            assertEquals(stream, event.stream())
            assertTrue(stats.capacity() > 0 && stats.completions() >= 1)
            assertEquals(device, reactor.device())
        }
    }

    @Test
    fun thePublicPackagesAreNullMarked() {
        for (type in listOf(GpuDevice::class.java, SimulatedDevice::class.java)) {
            assertNotNull(type.`package`.getAnnotation(NullMarked::class.java), "${type.`package`.name} is @NullMarked")
        }
    }

    @Test
    fun noPublicNameNeedsBackticksInKotlin() {
        val hardKeywords = setOf(
            "as", "break", "class", "continue", "do", "else", "false", "for", "fun", "if", "in",
            "interface", "is", "null", "object", "package", "return", "super", "this", "throw", "true",
            "try", "typealias", "typeof", "val", "var", "when", "while",
        )
        val api = listOf(
            GpuDevice::class.java, GpuStream::class.java, GpuEvent::class.java, CompletionReactor::class.java,
            ReactorConfig::class.java, ReactorConfig.Builder::class.java, ReactorStats::class.java,
            GpuFaultException::class.java, ReactorClosedException::class.java,
            io.cudaloom.CompletionStrategy::class.java, io.cudaloom.spi.StreamState::class.java,
            SimulatedDevice::class.java, SimulatedStream::class.java,
        )
        val clashes = api.flatMap { type ->
            (type.methods.map { it.name } + type.fields.map { it.name })
                .filter { it in hardKeywords }
                .map { "${type.simpleName}.$it" }
        }
        assertEquals(emptyList<String>(), clashes)
        assertTrue(api.filter { AutoCloseable::class.java.isAssignableFrom(it) }
            .containsAll(listOf(GpuDevice::class.java, GpuStream::class.java)))
    }
}

// A variant of the coroutine example of docs/USER-GUIDE.md, "Kotlin" (.ci/consumer-check runs the
// page's own, as written)
suspend fun scaleOnGpu(device: GpuDevice) = device.newStream().use { stream ->
    // ... launch work on the stream ...
    stream.event().awaitSuspending() // suspends: no thread blocks; cancelling the coroutine withdraws the wait
}

/**
 * Variants of the Kotlin examples of docs/USER-GUIDE.md, run in the build (.ci/consumer-check
 * compiles and runs the page's own blocks).
 */
class ReadmeKotlinExampleTest {
    @Test
    fun useItExample() {
        GpuDevice.open().use { device ->   // surefire sets cudaloom.device=sim
            runBlocking { withTimeout(30_000) { scaleOnGpu(device) } }
            assertEquals(1L, device.reactor().stats().immediate(), "the new stream's event was done at once")
        }
    }

    @Test
    fun kotlinExample() {
        var blockingDone = false
        var suspendingDone = false
        // --- docs/USER-GUIDE.md: Kotlin example ---
        SimulatedDevice.create().use { device ->
            device.newStream().use { stream ->
                // Blocking style on a virtual thread: await() parks it, nothing else.
                Thread.ofVirtual().start {
                    stream.launchKernel(Duration.ofMillis(1))
                    stream.event().await()                        // or await(Duration.ofSeconds(1)): Boolean
                    blockingDone = true
                }.join()
                // Coroutines: suspend on the same reactor and slots, parking no thread at all.
                runBlocking {
                    stream.launchKernel(Duration.ofMillis(1))
                    stream.event().awaitSuspending()              // import io.cudaloom.kotlin.awaitSuspending
                    suspendingDone = true
                }
            }
        }
        // --- end ---
        assertTrue(blockingDone && suspendingDone)
    }
}
