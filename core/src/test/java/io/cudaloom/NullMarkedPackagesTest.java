package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cudaloom.cuda.CudaDriverException;
import io.cudaloom.kotlin.GpuEventCoroutines;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.sim.SimulatedDevice;
import java.util.List;
import java.util.stream.Stream;
import org.jspecify.annotations.NullMarked;
import org.junit.jupiter.api.Test;

/** Every package of the library is @NullMarked, so Kotlin and nullness checkers see non-null types. */
class NullMarkedPackagesTest {
    @Test
    void everyPackageIsNullMarked() {
        List<String> unmarked = Stream.of(GpuDevice.class, SlotTable.class, SimulatedDevice.class, CudaDriverException.class,
                        GpuEventCoroutines.class)
                .map(Class::getPackage)
                .filter(p -> !p.isAnnotationPresent(NullMarked.class))
                .map(Package::getName)
                .toList();
        assertEquals(List.of(), unmarked, "packages without @NullMarked");
    }
}
