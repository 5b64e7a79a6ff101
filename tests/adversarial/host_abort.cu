// attack: the entry calls abort() (SIGABRT kills the worker)
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: suspicious:exit
#include <cuda_runtime.h>
#include <cstdlib>
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    abort();
}
