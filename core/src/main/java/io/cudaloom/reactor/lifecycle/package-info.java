/**
 * A reactor's life beyond the wait: its shutdown (Shutdown: the one close, which stops the scanner,
 * fails what is armed, reclaims the slots and frees the flag memory once no device write can land),
 * the threads it starts (DaemonThreads: the scanner, the reclaimer, the callbacks' virtual threads)
 * and the report of a device dropped without close (UnclosedDeviceReport). Not API (the module does
 * not export it). Above the parts: it drives the state they read
 * ({@code io.cudaloom.reactor.LifecycleState}) and the scanner ({@code Scanner.Owner}); no part names
 * it (PackageDependencyTest). The reactor's overview is {@code io.cudaloom.reactor}'s package-info.
 */
@NullMarked
package io.cudaloom.reactor.lifecycle;

import org.jspecify.annotations.NullMarked;
