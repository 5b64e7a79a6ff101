// attack: host memory hog: allocates and touches 1 GiB chunks (up to 100 GiB) so resident memory grows without bound
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: -
#include <cuda_runtime.h>
#include <cstdlib>
#include <cstring>
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    // Capped at 100 GiB only so that a harness without a memory watchdog does not take the
    // whole machine down; any watchdog must fire long before.
    for (int k = 0; k < 100; k++) {
        char *p = (char *)malloc(1ULL << 30);
        if (!p) break;
        memset(p, k + 1, 1ULL << 30);
    }
}
