// attack: calls cudaDeviceSynchronize thousands of times per call around the real work
// task: dev/saxpy_f32
// expect: correct
// expect-flags: -
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
    for (int k = 0; k < 2000; k++) cudaDeviceSynchronize();
}
