package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every {@link GpuFaultException} the library throws is made by its fault owner's one factory
 * ({@link io.cudaloom.reactor.DeviceFaults}), so that every one has the same message shape and carries the fault's
 * cause. The one exception is the CUDA backend's translation of a driver call that failed with a
 * sticky error on no stream ({@code io.cudaloom.cuda.Cuda.check}, documented there; it uses the
 * owner's message shape). Checked on the compiled main classes: a constructor call, a
 * {@code GpuFaultException::new} and a subclass's {@code super(...)} each leave a
 * {@code Methodref} to {@code io/cudaloom/GpuFaultException.<init>} in the constant pool of the
 * class that makes it (lambdas and their bodies included; nested classes have class files of their own).
 */
class FaultFactoryOnlyTest {
    private static final String EXCEPTION = "io/cudaloom/GpuFaultException";
    /** The classes allowed to construct it: the factory, and Cuda.check (see the class comment). */
    private static final Set<String> ALLOWED = Set.of("io/cudaloom/reactor/DeviceFaults", "io/cudaloom/cuda/Cuda");

    @Test
    void onlyTheFaultOwnersFactoryConstructsAGpuFaultException() throws Exception {
        Path root = Path.of(GpuDevice.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Set<String> constructing = new TreeSet<>();
        int scanned = 0;
        try (Stream<Path> files = Files.walk(root)) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".class"))::iterator) {
                scanned++;
                String name = root.relativize(f).toString().replace('\\', '/').replaceFirst("\\.class$", "");
                if (!name.equals(EXCEPTION) && constructs(f)) {
                    constructing.add(name);
                }
            }
        }
        assertEquals(true, scanned > 100, "scanned " + scanned + " classes under " + root);
        List<String> offenders = new ArrayList<>(constructing);
        offenders.removeAll(ALLOWED);
        assertEquals(List.of(), offenders, "construct a GpuFaultException outside DeviceFaults' factory: "
                + "build it with DeviceFaults (or a stream's FaultSink.failure) instead");
        // Not vacuous: the scan does find the factory (and the one documented exception).
        assertEquals(ALLOWED, constructing);
    }

    /** Whether the class file's constant pool holds a Methodref to GpuFaultException.{@code <init>}. */
    static boolean constructs(Path classFile) throws IOException {
        try (InputStream in = Files.newInputStream(classFile)) {
            return constructs(new DataInputStream(in));
        }
    }

    private static boolean constructs(DataInputStream in) throws IOException {
        if (in.readInt() != 0xCAFEBABE) {
            throw new IOException("not a class file");
        }
        in.readUnsignedShort(); // minor
        in.readUnsignedShort(); // major
        int count = in.readUnsignedShort();
        String[] utf8 = new String[count];
        int[] classNames = new int[count]; // CONSTANT_Class -> its name's index
        int[] natNames = new int[count]; // CONSTANT_NameAndType -> its name's index
        List<int[]> methodRefs = new ArrayList<>(); // {class index, name-and-type index}
        for (int i = 1; i < count; i++) {
            int tag = in.readUnsignedByte();
            switch (tag) {
                case 1 -> utf8[i] = in.readUTF(); // the class-file "modified UTF-8" is DataInput's
                case 3, 4 -> in.readInt();
                case 5, 6 -> {
                    in.readLong();
                    i++; // takes two entries
                }
                case 7 -> classNames[i] = in.readUnsignedShort();
                case 8, 16, 19, 20 -> in.readUnsignedShort();
                case 10 -> methodRefs.add(new int[] {in.readUnsignedShort(), in.readUnsignedShort()});
                case 9, 11, 17, 18 -> in.readInt();
                case 12 -> {
                    natNames[i] = in.readUnsignedShort();
                    in.readUnsignedShort();
                }
                case 15 -> {
                    in.readUnsignedByte();
                    in.readUnsignedShort();
                }
                default -> throw new IOException("unknown constant-pool tag " + tag + " at " + i);
            }
        }
        for (int[] ref : methodRefs) {
            if (EXCEPTION.equals(utf8[classNames[ref[0]]]) && "<init>".equals(utf8[natNames[ref[1]]])) {
                return true;
            }
        }
        return false;
    }
}
