package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.internal.BackendAccess;
import java.lang.reflect.Executable;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The backends reach the API's devices, streams and kernels through {@link BackendAccess} only: the
 * API classes declare no protected or public member for them, and nobody but the API package can
 * install the hooks.
 */
class BackendAccessTest {
    @Test
    void theApiClassesDeclareNoProtectedMemberButTheirConstructors() {
        List<String> found = new ArrayList<>();
        for (Class<?> c : List.of(GpuDevice.class, GpuStream.class, GpuKernel.class, GpuEvent.class, CompletionReactor.class)) {
            Stream.<Executable>concat(Stream.of(c.getDeclaredMethods()), Stream.of(c.getDeclaredConstructors()))
                    .filter(m -> Modifier.isProtected(m.getModifiers()))
                    .filter(m -> !(m instanceof java.lang.reflect.Constructor<?>))
                    .forEach(m -> found.add(c.getSimpleName() + "." + m.getName()));
        }
        assertEquals(List.of(), found, "protected members (for backends: they belong in BackendAccess.Hooks)");
        assertTrue(Modifier.isProtected(GpuStream.class.getDeclaredConstructors()[0].getModifiers()));
        assertEquals(List.of(GpuDevice.class),
                Stream.of(GpuStream.class.getDeclaredConstructors()[0].getParameterTypes()).toList(),
                "a stream's constructor takes its device only, no SPI type");
    }

    @Test
    void onlyTheApiPackageInstallsTheHooksAndOnlyOnce() {
        BackendAccess.Hooks stranger = (BackendAccess.Hooks) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {BackendAccess.Hooks.class}, (proxy, method, args) -> null);
        IllegalCallerException e = assertThrows(IllegalCallerException.class, () -> BackendAccess.install(stranger));
        assertTrue(e.getMessage().contains(stranger.getClass().getName()), e.getMessage());
        BackendAccess.Hooks installed = BackendAccess.hooks();
        assertSame(BackendHooks.class, installed.getClass());
        assertThrows(IllegalStateException.class, () -> BackendAccess.install(new BackendHooks()));
        assertSame(installed, BackendAccess.hooks(), "still the first");
    }
}
