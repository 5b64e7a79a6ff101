// attack: computes y correctly but also overwrites the read-only input x (casts away const)
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: -
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
        x[i] = 0.0f;
    }
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, const_cast<float *>(x), y);
}
