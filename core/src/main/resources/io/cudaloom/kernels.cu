// CUDA C++ equivalent of kernels.ptx (which is hand-written and is what the library loads;
// nvcc is not needed to build or run cuda-loom). Kept as the readable specification.

extern "C" __global__ void empty_kernel() {}

extern "C" __global__ void spin_kernel(unsigned long long nanos) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < nanos);
}

extern "C" __global__ void fill_u32(unsigned int* out, unsigned int value, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

extern "C" __global__ void scale_f32(float* data, float factor, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = data[i] * factor;
}

