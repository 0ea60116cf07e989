@file:JvmName("GpuEventCoroutines")

package io.cudaloom.kotlin

import io.cudaloom.GpuEvent
import io.cudaloom.GpuFaultException
import io.cudaloom.GpuStream
import io.cudaloom.ReactorClosedException
import io.cudaloom.ReactorStats
import java.util.concurrent.Executor
import kotlin.coroutines.ContinuationInterceptor
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.asExecutor
import kotlinx.coroutines.suspendCancellableCoroutine

/**
 * Suspends the calling coroutine until the GPU work this event stands for is done, blocking no
 * thread: the coroutine's continuation is registered with the device's completion reactor (the
 * same slots that blocking `await()`s use) through [GpuEvent.subscribe], and resumed when the
 * device writes its completion flag. No thread parks, no `CompletableFuture` and no thread is
 * created per await.
 *
 * **Why not `await()`.** Kotlin resolves a member before an extension of the same name, so an
 * extension `GpuEvent.await()` would never be called: `event.await()` always means the member
 * [GpuEvent.await], which *blocks* the calling thread until the work is done (fine on a virtual
 * thread, wrong on `Dispatchers.Default`). The member is annotated
 * `@org.jetbrains.annotations.Blocking`, so IntelliJ flags it inside a suspend function
 * ("Possibly blocking call in non-blocking context"); call this function there instead.
 *
 * **Cancellation.** If the coroutine is cancelled while suspended (`job.cancel()`, `withTimeout`),
 * the registration is withdrawn, exactly as a timed-out blocking await withdraws its own: counted
 * in [ReactorStats.abandoned]; the GPU work goes on and the slot it held is recycled once the
 * device's write lands. Cancellation and delivery race on one atomic cell of the reactor: if the
 * delivery won, the coroutine still ends with the [CancellationException] (a cancelled coroutine
 * is never resumed normally) and nothing is counted as abandoned. If the outcome is known at once
 * (the event already awaited, its stream idle or faulted, the device closed), [GpuEvent.subscribe]
 * hands it over before the coroutine suspends, and this returns or throws without suspending,
 * unless the coroutine is already cancelled (then [CancellationException], as any cancellable
 * suspension). It does not ask [GpuEvent.isDone] first: that would query a busy stream's state once
 * more before the registration's own query, and an idle one's completion would go uncounted in
 * [ReactorStats.immediate].
 *
 * **Where the coroutine resumes.** On its own dispatcher, as after any suspension. The thread that
 * delivers the completion (the reactor's scanner thread, which serves every waiter of the device)
 * only hands the continuation to that dispatcher, which is a short, non-blocking step. When the
 * context has no dispatcher that needs a dispatch (`Dispatchers.Unconfined`, or no dispatcher at
 * all), resuming would run the coroutine's code on the scanner: the continuation is then resumed
 * from a `Dispatchers.IO` thread instead. Do not use a dispatcher whose `dispatch` runs the block
 * on the calling thread (e.g. `Executor { it.run() }.asCoroutineDispatcher()`): that would run
 * your code on the scanner, and every waiter of the device would wait with it.
 *
 * @throws GpuFaultException if the stream faulted: the work will never complete
 * @throws ReactorClosedException if the device is or gets closed
 * @throws IllegalStateException if the event was taken while its stream was being closed (an
 *   event taken before [GpuStream.close] is awaited for its work, as by [GpuEvent.await])
 * @throws CancellationException if the coroutine was cancelled while suspended
 */
public suspend fun GpuEvent.awaitSuspending() {
    suspendCancellableCoroutine { continuation ->
        // subscribe may hand the outcome over before it returns (work already done, stream
        // faulted, device closed): then the continuation is resumed before it ever suspended,
        // which suspendCancellableCoroutine allows (the result is returned directly).
        val subscription = subscribe(ResumeExecutor(continuation.context)) { failure ->
            if (failure == null) {
                continuation.resume(Unit)
            } else {
                continuation.resumeWithException(failure)
            }
        }
        // Runs on the cancelling thread, once, only if the coroutine is cancelled while suspended.
        // cancel() is a non-blocking compare-and-set; if the delivery won it withdraws nothing, and
        // the late resume above is ignored by the cancelled continuation.
        continuation.invokeOnCancellation { subscription.cancel() }
    }
}

/**
 * Suspends until all work submitted to this stream so far is done: `event().awaitSuspending()`.
 * See [GpuEvent.awaitSuspending] for the rules; the member [GpuStream.await] blocks instead.
 *
 * @throws GpuFaultException if the stream faulted
 * @throws ReactorClosedException if the device is or gets closed
 * @throws IllegalStateException if this stream is closed
 * @throws CancellationException if the coroutine was cancelled while suspended
 */
public suspend fun GpuStream.awaitSuspending() {
    event().awaitSuspending()
}

/**
 * Where a completion resumes its continuation: on the delivering thread when resuming only
 * dispatches (the dispatcher needs a dispatch, decided on the delivering thread, as
 * [CoroutineDispatcher.isDispatchNeeded] is meant to be), else on [Dispatchers.IO], so that no
 * coroutine code runs on the reactor's scanner.
 */
private class ResumeExecutor(private val context: CoroutineContext) : Executor {
    override fun execute(task: Runnable) {
        val dispatcher = context[ContinuationInterceptor] as? CoroutineDispatcher
        if (dispatcher != null && dispatcher.isDispatchNeeded(context)) {
            task.run()
        } else {
            OFF_THE_DELIVERING_THREAD.execute(task)
        }
    }
}

private val OFF_THE_DELIVERING_THREAD: Executor = Dispatchers.IO.asExecutor()
