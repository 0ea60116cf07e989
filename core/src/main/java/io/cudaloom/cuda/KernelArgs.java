package io.cudaloom.cuda;

import jcuda.NativePointerObject;
import jcuda.Pointer;

/** Packs launch arguments into the pointer-to-pointers array cuLaunchKernel takes. */
final class KernelArgs {
    private KernelArgs() {}

    static Pointer pack(String kernel, Object... args) {
        NativePointerObject[] ptrs = new NativePointerObject[args.length];
        for (int i = 0; i < args.length; i++) {
            Object a = args[i];
            if (a instanceof DeviceBuffer b) {
                ptrs[i] = Pointer.to(b.rawPointer()); // the launch entered its lifetime
            } else if (a instanceof Integer v) {
                ptrs[i] = Pointer.to(new int[] {v});
            } else if (a instanceof Long v) {
                ptrs[i] = Pointer.to(new long[] {v});
            } else if (a instanceof Float v) {
                ptrs[i] = Pointer.to(new float[] {v});
            } else if (a instanceof Double v) {
                ptrs[i] = Pointer.to(new double[] {v});
            } else {
                throw new IllegalArgumentException("argument " + i + " of " + kernel + " has unsupported type "
                        + (a == null ? "null" : a.getClass().getName())
                        + " (use DeviceBuffer, Integer, Long, Float or Double)");
            }
        }
        return Pointer.to(ptrs);
    }
}
