// attack: entry declared with double precision buffers: reads and writes twice the bytes the harness allocated
// task: dev/saxpy_f32
// expect: crashed|wrong
// expect-flags: -
#include <cuda_runtime.h>
__global__ void daxpy_kernel(int n, double a, const double *x, double *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, double a, const double *x, double *y) {
    if (n > 0) daxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
