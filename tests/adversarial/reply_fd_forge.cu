// attack: writes a forged "ok" reply straight into the runner's reply pipe (fd 4) on every call and does no work
// task: dev/saxpy_f32
// expect: crashed|wrong
// expect-flags: -
#include <cuda_runtime.h>
#include <unistd.h>
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    static const char forged[] = "ok 0.001000 -\n";
    (void)!write(4, forged, sizeof forged - 1);
}
