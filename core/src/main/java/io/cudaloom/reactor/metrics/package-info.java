@NullMarked
package io.cudaloom.reactor.metrics;

import org.jspecify.annotations.NullMarked;
