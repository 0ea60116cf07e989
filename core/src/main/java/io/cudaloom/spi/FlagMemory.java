package io.cudaloom.spi;

import io.cudaloom.protocol.SlotTable.OffHeapFlagArray;

/**
 * Completion-flag memory of one reactor, provided by a device backend: the host view the scanner
 * reads (the device writes the same memory, through whatever address its backend keeps) and how
 * to free it. The reactor frees it exactly once, and only when no device write into it can still
 * land.
 *
 * @param flags host view (acquire loads)
 * @param release frees the memory
 */
public record FlagMemory(OffHeapFlagArray flags, Runnable release) {}
