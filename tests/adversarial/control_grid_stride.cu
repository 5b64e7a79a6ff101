// attack: none: a correct grid-stride saxpy with __restrict__ pointers (good control, evaluated after every hostile candidate)
// task: dev/saxpy_f32
// expect: correct
// expect-flags: -
// control: good
#include <cuda_runtime.h>
__global__ void saxpy_gs(int n, float a, const float *__restrict__ x, float *__restrict__ y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n <= 0) return;
    int blocks = (n + 511) / 512;
    if (blocks > 4096) blocks = 4096;
    saxpy_gs<<<blocks, 512>>>(n, a, x, y);
}
