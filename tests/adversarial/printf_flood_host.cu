// attack: host code writes 256 MiB to stdout and to stderr on every call (past the worker's file-size cap) besides computing the right answer
// task: dev/saxpy_f32
// expect: correct
// expect-flags: suspicious:printf
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    static char line[1 << 20];
    if (!line[0]) {
        memset(line, 'A', sizeof line - 1);
        line[sizeof line - 2] = '\n';
    }
    for (int k = 0; k < 256; k++) {
        fputs(line, stdout);
        fputs(line, stderr);
    }
    fflush(stdout);
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
