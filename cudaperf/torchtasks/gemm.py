"""Matrix products with epilogues: nn.Linear (weight (N, K), bias) or torch.matmul of two
inputs, followed by 0-3 element-wise steps (activation, scale, shift, per-column bias).

Guarantees: "naive" computes one output per thread (the dot product read straight from
global memory); "tiled_smem" stages 16x16 tiles of both operands in shared memory, loading
each tile with consecutive threads on consecutive addresses (the Linear weight is read along
K and transposed into shared memory). Out-of-range tile elements are zero-filled, so M, N, K
need not be multiples of 16.
"""
from __future__ import annotations

import random

from cudaperf.torchtasks._kit import HDR, SMOOTH, UNARY, cparams, module_source, record, sig_of, tests_from

FAMILY = "gemm_epilogue"
CATEGORY = "linalg"
SHAPES = [(1024, 4096, 4096), (2048, 2048, 2048), (512, 8192, 4096), (4096, 1024, 2048), (1024, 4096, 1024),
          (8192, 1024, 1024), (2048, 4096, 512), (256, 16384, 2048)]
SMALL = [{"batch_size": 1, "in_features": 1, "out_features": 1},
         {"batch_size": 3, "in_features": 17, "out_features": 33},
         {"batch_size": 37, "in_features": 70, "out_features": 19}]


def gemm_sources(entry: str, sig: list[dict], a: str, b: str, linear: bool, bias: str | None,
                 chain: str) -> list[tuple[str, str, str]]:
    """Variants computing out = epilogue(a @ B + bias) with B = b^T (linear) or b (matmul)."""
    bat = "b[(long long)n * K + k]" if linear else "b[(long long)k * N + n]"
    bpar = f", const float *__restrict__ bias" if bias else ""
    barg = f", {bias}" if bias else ""
    badd = "v += bias[n]; " if bias else ""
    epi = f"__device__ __forceinline__ float epilogue(float v) {{ {chain} return v; }}\n"
    setup = "    int M = batch_size, K = in_features, N = out_features;\n    if (M <= 0 || N <= 0) return;\n"
    naive = HDR + epi + f'''
__global__ void gemm_naive(int M, int N, int K, const float *a, const float *b{bpar}, float *out) {{
    int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
    if (n >= N || m >= M) return;
    float v = 0.0f;
    for (int k = 0; k < K; k++) v += a[(long long)m * K + k] * {bat};
    {badd}out[(long long)m * N + n] = epilogue(v);
}}
extern "C" void {entry}({cparams(sig)}) {{
{setup}    dim3 grid((N + 255) / 256, M);
    gemm_naive<<<grid, 256>>>(M, N, K, {a}, {b}{barg}, out);
}}
'''
    if linear:
        bload = ("        { int n = blockIdx.x * T + ty, k = t + tx;\n"
                 "          Bs[tx][ty] = (n < N && k < K) ? b[(long long)n * K + k] : 0.0f; }")
    else:
        bload = ("        { int n = blockIdx.x * T + tx, k = t + ty;\n"
                 "          Bs[ty][tx] = (n < N && k < K) ? b[(long long)k * N + n] : 0.0f; }")
    tiled = HDR + epi + f'''#define T 16
__global__ void gemm_tiled(int M, int N, int K, const float *__restrict__ a, const float *__restrict__ b{bpar},
                           float *__restrict__ out) {{
    __shared__ float As[T][T + 1], Bs[T][T + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int m = blockIdx.y * T + ty, n = blockIdx.x * T + tx;
    float v = 0.0f;
    for (int t = 0; t < K; t += T) {{
        As[ty][tx] = (m < M && t + tx < K) ? a[(long long)m * K + t + tx] : 0.0f;
{bload}
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < T; kk++) v += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }}
    if (m < M && n < N) {{ {badd}out[(long long)m * N + n] = epilogue(v); }}
}}
extern "C" void {entry}({cparams(sig)}) {{
{setup}    dim3 grid((N + T - 1) / T, (M + T - 1) / T), block(T, T);
    gemm_tiled<<<grid, block>>>(M, N, K, {a}, {b}{barg}, out);
}}
'''
    return [("naive", "one thread per output, dot product from global memory", naive),
            ("tiled_smem", "16x16 shared-memory tiles of both operands, coalesced tile loads", tiled)]


