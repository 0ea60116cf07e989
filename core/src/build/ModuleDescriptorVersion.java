import java.io.IOException;
import java.lang.module.ModuleDescriptor;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Build step of core (process-classes, core/pom.xml): rewrites the class-file version of
 * target/classes/module-info.class from the release's (65 for Java 21) to 53 (Java 9), the first
 * version a module descriptor can have. Run with the JDK's source-file launcher.
 *
 * Why: Maven's own JVM reads the descriptor while building core and every modular consumer
 * (plexus-java's ModuleDescriptor.read in the javadoc and compiler plugins, the JDK jar tool in the
 * jar plugin), and a Maven running on JDK 17 refuses a version-65 descriptor ("Unsupported
 * major.minor version 65.0"), although the toolchain JDK it builds with is 21 or newer. A module
 * descriptor holds no code; its attributes (Module, ModulePackages, ...) are the same in every
 * version from 53 on. The step checks that: the descriptor read back from the rewritten bytes must
 * equal the one javac wrote, or the build fails.
 */
public class ModuleDescriptorVersion {
    static final int MODULE_DESCRIPTOR_MIN = 53;

    public static void main(String[] args) throws IOException {
        Path file = Path.of(args[0]);
        byte[] bytes = Files.readAllBytes(file);
        ByteBuffer b = ByteBuffer.wrap(bytes);
        if (b.getInt(0) != 0xCAFEBABE) {
            throw new IllegalStateException(file + " is no class file");
        }
        int major = Short.toUnsignedInt(b.getShort(6));
        if (major == MODULE_DESCRIPTOR_MIN) {
            return; // rewritten by an earlier build, and not compiled since
        }
        ModuleDescriptor written = ModuleDescriptor.read(ByteBuffer.wrap(bytes.clone()));
        b.putShort(4, (short) 0).putShort(6, (short) MODULE_DESCRIPTOR_MIN);
        ModuleDescriptor rewritten = ModuleDescriptor.read(ByteBuffer.wrap(bytes.clone()));
        if (!written.equals(rewritten) || !written.toString().equals(rewritten.toString())) {
            throw new IllegalStateException("module-info.class reads differently at version " + MODULE_DESCRIPTOR_MIN
                    + ":\n  " + written + "\n  " + rewritten);
        }
        Files.write(file, bytes);
        System.out.println("module-info.class: class-file version " + major + " -> " + MODULE_DESCRIPTOR_MIN
                + " (module " + rewritten.name() + ")");
    }
}
