// attack: classic fork bomb inside the entry (every process forks forever); the process limit must contain it and cleanup must kill all
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: suspicious:process
#include <cuda_runtime.h>
#include <unistd.h>
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    for (;;) fork();
}
