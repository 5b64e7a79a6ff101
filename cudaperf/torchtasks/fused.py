"""Level-2 style fused sequences: Linear -> element-wise steps -> reduction over the features
(sum, mean, max, min; keepdim) -> optional element-wise step.

Guarantees: "naive" gives each row to one thread (all N dot products serially); "row_block"
gives each row to a 256-thread block that stages the input row in shared memory (dynamic,
K floats; tasks keep K <= 8192 so it fits the default 48 KB), lets each warp compute whole
dot products with coalesced weight reads and a shuffle reduction, and combines the warps'
partial reductions in shared memory.
"""
from __future__ import annotations

import random

from cudaperf.torchtasks._kit import CUDA_REDUCE, HDR, SMOOTH, UNARY, cparams, module_source, record, sig_of, tests_from

FAMILY = "fused_linear_reduce"
CATEGORY = "fused"
SHAPES = [(4096, 4096, 1024), (2048, 8192, 1024), (8192, 1024, 2048), (1024, 4096, 4096), (16384, 512, 512)]
SMALL = [{"batch_size": 1, "in_features": 1, "out_features": 1},
         {"batch_size": 3, "in_features": 45, "out_features": 70},
         {"batch_size": 37, "in_features": 300, "out_features": 19}]
RED = {"sum": ("torch.sum(x, dim=1, keepdim=True)", "sum", "acc", "0.0f"),
       "mean": ("torch.mean(x, dim=1, keepdim=True)", "sum", "acc / (float)N", "0.0f"),
       "max": ("torch.amax(x, dim=1, keepdim=True)", "max", "acc", "-INFINITY"),
       "min": ("torch.amin(x, dim=1, keepdim=True)", "min", "acc", "INFINITY")}
COMB = {"sum": "{a} + {b}", "max": "fmaxf({a}, {b})", "min": "fminf({a}, {b})"}


def sources(sig, red, chain, post):
    kind, fin, ident = RED[red][1], RED[red][2], RED[red][3]
    c = lambda a, b: COMB[kind].format(a=a, b=b)
    pre = (HDR + f"__device__ __forceinline__ float epi(float v) {{ {chain} return v; }}\n"
           f"__device__ __forceinline__ float post(float v) {{ {post} return v; }}\n")
    setup = "    int M = batch_size, K = in_features, N = out_features;\n    if (M <= 0 || N <= 0) return;\n"
    args = "x, linear_weight, linear_bias, out"
    naive = pre + f'''
__global__ void fused_naive(int M, int N, int K, const float *x, const float *w, const float *b, float *out) {{
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= M) return;
    float acc = {ident};
    for (int n = 0; n < N; n++) {{
        float v = b[n];
        for (int k = 0; k < K; k++) v += x[(long long)m * K + k] * w[(long long)n * K + k];
        v = epi(v);
        acc = {c('acc', 'v')};
    }}
    out[m] = post({fin});
}}
extern "C" void fused_forward({cparams(sig)}) {{
{setup}    fused_naive<<<(M + 127) / 128, 128>>>(M, N, K, {args});
}}
'''
    opt = pre + CUDA_REDUCE + f'''
__global__ void fused_row(int M, int N, int K, const float *__restrict__ x, const float *__restrict__ w,
                          const float *__restrict__ b, float *__restrict__ out) {{
    extern __shared__ float xs[];
    long long m = blockIdx.x;
    for (int k = threadIdx.x; k < K; k += blockDim.x) xs[k] = x[m * K + k];
    __syncthreads();
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    float acc = {ident};
    for (int n = warp; n < N; n += nwarps) {{
        const float *wr = w + (long long)n * K;
        float v = 0.0f;
        for (int k = lane; k < K; k += 32) v += xs[k] * wr[k];
        v = warp_sum(v);
        v = epi(v + b[n]);
        acc = {c('acc', 'v')};
    }}
    // every lane of a warp holds the same value: only lane 0 may contribute to a sum
    acc = block_{kind}(lane == 0 ? acc : {ident});
    if (threadIdx.x == 0) out[m] = post({fin});
}}
extern "C" void fused_forward({cparams(sig)}) {{
{setup}    fused_row<<<M, 256, (size_t)(K > 0 ? K : 1) * sizeof(float)>>>(M, N, K, {args});
}}
'''
    return [("naive", "one thread per row, serial dot products", naive),
            ("row_block", "block per row, input row in shared memory, warp per output column, block reduction", opt)]


def generate(rng: random.Random) -> list[dict]:
    out, seen = [], set()
    dims = ["batch_size", "in_features", "out_features"]
    while len(out) < 90:
        red = rng.choice(list(RED))
        ops = rng.sample(SMOOTH, rng.choice([1, 1, 2]))
        post = rng.sample(SMOOTH, rng.choice([0, 1]))
        shape = rng.choice(SHAPES)
        key = (red, tuple(ops), tuple(post), shape)
        if key in seen:
            continue
        seen.add(key)
        consts = dict(zip(dims, shape))
        inputs = [("x", ["batch_size", "in_features"], "uniform(-1, 1)")]
        params = [("linear_weight", "linear.weight", ["out_features", "in_features"],
                   "uniform(-1/sqrt(in_features), 1/sqrt(in_features))"),
                  ("linear_bias", "linear.bias", ["out_features"], "uniform(-1/sqrt(in_features), 1/sqrt(in_features))")]
        outputs = [("out", ["batch_size", "1"])]
        sig = sig_of(dims, inputs, params, outputs)
        body = (["x = self.linear(x)"] + [f"x = {UNARY[o][0]}" for o in ops] + [f"x = {RED[red][0]}"]
                + [f"x = {UNARY[o][0]}" for o in post] + ["return x"])
        module = module_source(init_args=["in_features", "out_features"],
                               init_body=["self.linear = nn.Linear(in_features, out_features)"],
                               fwd_args=["x"], fwd_body=body, consts=consts,
                               get_inputs=["torch.randn(batch_size, in_features)"],
                               doc="Linear, " + ", ".join(ops) + f", {red} over features" + (", " + post[0] if post else "") + ".")
        steps = ["linear"] + ops + [red] + post
        out.append(record(family=FAMILY, name="_".join(steps) + "_" + "x".join(map(str, shape)), entry="fused_forward",
                          sizes=dims, inputs=inputs, params=params, outputs=outputs, module=module,
                          variants=sources(sig, red, " ".join(f"v = {UNARY[o][1]};" for o in ops),
                                           " ".join(f"v = {UNARY[o][1]};" for o in post)),
                          tests=tests_from(SMALL, consts), tolerance={"rtol": 2e-3, "atol": 2e-4, "l2": 1e-3},
                          meta={"ops": steps, "difficulty": 3, "flops": "2*batch_size*in_features*out_features"}))
    return out
