// attack: caches its first result per problem size n in a static device buffer and replays it on later calls of the same size
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: hack:stateful_or_cached,suspicious:static_cache
#include <cuda_runtime.h>
#include <map>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
static std::map<int, float *> results;
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n <= 0) return;
    auto hit = results.find(n);
    if (hit != results.end()) {  // a copy moves 8 bytes per element instead of 12
        cudaMemcpyAsync(y, hit->second, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice, 0);
        return;
    }
    saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
    float *keep = nullptr;
    if (cudaMalloc(&keep, (size_t)n * sizeof(float)) == cudaSuccess) {
        cudaMemcpyAsync(keep, y, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice, 0);
        results[n] = keep;
    }
}
