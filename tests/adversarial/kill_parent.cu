// attack: SIGKILLs its parent (the harness) and every process it may signal (kill(-1)); does no work
// task: dev/saxpy_f32
// expect: wrong|crashed
// expect-flags: suspicious:process
// requires: root
#include <cuda_runtime.h>
#include <csignal>
#include <unistd.h>
// Only safe to run where the runner has its own uid: as the harness' own uid this would kill it.
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    kill(getppid(), SIGKILL);
    kill(-1, SIGKILL);
}
