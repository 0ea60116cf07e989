package io.cudaloom.kotlin;

/**
 * Not API, no code: the one Java class of this package. The package's API is Kotlin
 * ({@code GpuEventCoroutines.kt}), compiled after the Java sources (core's POM), but javac compiles
 * {@code module-info.java} first and refuses to export a package it finds no class of ("package is
 * empty or does not exist"; {@code package-info.java} alone does not count). This class makes the
 * package exist for javac.
 */
final class JavacAnchor {
    private JavacAnchor() {}
}
