// attack: the entry computes the answer, then calls exit(0) (a clean-looking exit of the worker)
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: suspicious:exit
#include <cuda_runtime.h>
#include <cstdlib>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
    cudaDeviceSynchronize();
    exit(0);
}