def generate(rng: random.Random) -> list[dict]:
    out, seen = [], set()
    dims = ["batch_size", "in_features", "out_features"]
    while len(out) < 220:
        kind = rng.choice(["linear", "linear", "linear_nobias", "matmul", "matmul_bias"])
        ops = rng.sample(SMOOTH, rng.choice([0, 1, 1, 2, 3]))
        shape = rng.choice(SHAPES)
        key = (kind, tuple(ops), shape)
        if key in seen:
            continue
        seen.add(key)
        consts = dict(zip(dims, shape))
        chain_t = [f"x = {UNARY[o][0]}" for o in ops]
        chain_c = " ".join(f"v = {UNARY[o][1]};" for o in ops)
        if kind.startswith("linear"):
            has_b = kind == "linear"
            inputs = [("x", ["batch_size", "in_features"], "uniform(-1, 1)")]
            params = [("linear_weight", "linear.weight", ["out_features", "in_features"],
                       "uniform(-1/sqrt(in_features), 1/sqrt(in_features))")]
            if has_b:
                params.append(("linear_bias", "linear.bias", ["out_features"],
                               "uniform(-1/sqrt(in_features), 1/sqrt(in_features))"))
            outputs = [("out", ["batch_size", "out_features"])]
            sig = sig_of(dims, inputs, params, outputs)
            variants = gemm_sources("linear_forward", sig, "x", "linear_weight", True,
                                    "linear_bias" if has_b else None, chain_c)
            module = module_source(init_args=["in_features", "out_features"],
                                   init_body=[f"self.linear = nn.Linear(in_features, out_features{'' if has_b else ', bias=False'})"],
                                   fwd_args=["x"], fwd_body=["x = self.linear(x)"] + chain_t + ["return x"], consts=consts,
                                   get_inputs=["torch.randn(batch_size, in_features)"],
                                   doc="Linear layer" + (" followed by " + ", ".join(ops) if ops else "") + ".")
            entry = "linear_forward"
        else:
            has_b = kind == "matmul_bias"
            inputs = [("A", ["batch_size", "in_features"], "uniform(-1, 1)"),
                      ("B", ["in_features", "out_features"], "uniform(-1/sqrt(in_features), 1/sqrt(in_features))")]
            params = [("bias", "bias", ["out_features"], "uniform(-1, 1)")] if has_b else []
            outputs = [("out", ["batch_size", "out_features"])]
            sig = sig_of(dims, inputs, params, outputs)
            variants = gemm_sources("matmul_forward", sig, "A", "B", False, "bias" if has_b else None, chain_c)
            body = ["x = torch.matmul(A, B)"] + (["x = x + self.bias"] if has_b else []) + chain_t + ["return x"]
            module = module_source(init_args=["out_features"] if has_b else [],
                                   init_body=["self.bias = nn.Parameter(torch.randn(out_features))"] if has_b else [],
                                   fwd_args=["A", "B"], fwd_body=body, consts=consts,
                                   get_inputs=["torch.randn(batch_size, in_features)", "torch.randn(in_features, out_features)"],
                                   doc="Matrix product" + (" plus bias" if has_b else "")
                                   + (" followed by " + ", ".join(ops) if ops else "") + ".")
            entry = "matmul_forward"
        name = f"{kind}_{'_'.join(ops) or 'plain'}_{'x'.join(map(str, shape))}"
        out.append(record(family=FAMILY, name=name, entry=entry, sizes=dims, inputs=inputs, params=params,
                          outputs=outputs, module=module, variants=variants, tests=tests_from(SMALL, consts),
                          tolerance={"rtol": 2e-3, "atol": 2e-4, "l2": 1e-3},
                          meta={"ops": [kind.split("_")[0]] + (["bias"] if kind == "matmul_bias" else []) + ops,
                                "difficulty": 3, "flops": "2*batch_size*in_features*out_features"}))
    return out
