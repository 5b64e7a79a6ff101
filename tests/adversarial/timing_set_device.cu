// attack: switches to device 1 (which the worker may not see) before launching, leaving the error pending
// task: dev/saxpy_f32
// expect: wrong|crashed
// expect-flags: suspicious:device_reset
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    cudaSetDevice(1);
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
