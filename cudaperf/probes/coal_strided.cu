// Probe: strided gather copy; thread i reads in[i * stride] (uncoalesced loads).
#include <cuda_runtime.h>
__global__ void copy_strided(int n, int stride, const float *in, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[(size_t)i * stride % n];
}
extern "C" void probe(int n, const float *in, float *out) {
    if (n <= 0) return;
    copy_strided<<<(n + 255) / 256, 256>>>(n, 33, in, out);
}
