// attack: launches with gridDim.y = 2^17 (limit 65535): the launch fails with a non-sticky error and nothing is computed
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: -
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && blockIdx.y == 0) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    dim3 grid((n + 255) / 256, 1 << 17);
    if (n > 0) saxpy_kernel<<<grid, 256>>>(n, a, x, y);
}
