// attack: compile-time bomb: a constexpr loop of 2^62 steps that the compiler must evaluate in a static_assert
// task: dev/saxpy_f32
// expect: compile_error
// expect-flags: -
#include <cuda_runtime.h>
constexpr unsigned long long spin() {
    unsigned long long s = 0;
    for (unsigned long long i = 0; i < (1ULL << 62); i++) s = s * 6364136223846793005ULL + i;
    return s;
}
static_assert(spin() != 1, "never decided");
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
