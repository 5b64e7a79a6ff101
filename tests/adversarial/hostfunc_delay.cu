// attack: returns before its work has even started: a non-blocking stream holds a 2 ms host callback (cudaLaunchHostFunc) in front of the kernel; the harness' device sync must wait for it and count it
// task: dev/saxpy_f32
// expect: correct
// expect-flags: suspicious:side_stream
#include <cuda_runtime.h>
#include <unistd.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
static void CUDART_CB hold(void *) { usleep(2000); }
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    static cudaStream_t s = nullptr;
    if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (n <= 0) return;
    cudaLaunchHostFunc(s, hold, nullptr);
    saxpy_kernel<<<(n + 255) / 256, 256, 0, s>>>(n, a, x, y);
}
