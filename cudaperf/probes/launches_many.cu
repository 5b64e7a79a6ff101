// Probe: the same computation as three kernels, each a full pass over memory.
#include <cuda_runtime.h>
__global__ void mul2(int n, const float *in, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 2.0f;
}
__global__ void add1(int n, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = out[i] + 1.0f;
}
__global__ void square(int n, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = out[i] * out[i];
}
extern "C" void probe(int n, const float *in, float *out) {
    if (n <= 0) return;
    int grid = (n + 255) / 256;
    mul2<<<grid, 256>>>(n, in, out);
    add1<<<grid, 256>>>(n, out);
    square<<<grid, 256>>>(n, out);
}
