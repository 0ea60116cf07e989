package io.cudaloom.kotlin

import io.cudaloom.cuda.Kernels
import io.cudaloom.ReactorConfig
import io.cudaloom.cuda.CudaDevice
import java.time.Duration
import java.util.concurrent.CyclicBarrier
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import kotlin.coroutines.CoroutineContext
import kotlin.system.exitProcess
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.joinAll
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.awaitility.Awaitility

/**
 * The child JVM of [AwaitSuspendingGpuTest.tenThousandCoroutinesOnTwoThreadsResumeFromTheScanner],
 * started with `CUDA_DEVICE_MAX_CONNECTIONS=32` (read when the context is created, so it cannot be
 * set in the test's own JVM). 10,000 coroutines on a 2-thread dispatcher await the work already
 * queued on 32 streams (a 5 s spin kernel each); prints `RESULT key=value` lines; exits 0 when
 * all of them were suspended at once, each was resumed straight from the scanner's delivery, and
 * every slot came back.
 *
 * The premise, checked rather than assumed:
 * - "all suspended" is counted by the coroutines themselves, not by `armedNow`: armed slots equal
 *   registered waiters only while each waiter has a slot of its own (not when waiters share one,
 *   as coalesced waits and shared flag writes do). Once every coroutine has reached
 *   `awaitSuspending` (`entered == n`), two tasks that hold both dispatcher threads at once prove
 *   that no coroutine is running: all `n` are suspended, each registered (a registration is made
 *   before `suspendCancellableCoroutine` suspends). Nothing had been resumed yet if the scanner
 *   had dispatched nothing then.
 * - each suspended coroutine has queued one entry (its flag write) behind its stream's kernel.
 *   Streams do not each get a hardware queue: the device has `CUDA_DEVICE_MAX_CONNECTIONS` of
 *   them per context (8 by default), streams beyond that share them, and a queue takes about 1,020
 *   pending entries before the thread that enqueues blocks inside the driver until the kernels
 *   end. So 40 streams gave no more room than 8: 8 x 1,020 entries cannot hold 10,000 launches and
 *   10,000 flag writes, and the two dispatcher threads blocked in the driver until the 2 s kernels
 *   ended (the failure seen on the H200). Here: no launch per coroutine, 32 connections and 32
 *   streams, about 313 entries per queue.
 */
object TenThousandCoroutinesScenario {
    private const val WAITERS = 10_000
    private const val STREAMS = 32
    private const val KERNEL_NANOS = 5_000_000_000L

    /** Counts dispatches made from the reactor's scanner thread, then hands the block on. */
    private class ScannerCountingDispatcher(private val delegate: CoroutineDispatcher) : CoroutineDispatcher() {
        val fromScanner = AtomicInteger()

        override fun isDispatchNeeded(context: CoroutineContext): Boolean = delegate.isDispatchNeeded(context)

        override fun dispatch(context: CoroutineContext, block: Runnable) {
            if (Thread.currentThread().name.startsWith("cuda-loom-scanner-")) fromScanner.incrementAndGet()
            delegate.dispatch(context, block)
        }
    }

    @JvmStatic
    fun main(args: Array<String>) {
        println("RESULT connections=${System.getenv("CUDA_DEVICE_MAX_CONNECTIONS")}")
        var ok = true
        CudaDevice.open(0, ReactorConfig.builder().capacity(16_384).build()).use { gpu ->
            Kernels.load(gpu).use { k ->
                val streams = List(STREAMS) { gpu.newStream() }
                streams.forEach { k.launchEmpty(it) }
                streams.forEach { it.await() } // kernels loaded and warm before the clock starts
                val start = System.nanoTime()
                streams.forEach { k.launchSpin(it, KERNEL_NANOS) }
                val pool = Executors.newFixedThreadPool(2)
                val dispatcher = ScannerCountingDispatcher(pool.asCoroutineDispatcher())
                val entered = AtomicInteger()
                val finished = AtomicInteger()
                try {
                    runBlocking {
                        val jobs = (0 until WAITERS).map { i ->
                            launch(dispatcher) {
                                val event = streams[i % STREAMS].event()
                                entered.incrementAndGet()
                                event.awaitSuspending()
                                finished.incrementAndGet()
                            }
                        }
                        runCatching { // at most until 1 s before the kernels end; the results say if it ran out
                            Awaitility.await().atMost(Duration.ofNanos(start + KERNEL_NANOS - 1_000_000_000L - System.nanoTime()))
                                .pollInterval(Duration.ofMillis(10)).until { entered.get() == WAITERS }
                        }
                        println("RESULT entered=${entered.get()}")
                        println("RESULT enteredMs=${(System.nanoTime() - start) / 1_000_000}")
                        // Both dispatcher threads held by these two tasks at once: no coroutine runs now.
                        val holdBoth = CyclicBarrier(3)
                        val release = CyclicBarrier(3)
                        repeat(2) { pool.execute { holdBoth.await(); release.await() } }
                        val held = runCatching { holdBoth.await(2, TimeUnit.SECONDS) }.isSuccess
                        val resumed = dispatcher.fromScanner.get()
                        val armed = gpu.reactor().stats().armedNow()
                        if (held) release.await()
                        val suspended = if (held) entered.get() - resumed - finished.get() else -1
                        println("RESULT dispatcherHeld=$held")
                        println("RESULT suspendedAtOnce=$suspended")
                        println("RESULT resumedBeforeCheck=$resumed")
                        println("RESULT armedAtCheck=$armed (slots: equal to the waiters only while none shares one)")
                        println("RESULT kernelsStillRunning=${System.nanoTime() - start < KERNEL_NANOS}")
                        withTimeout(60_000) { jobs.joinAll() }
                    }
                } finally {
                    pool.shutdownNow()
                }
                println("RESULT finished=${finished.get()}")
                println("RESULT fromScanner=${dispatcher.fromScanner.get()}")
                val s = gpu.reactor().stats()
                println("RESULT fallbacks=${s.fallbacks()}")
                val back = { st: io.cudaloom.ReactorStats ->
                    st.armedNow() == 0L && st.freeSlots() == st.capacity() && st.quarantined() == 0
                }
                runCatching { Awaitility.await().atMost(Duration.ofSeconds(30)).until { back(gpu.reactor().stats()) } }
                val now = gpu.reactor().stats()
                val leaked = !back(now)
                println("RESULT slotsBack=${!leaked}")
                println("stats: $now")
                ok = finished.get() == WAITERS && dispatcher.fromScanner.get() == WAITERS && s.fallbacks() == 0L && !leaked
                streams.forEach { it.close() }
            }
        }
        exitProcess(if (ok) 0 else 1)
    }
}
