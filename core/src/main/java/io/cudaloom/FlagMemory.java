package io.cudaloom;

import io.cudaloom.protocol.OffHeapFlagArray;

/**
 * Completion-flag memory of one reactor, provided by a device backend: a host view the scanner
 * reads, the address the device writes through, and how to free it. The reactor frees it exactly
 * once, and only when no device write into it can still land.
 *
 * @param flags host view (acquire loads)
 * @param deviceAddress where the device writes flag {@code i}: {@code deviceAddress + 4 * i}
 *     (0 for the simulated device, which writes through {@code flags} itself)
 * @param release frees the memory
 */
public record FlagMemory(OffHeapFlagArray flags, long deviceAddress, Runnable release) {}
