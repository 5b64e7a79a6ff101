"""Shared pieces of the torch2cuda generators: element-wise op tables, CUDA code builders, records.

Guarantees: every op in `UNARY` has a PyTorch form and a CUDA form that compute the same
function (up to float rounding); the CUDA builders bound-check every global access and use
64-bit offsets for flattened indices; `record` produces a dict that `task_from_dict` accepts,
with sizes first, then forward inputs, then module parameters (flattened, in
`named_parameters` order), then outputs, and meta entries (`inputs`, `parameters`, `outputs`,
`shapes`) that `cudaperf.torchtasks.runtime` uses to run the module on the harness's buffers.
"""
from __future__ import annotations

from typing import Any

HDR = "#include <cuda_runtime.h>\n#include <math.h>\n"
BLOCK = 256

# name -> (torch expression of tensor `x`, CUDA expression of float `v`); continuous functions
# only in `SMOOTH` (safe after reductions, where rounding may move a value across a kink point
# by an ulp without changing the result by more than an ulp).
UNARY: dict[str, tuple[str, str]] = {
    "relu": ("torch.relu(x)", "fmaxf(v, 0.0f)"),
    "leaky_relu": ("F.leaky_relu(x, negative_slope=0.01)", "(v > 0.0f ? v : 0.01f * v)"),
    "leaky_relu02": ("F.leaky_relu(x, negative_slope=0.2)", "(v > 0.0f ? v : 0.2f * v)"),
    "gelu": ("F.gelu(x)", "(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)))"),
    "gelu_tanh": ("F.gelu(x, approximate='tanh')",
                  "(0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v))))"),
    "sigmoid": ("torch.sigmoid(x)", "(1.0f / (1.0f + expf(-v)))"),
    "tanh": ("torch.tanh(x)", "tanhf(v)"),
    "silu": ("F.silu(x)", "(v / (1.0f + expf(-v)))"),
    "softplus": ("F.softplus(x)", "(v > 20.0f ? v : log1pf(expf(v)))"),
    "elu": ("F.elu(x, alpha=1.0)", "(v > 0.0f ? v : expm1f(v))"),
    "selu": ("torch.selu(x)", "(1.0507009873554805f * (v > 0.0f ? v : 1.6732632423543772f * expm1f(v)))"),
    "celu": ("F.celu(x, alpha=0.5)", "(fmaxf(v, 0.0f) + fminf(0.0f, 0.5f * expm1f(v / 0.5f)))"),
    "hardtanh": ("F.hardtanh(x, min_val=-1.0, max_val=1.0)", "fminf(fmaxf(v, -1.0f), 1.0f)"),
    "hardsigmoid": ("F.hardsigmoid(x)", "(fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f)"),
    "hardswish": ("F.hardswish(x)", "(v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f)"),
    "mish": ("F.mish(x)", "(v * tanhf(v > 20.0f ? v : log1pf(expf(v))))"),
    "relu6": ("F.relu6(x)", "fminf(fmaxf(v, 0.0f), 6.0f)"),
    "softsign": ("F.softsign(x)", "(v / (1.0f + fabsf(v)))"),
    "tanhshrink": ("F.tanhshrink(x)", "(v - tanhf(v))"),
    "logsigmoid": ("F.logsigmoid(x)", "(fminf(v, 0.0f) - log1pf(expf(-fabsf(v))))"),
    "softshrink": ("F.softshrink(x, 0.5)", "(v > 0.5f ? v - 0.5f : (v < -0.5f ? v + 0.5f : 0.0f))"),
    "hardshrink": ("F.hardshrink(x, 0.5)", "(fabsf(v) > 0.5f ? v : 0.0f)"),
    "square": ("x * x", "(v * v)"),
    "abs": ("torch.abs(x)", "fabsf(v)"),
    "sin": ("torch.sin(x)", "sinf(v)"),
    "erf": ("torch.erf(x)", "erff(v)"),
    "scale2": ("x * 2.0", "(v * 2.0f)"),
    "scale05": ("x * 0.5", "(v * 0.5f)"),
    "add1": ("x + 1.0", "(v + 1.0f)"),
    "sub05": ("x - 0.5", "(v - 0.5f)"),
    "clamp": ("torch.clamp(x, min=-0.5, max=0.5)", "fminf(fmaxf(v, -0.5f), 0.5f)"),
    "div3": ("x / 3.0", "(v / 3.0f)"),
}
ACTIVATIONS = ["relu", "leaky_relu", "leaky_relu02", "gelu", "gelu_tanh", "sigmoid", "tanh", "silu",
               "softplus", "elu", "selu", "celu", "hardtanh", "hardsigmoid", "hardswish", "mish", "relu6",
               "softsign", "tanhshrink", "logsigmoid", "softshrink", "hardshrink"]
SMOOTH = ["relu", "gelu", "gelu_tanh", "sigmoid", "tanh", "silu", "softplus", "elu", "selu", "mish",
          "hardtanh", "hardswish", "relu6", "leaky_relu", "softsign", "logsigmoid", "square", "scale2",
          "scale05", "add1", "sub05", "clamp", "div3", "abs", "erf", "sin", "celu"]

TORCH_HDR = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

