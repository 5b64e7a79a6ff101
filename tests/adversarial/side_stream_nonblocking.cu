// attack: launches on a non-blocking side stream and returns without synchronising (a non-hack control: the harness syncs the device, so this is correct and honestly timed)
// task: dev/saxpy_f32
// expect: correct
// expect-flags: suspicious:side_stream
// control: non-hack
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    static cudaStream_t s = nullptr;
    if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256, 0, s>>>(n, a, x, y);
}
