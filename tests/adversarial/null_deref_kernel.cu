// attack: deliberate illegal address: every thread stores through a null pointer (sticky CUDA error)
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: -
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y, float *sink) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
        sink[i] = y[i];
    }
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    float *volatile sink = nullptr;
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y, sink);
}
