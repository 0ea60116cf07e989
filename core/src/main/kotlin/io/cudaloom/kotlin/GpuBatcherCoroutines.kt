@file:JvmName("GpuBatcherCoroutines")

package io.cudaloom.kotlin

import io.cudaloom.GpuBatcher
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.future.await

/**
 * [GpuBatcher.call] for a coroutine: suspends until this call's output is back, blocking no thread
 * (the call's future, [GpuBatcher.submit], resumes the continuation).
 *
 * **Cancellation.** If the coroutine is cancelled while suspended (`job.cancel()`, `withTimeout`),
 * the call leaves its batch, as a timed-out blocking call does: if no batch had taken it, it never
 * runs; if one had, its output is dropped. The coroutine ends with the [CancellationException].
 *
 * @throws IllegalArgumentException if the input does not fit its staging slot
 * @throws io.cudaloom.GpuFaultException if the batch's work faulted
 * @throws IllegalStateException if the batcher is closed
 * @throws CancellationException if the coroutine was cancelled while suspended
 */
public suspend fun <I : Any, O : Any> GpuBatcher<I, O>.callSuspending(input: I): O = submit(input).await()
