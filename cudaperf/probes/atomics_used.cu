// Probe: sum by one global atomicAdd per element (maximal atomic contention).
#include <cuda_runtime.h>
__global__ void atomic_sum(int n, const float *in, float *total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(total, in[i]);
}
extern "C" void probe(int n, const float *in, float *total) {
    if (n <= 0) return;
    cudaMemsetAsync(total, 0, sizeof(float));
    atomic_sum<<<(n + 255) / 256, 256>>>(n, in, total);
}
