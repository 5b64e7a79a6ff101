// Probe: the same element-wise kernel launched with 64 threads per block.
#include <cuda_runtime.h>
#define BLOCK 64
__global__ void scale_b(int n, const float *in, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3.0f * in[i];
}
extern "C" void probe(int n, const float *in, float *out) {
    if (n <= 0) return;
    scale_b<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(n, in, out);
}
