// attack: calls a host function that is declared but defined nowhere: links as a shared library, fails at dlopen(RTLD_NOW)
// task: dev/saxpy_f32
// expect: crashed|wrong
// expect-flags: -
#include <cuda_runtime.h>
extern "C" void cudaperf_adv_helper_that_does_not_exist(int n, float a, const float *x, float *y);
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    cudaperf_adv_helper_that_does_not_exist(n, a, x, y);
}
