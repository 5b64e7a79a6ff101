// attack: entry takes different parameters (drops the scalar a): the harness calls it with the task's signature anyway
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: -
#include <cuda_runtime.h>
// With the x86-64 calling convention the float `a` travels in xmm0, so this entry still receives
// n, x and y in the right registers and computes y = x + y: plausible-looking but wrong.
__global__ void add_kernel(int n, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + y[i];
}
extern "C" void saxpy(int n, const float *x, float *y) {
    if (n > 0) add_kernel<<<(n + 255) / 256, 256>>>(n, x, y);
}
