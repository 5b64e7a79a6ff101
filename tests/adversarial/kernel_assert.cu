// attack: a device-side assert that always fires after the correct store (cudaErrorAssert is sticky)
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: -
#undef NDEBUG
#include <cassert>
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
        assert(y[i] != y[i]);  // false for every finite value
    }
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
