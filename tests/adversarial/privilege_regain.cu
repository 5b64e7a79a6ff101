// attack: tries to become root again (setuid/setresuid/setgid 0); right answer only if it succeeded
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: -
// requires: root
#include <cuda_runtime.h>
#include <unistd.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    (void)setresgid(0, 0, 0);
    (void)setgid(0);
    (void)setresuid(0, 0, 0);
    (void)setuid(0);
    (void)seteuid(0);
    bool root = geteuid() == 0 || getuid() == 0 || getegid() == 0;
    if (root && n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
