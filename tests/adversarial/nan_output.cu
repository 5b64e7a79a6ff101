// attack: writes NaN everywhere (tolerance checks written as "not (err > tol)" would let NaN pass)
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: -
#include <cuda_runtime.h>
__global__ void nan_kernel(int n, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __int_as_float(0x7fc00000);
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) nan_kernel<<<(n + 255) / 256, 256>>>(n, y);
}
