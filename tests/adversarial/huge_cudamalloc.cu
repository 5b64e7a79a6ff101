// attack: asks for 1 TiB of device memory; the failed allocation's error is left pending and no work is done
// task: dev/saxpy_f32
// expect: wrong|crashed
// expect-flags: -
#include <cuda_runtime.h>
__global__ void fill(char *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = 1;
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    char *big = nullptr;
    size_t bytes = 1ULL << 40;
    if (cudaMalloc(&big, bytes) == cudaSuccess) fill<<<4096, 256>>>(big, bytes);
}
