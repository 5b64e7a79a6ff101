// attack: every thread also writes 4 GiB past the end of y (far outside any allocation)
// task: dev/saxpy_f32
// expect: crashed|wrong
// expect-flags: -
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
        y[(size_t)i + (1ULL << 30)] = 42.0f;
    }
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
