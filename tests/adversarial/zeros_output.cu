// attack: writes zeros everywhere (the cheapest full-bandwidth output)
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: -
#include <cuda_runtime.h>
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) cudaMemsetAsync(y, 0, (size_t)n * sizeof(float), 0);
}
