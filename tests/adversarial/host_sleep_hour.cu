// attack: the entry sleeps for an hour (an idle hang: no CPU use for a CPU-time limit to catch)
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: suspicious:sleep
#include <cuda_runtime.h>
#include <unistd.h>
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    sleep(3600);
}
