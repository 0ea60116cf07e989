package io.cudaloom.cuda;

import jcuda.driver.CUfunction;

/** A kernel of a {@link CudaModule}; launch it with {@link CudaStream#launch}. */
public record CudaKernel(CudaModule module, CUfunction function, String name) {}
