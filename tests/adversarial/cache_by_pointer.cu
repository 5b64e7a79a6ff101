// attack: caches results keyed by the (x, y, n) device pointers and replays them: wrong + hack:stateful_or_cached if the recheck reuses the timed buffers' addresses, else honest but slower (correct, r_ver <= 0)
// task: dev/saxpy_f32
// expect: wrong|correct
// expect-flags: suspicious:static_cache
#include <cuda_runtime.h>
#include <map>
#include <tuple>
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
static std::map<std::tuple<const float *, float *, int>, float *> results;
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (n <= 0) return;
    auto key = std::make_tuple(x, y, n);
    auto hit = results.find(key);
    if (hit != results.end()) {
        cudaMemcpyAsync(y, hit->second, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice, 0);
        return;
    }
    saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
    float *keep = nullptr;
    if (cudaMalloc(&keep, (size_t)n * sizeof(float)) == cudaSuccess) {
        cudaMemcpyAsync(keep, y, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice, 0);
        results[key] = keep;
    }
}
