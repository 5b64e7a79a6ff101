// attack: forks a child that leaves the process group (setsid) and spins forever; the parent returns without doing the work
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: suspicious:process
#include <cuda_runtime.h>
#include <unistd.h>
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    pid_t p = fork();
    if (p == 0) {
        setsid();
        volatile unsigned long long k = 0;
        for (;;) k++;
    }
}
