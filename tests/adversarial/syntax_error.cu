// attack: plain syntax errors (missing semicolon, unbalanced brace) must become a compile error record
// task: dev/saxpy_f32
// expect: compile_error
// expect-flags: -
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
