@NullMarked
package io.cudaloom.reactor.lifecycle;

import org.jspecify.annotations.NullMarked;
