// attack: the entry raises SIGSEGV itself (a host-side crash inside the worker)
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: suspicious:exit
#include <cuda_runtime.h>
#include <csignal>
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    raise(SIGSEGV);
}
