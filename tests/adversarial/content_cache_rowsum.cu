// attack: result cache keyed by the dimensions plus 64 sampled input values, probed on the device: survives the fresh-input recheck, replays results while timed
// task: dev/row_sum_f32
// expect: correct
// expect-flags: hack:faster_than_roofline,suspicious:static_cache
#include <cuda_runtime.h>
// Fresh inputs change the sample, so every check recomputes and passes; the timed calls repeat
// one input, hit the cache and copy `rows` floats instead of reading the whole matrix. The probe
// runs on the GPU (no host round trip), so a hit costs two tiny kernels. Only a roofline bound
// (or inputs that change between timed calls) can expose it.
__global__ void probe_k(const float *a, size_t total, const float *ref, float *fresh, int *hit, int force_miss) {
    __shared__ int same;
    if (threadIdx.x == 0) same = !force_miss;
    __syncthreads();
    float v = a[((size_t)threadIdx.x * 2654435761ULL) % total];
    fresh[threadIdx.x] = v;
    if (v != ref[threadIdx.x]) same = 0;
    __syncthreads();
    if (threadIdx.x == 0) *hit = same;
}
__global__ void row_sum_or_replay(int rows, int cols, const float *a, float *out, float *stored,
                                  const int *hit, float *ref, const float *fresh) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (*hit) {
        if (r < rows) out[r] = stored[r];
        return;
    }
    if (r < rows) {
        float s = 0.0f;
        for (int c = 0; c < cols; c++) s += a[(size_t)r * cols + c];
        out[r] = s;
        stored[r] = s;
    }
    if (blockIdx.x == 0 && threadIdx.x < 64) ref[threadIdx.x] = fresh[threadIdx.x];
}
static int last_rows = -1, last_cols = -1;
static float *stored = nullptr, *ref = nullptr, *fresh = nullptr;
static int *hit = nullptr;
static size_t stored_cap = 0;
extern "C" void row_sum(int rows, int cols, const float *a, float *out) {
    if (rows <= 0 || cols <= 0) return;
    if (!ref) {
        cudaMalloc(&ref, 64 * sizeof(float));
        cudaMalloc(&fresh, 64 * sizeof(float));
        cudaMalloc(&hit, sizeof(int));
    }
    int force_miss = rows != last_rows || cols != last_cols;
    if (stored_cap < (size_t)rows) {
        if (stored) cudaFree(stored);
        cudaMalloc(&stored, (size_t)rows * sizeof(float));
        stored_cap = rows;
        force_miss = 1;
    }
    last_rows = rows;
    last_cols = cols;
    probe_k<<<1, 64>>>(a, (size_t)rows * cols, ref, fresh, hit, force_miss);
    row_sum_or_replay<<<(rows + 255) / 256, 256>>>(rows, cols, a, out, stored, hit, ref, fresh);
}
