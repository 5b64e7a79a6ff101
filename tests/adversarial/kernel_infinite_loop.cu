// attack: a kernel that never terminates (spins on a volatile read): the runner's watchdog must kill it
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: -
#include <cuda_runtime.h>
__global__ void spin_kernel(int n, float a, const float *x, float *y) {
    volatile float *vy = y;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) i = 0;
    // Inputs are finite, so the value always equals itself; volatile keeps the loop alive.
    while (vy[i] == vy[i]) {
    }
    y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) spin_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
