// attack: compile-time bomb: unbounded template recursion (each level instantiates the next)
// task: dev/saxpy_f32
// expect: compile_error
// expect-flags: -
#include <cuda_runtime.h>
template <int N> struct Deep { static constexpr long long v = Deep<N + 1>::v + N; };
constexpr long long boom = Deep<0>::v;
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i] + (float)(boom & 0);
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