CUDA_REDUCE = r'''
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_min(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Block-wide reductions; blockDim.x must be a multiple of 32 and every thread must call them.
// The leading barrier keeps one call's shared slots from being overwritten by the next.
#define BLOCK_REDUCE(NAME, WARP, IDENT)                                          \
__device__ float NAME(float v) {                                                 \
    __shared__ float sh[33];                                                     \
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5; \
    v = WARP(v);                                                                 \
    __syncthreads();                                                             \
    if (lane == 0) sh[w] = v;                                                    \
    __syncthreads();                                                             \
    if (w == 0) { v = lane < nw ? sh[lane] : (IDENT); v = WARP(v); if (lane == 0) sh[32] = v; } \
    __syncthreads();                                                             \
    return sh[32];                                                               \
}
BLOCK_REDUCE(block_sum, warp_sum, 0.0f)
BLOCK_REDUCE(block_max, warp_max, -INFINITY)
BLOCK_REDUCE(block_min, warp_min, INFINITY)
'''

IDENT = {"sum": "0.0f", "max": "-INFINITY", "min": "INFINITY"}
COMBINE = {"sum": "{a} + {b}", "max": "fmaxf({a}, {b})", "min": "fminf({a}, {b})"}


def chain_torch(ops: list[str]) -> list[str]:
    """forward() lines applying each unary op of `ops` to tensor `x` in turn."""
    return [f"x = {UNARY[o][0]}" for o in ops]


def chain_cuda(ops: list[str]) -> str:
    """CUDA statements applying `ops` to float `v` in turn."""
    return " ".join(f"v = {UNARY[o][1]};" for o in ops)


def prod(dims: list[str]) -> str:
    return "*".join(dims) if dims else "1"


def cparams(sig: list[dict]) -> str:
    out = []
    for p in sig:
        out.append(f"{p['ctype']} {p['name']}")
    return ", ".join(out)


def cargs(sig: list[dict]) -> str:
    return ", ".join(p["name"] for p in sig)


def record(*, family: str, name: str, entry: str, sizes: list[str], inputs: list[tuple],
           params: list[tuple], outputs: list[tuple], module: str, variants: list[tuple],
           tests: list[dict], tolerance: dict | None = None, meta: dict | None = None) -> dict[str, Any]:
    """A torch2cuda task record.

    inputs: (name, dims, init[, ctype]); params: (c name, module param name, dims, init);
    outputs: (name, dims[, ctype]); dims are lists of size expressions; variants: (name,
    strategy, source) with "naive" first.
    """
    sig: list[dict] = [{"name": s, "ctype": "int", "role": "size"} for s in sizes]
    shapes: dict[str, list[str]] = {}
    for inp in inputs:
        n, dims, init = inp[:3]
        ct = inp[3] if len(inp) > 3 else "float"
        sig.append({"name": n, "ctype": f"const {ct}*", "role": "in", "shape": prod(dims), "init": init})
        shapes[n] = list(dims)
    pmap = {}
    for cn, mn, dims, init in params:
        sig.append({"name": cn, "ctype": "const float*", "role": "in", "shape": prod(dims), "init": init})
        shapes[cn] = list(dims)
        pmap[cn] = mn
    for out in outputs:
        n, dims = out[:2]
        ct = out[2] if len(out) > 2 else "float"
        sig.append({"name": n, "ctype": f"{ct}*", "role": "out", "shape": prod(dims)})
        shapes[n] = list(dims)
    m = dict(meta or {})
    m.update({"inputs": [i[0] for i in inputs], "parameters": pmap, "outputs": [o[0] for o in outputs],
              "shapes": shapes, "source": "generated"})
    return {
        "task_id": f"torch2cuda/{family}/{name}", "track": "torch2cuda", "family": family, "entry": entry,
        "signature": sig, "reference": module,
        "variants": [{"name": vn, "strategy": st, "source": src} for vn, st, src in variants],
        "tests": tests, "tolerance": tolerance or {}, "split": "train", "meta": m,
    }


def sig_of(rec_sizes: list[str], inputs: list[tuple], params: list[tuple], outputs: list[tuple]) -> list[dict]:
    """The C parameter list of `record` (same order), for writing extern "C" entries."""
    sig = [{"name": s, "ctype": "int"} for s in rec_sizes]
    sig += [{"name": i[0], "ctype": f"const {i[3] if len(i) > 3 else 'float'}*"} for i in inputs]
    sig += [{"name": p[0], "ctype": "const float*"} for p in params]
    sig += [{"name": o[0], "ctype": f"{o[2] if len(o) > 2 else 'float'}*"} for o in outputs]
    return sig


def module_source(*, init_args: list[str], init_body: list[str], fwd_args: list[str], fwd_body: list[str],
                  consts: dict[str, Any], get_inputs: list[str], doc: str) -> str:
    """KernelBench-format module text: Model, module-level sizes, get_inputs, get_init_inputs."""
    L = [TORCH_HDR, "", "class Model(nn.Module):", f'    """{doc}"""',
         f"    def __init__(self{''.join(', ' + a for a in init_args)}):", "        super().__init__()"]
    L += [f"        {b}" for b in init_body]
    L += ["", f"    def forward(self, {', '.join(fwd_args)}):"]
    L += [f"        {b}" for b in fwd_body]
    L += [""]
    L += [f"{k} = {v!r}" for k, v in consts.items()]
    L += ["", "", "def get_inputs():", f"    return [{', '.join(get_inputs)}]", "", "",
          "def get_init_inputs():", f"    return [{', '.join(init_args)}]", ""]
    return "\n".join(L)


def tests_from(small: list[dict], perf: dict) -> list[dict]:
    out = [{"name": f"small{i}", "sizes": s} for i, s in enumerate(small)]
    out.append({"name": "perf", "sizes": perf, "perf": True})
    return out


def grid1d(n: str, block: int = BLOCK) -> str:
    return f"(unsigned)(((long long)({n}) + {block - 1}) / {block})"
