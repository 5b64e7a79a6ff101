// attack: launches a kernel that does nothing: y keeps its input values (and the call is very fast)
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: -
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
