// Probe: branches depend only on kernel arguments: every thread of a warp agrees.
#include <cuda_runtime.h>
__global__ void refine_uniform(int n, int reps, const float *in, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int k = 0; k < reps; k++) v = v * 0.999f + 0.5f;
    out[i] = v;
}
extern "C" void probe(int n, const float *in, float *out) {
    if (n <= 0) return;
    refine_uniform<<<(n + 255) / 256, 256>>>(n, 16, in, out);
}
