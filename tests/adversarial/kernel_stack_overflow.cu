// attack: unbounded, non-tail recursion with a large local array in a device function overflows the per-thread stack
// task: dev/saxpy_f32
// expect: crashed|wrong
// expect-flags: -
#include <cuda_runtime.h>
__device__ float deep(const float *x, int i, int depth) {
    volatile float pad[256];
    pad[depth & 255] = x[i] + depth;
    if (depth <= 0) return pad[0];
    return deep(x, i, depth - 1) + pad[depth & 255] * 0.0f;
}
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * deep(x, i, n + 1000000) + y[i];  // deep() == x[i] if it ever returned
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
