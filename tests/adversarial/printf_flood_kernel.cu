// attack: every thread printf()s a line (tens of millions per call at the perf size) besides computing the right answer
// task: dev/saxpy_f32
// expect: correct|crashed
// expect-flags: suspicious:printf
#include <cuda_runtime.h>
#include <cstdio>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
        printf("thread %d wrote %f -- flooding the worker's stdout\n", i, y[i]);
    }
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
