// Probe: tiled matrix multiply, 16x16 shared-memory tiles with barriers.
#include <cuda_runtime.h>
#define TS 16
__global__ void mm_tiled(int n, const float *a, const float *b, float *c) {
    __shared__ float ta[TS][TS], tb[TS][TS];
    int row = blockIdx.y * TS + threadIdx.y, col = blockIdx.x * TS + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TS) {
        ta[threadIdx.y][threadIdx.x] = (row < n && t + threadIdx.x < n) ? a[row * n + t + threadIdx.x] : 0.0f;
        tb[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < n) ? b[(t + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TS; k++) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) c[row * n + col] = acc;
}
extern "C" void probe(int n, const float *a, const float *b, float *c) {
    if (n <= 0) return;
    dim3 block(TS, TS), grid((n + TS - 1) / TS, (n + TS - 1) / TS);
    mm_tiled<<<grid, block>>>(n, a, b, c);
}
