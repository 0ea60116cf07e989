package io.cudaloom.cuda;

/**
 * A child JVM's view of the hot calls' binding (HotCallsTest, HotCallsFfmTest): prints
 * {@code RESULT implementation=21|22} and {@code RESULT binding=...}; with the argument {@code gpu}
 * it then opens CUDA device 0 and runs {@link HotCallsGpuTest#compare} there, printing its results.
 */
public final class HotCallsProbe {
    private HotCallsProbe() {}

    public static void main(String[] args) throws Exception {
        System.out.println("RESULT implementation=" + HotCalls.implementation());
        System.out.println("RESULT binding=" + CudaDevice.driverCalls());
        if (args.length > 0 && args[0].equals("gpu")) {
            try (CudaDevice device = CudaDevice.open(0, GpuTestSupport.reactorOnly())) {
                for (var e : HotCallsGpuTest.compare(device).entrySet()) {
                    System.out.println("RESULT " + e.getKey() + "=" + e.getValue());
                }
            }
        }
        System.out.flush();
    }
}
