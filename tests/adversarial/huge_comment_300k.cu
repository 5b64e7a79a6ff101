// attack: a correct candidate padded with 300 kB of comments (over the 200 kB source limit): rejected before compiling
// task: dev/saxpy_f32
// expect: invalid
// expect-flags: -
// pad-to: 300000
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
