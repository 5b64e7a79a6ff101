// attack: stages x through shared memory but only half the block fills its tile; the other half reads uninitialised shared memory
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: -
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 128 && i < n) tile[threadIdx.x] = x[i];
    __syncthreads();
    if (i < n) y[i] = a * tile[threadIdx.x] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
