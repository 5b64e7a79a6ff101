// attack: computes only the first half of y (the second half keeps its input values)
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: -
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    int half = (n + 1) / 2;  // n = 1 is all "first half": the larger sizes must catch it
    if (half > 0) saxpy_kernel<<<(half + 255) / 256, 256>>>(half, a, x, y);
}
