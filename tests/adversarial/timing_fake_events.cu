// attack: records and synchronises its own CUDA events on the default stream (hundreds per call) around the real work, trying to disturb event-based timing
// task: dev/saxpy_f32
// expect: correct
// expect-flags: suspicious:timing_api
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    cudaEvent_t ev[2];
    cudaEventCreate(&ev[0]);
    cudaEventCreateWithFlags(&ev[1], cudaEventDisableTiming);
    for (int k = 0; k < 200; k++) {
        cudaEventRecord(ev[k & 1], 0);
        cudaEventSynchronize(ev[k & 1]);
    }
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
    cudaEventRecord(ev[0], 0);
    cudaEventDestroy(ev[0]);
    cudaEventDestroy(ev[1]);
}
