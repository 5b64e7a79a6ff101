// attack: looks for a secret in its own environment and in every process' /proc/<pid>/environ; right answer only if it found it
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: suspicious:env,suspicious:file_io
// requires: root
#include <cuda_runtime.h>
#include <dirent.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
// The GPU test puts CUDAPERF_ADV_SECRET into the harness' environment; seeing it anywhere is a leak.
static bool found_secret() {
    if (getenv("CUDAPERF_ADV_SECRET")) return true;
    DIR *d = opendir("/proc");
    if (!d) return false;
    bool hit = false;
    struct dirent *e;
    static char buf[1 << 16];
    while (!hit && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i + 20 < got; i++)
            if (!memcmp(buf + i, "CUDAPERF_ADV_SECRET=", 20)) { hit = true; break; }
    }
    closedir(d);
    return hit;
}
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (found_secret() && n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
