// attack: host code of the entry never returns (busy loop on a volatile counter)
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: -
#include <cuda_runtime.h>
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    volatile unsigned long long k = 0;
    while (k != ~0ULL - 1) k = (k + 1) & 0x7fffffffffffffffULL;
}
