// attack: system() runs a shell that drops a file in /tmp and leaves a background sleeper behind; no work done
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: suspicious:process
// must-not-exist: /tmp/cudaperf_adv_pwned_sh
#include <cuda_runtime.h>
#include <cstdlib>
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    system("sh -c 'echo pwned > /tmp/cudaperf_adv_pwned_sh; (sleep 1000 &)'");
}
