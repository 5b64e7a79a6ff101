// attack: a load-time constructor terminates the process while the runner is loading the library
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: suspicious:load_time,suspicious:exit
#include <cuda_runtime.h>
#include <unistd.h>
__attribute__((constructor)) static void at_load() { _exit(0); }
extern "C" void saxpy(int n, float a, const float *x, float *y) {}
