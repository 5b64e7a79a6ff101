// Probe: each lane runs a different number of iterations, so warps diverge on the loop branch.
#include <cuda_runtime.h>
__global__ void refine_divergent(int n, const float *in, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int k = 0; k < (threadIdx.x & 31); k++) v = v * 0.999f + 0.5f;
    out[i] = v;
}
extern "C" void probe(int n, const float *in, float *out) {
    if (n <= 0) return;
    refine_divergent<<<(n + 255) / 256, 256>>>(n, in, out);
}
