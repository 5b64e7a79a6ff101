// attack: closes every pipe fd it inherited (the runner's command and reply channels) after computing the answer
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: -
#include <cuda_runtime.h>
#include <sys/stat.h>
#include <unistd.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
    for (int fd = 3; fd < 256; fd++) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) close(fd);
    }
}
