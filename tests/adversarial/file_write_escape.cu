// attack: host code tries to create files outside its scratch dir: /tmp, /dev/shm, /var/tmp, root's home and the harness' working directory
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: suspicious:file_io
// requires: root
// must-not-exist: /tmp/cudaperf_adv_pwned,/dev/shm/cudaperf_adv_pwned,/var/tmp/cudaperf_adv_pwned,/root/cudaperf_adv_pwned,{cwd}/cudaperf_adv_pwned
#include <cuda_runtime.h>
#include <cstdio>
#include <unistd.h>
static void drop(const char *path) {
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("pwned\n", f);
        fclose(f);
    }
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    char path[256];
    drop("/tmp/cudaperf_adv_pwned");
    drop("/dev/shm/cudaperf_adv_pwned");
    drop("/var/tmp/cudaperf_adv_pwned");
    drop("/root/cudaperf_adv_pwned");
    snprintf(path, sizeof path, "/proc/%d/cwd/cudaperf_adv_pwned", (int)getppid());
    drop(path);
}
