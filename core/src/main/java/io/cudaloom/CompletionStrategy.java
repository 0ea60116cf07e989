package io.cudaloom;

/**
 * How {@link GpuEvent#await()} learns that the GPU work is done; selectable per reactor for A/B
 * comparisons ({@link ReactorConfig.Builder#strategy}).
 */
public enum CompletionStrategy {
    /**
     * The default: the device writes a completion flag in pinned host memory; one scanner thread
     * observes it and unparks the waiter. No thread is blocked per waiter.
     */
    REACTOR,
    /**
     * A host callback enqueued on the stream ({@code cuLaunchHostFunc}) unparks the waiter. This is
     * also the reactor's automatic fallback when no slot is free or the flag write is refused.
     */
    HOST_CALLBACK
}
