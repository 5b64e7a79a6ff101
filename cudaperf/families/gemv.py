"""gemv family: dense matrix-vector products y = alpha*op(A)*x + beta*y.

Guarantees: 72 distinct tasks over element type (float, double), storage (row-/column-major),
op (A or A^T), update form (axpby, plain, accumulate) and shape class (square, tall, wide, each
written in its own naming style). Half of the layouts make each output a contiguous reduction
(warp/block per output wins), the other half make adjacent outputs adjacent in memory (the
naive kernel is already coalesced; staging x and splitting the reduction wins). Every variant
handles any m, n >= 1.
"""
from __future__ import annotations

import itertools
import random

FAMILY = "gemv"
CATEGORY = "linalg"
_HDR = "#include <cuda_runtime.h>\n"

# naming styles: entry stem, matrix, in-vector, out-vector, rows, cols, out index, red index
_STYLES = {
    "square": ("gemv", "A", "x", "y", "m", "n", "i", "j"),
    "tall": ("matvec", "mat", "vec", "res", "rows", "cols", "r", "c"),
    "wide": ("mv", "a", "u", "v", "nr", "nc", "row", "col"),
}
_PERF = {"square": (8192, 8192), "tall": (65536, 1024), "wide": (1024, 65536)}


def _p(name, ctype, role, shape=None, init=None, value=None):
    d = {"name": name, "ctype": ctype, "role": role}
    for k, v in (("shape", shape), ("init", init), ("value", value)):
        if v is not None:
            d[k] = v
    return d


def _task(T, layout, trans, form, shape):
    stem, A, X, Y, M, N, I, J = _STYLES[shape]
    pre = "s" if T == "float" else "d"
    entry = f"{pre}{stem}_{layout[0]}{trans.lower()}_{form}"
    out_len, red_len = (M, N) if trans == "N" else (N, M)
    lit0 = "0.0f" if T == "float" else "0.0"

    def acc(o, k, cast=False):
        r, c = (o, k) if trans == "N" else (k, o)
        s = "(size_t)" if cast else ""
        return f"{s}{r} * {N} + {c}" if layout == "row" else f"{r} + {s}{c} * {M}"

    contiguous = (layout == "row") == (trans == "N")
    scal = {"axpby": ["alpha", "beta"], "plain": [], "accum": ["alpha"]}[form]
    sig = [_p(M, "int", "size"), _p(N, "int", "size")]
    if "alpha" in scal:
        sig.append(_p("alpha", T, "scalar", init="uniform(-2, 2)"))
    sig += [_p(A, f"const {T}*", "in", f"{M}*{N}", "uniform(-1, 1)"),
            _p(X, f"const {T}*", "in", red_len, "uniform(-1, 1)")]
    if "beta" in scal:
        sig.append(_p("beta", T, "scalar", init="uniform(-2, 2)"))
    sig.append(_p(Y, f"{T}*", "out" if form == "plain" else "inout", out_len, "uniform(-1, 1)"
                  if form != "plain" else None))
    params = ", ".join(f"{p['ctype'].replace('*', '')} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)

    def epi(o, s):
        return {"axpby": f"{Y}[{o}] = alpha * {s} + beta * {Y}[{o}];",
                "plain": f"{Y}[{o}] = {s};",
                "accum": f"{Y}[{o}] += alpha * {s};"}[form]

    ref = (f"void {entry}({params}) {{\n"
           f"    for (int {I} = 0; {I} < {out_len}; {I}++) {{\n"
           f"        {T} sum = {lit0};\n"
           f"        for (int {J} = 0; {J} < {red_len}; {J}++)\n"
           f"            sum += {A}[{acc(I, J)}] * {X}[{J}];\n"
           f"        {epi(I, 'sum')}\n    }}\n}}\n")

    naive = _HDR + f'''
__global__ void {entry}_k({params}) {{
    int {I} = blockIdx.x * blockDim.x + threadIdx.x;
    if ({I} < {out_len}) {{
        {T} sum = {lit0};
        for (int {J} = 0; {J} < {red_len}; {J}++) sum += {A}[{acc(I, J, True)}] * {X}[{J}];
        {epi(I, 'sum')}
    }}
}}
extern "C" void {entry}({params}) {{
    if ({out_len} <= 0) return;
    {entry}_k<<<({out_len} + 255) / 256, 256>>>({args});
}}
'''
    variants = [{"name": "naive", "strategy": "one thread per output element", "source": naive}]
    if contiguous:
        warp = _HDR + f'''
__global__ void {entry}_warp({params}) {{
    long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (w >= {out_len}) return;  // whole warps exit together: no barrier or shuffle is split
    int {I} = (int)w;
    {T} sum = {lit0};
    for (int {J} = lane; {J} < {red_len}; {J} += 32) sum += {A}[{acc(I, J, True)}] * __ldg(&{X}[{J}]);
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
    if (lane == 0) {{ {epi(I, 'sum')} }}
}}
extern "C" void {entry}({params}) {{
    if ({out_len} <= 0) return;
    long long threads = (long long){out_len} * 32;
    {entry}_warp<<<(unsigned)((threads + 255) / 256), 256>>>({args});
}}
'''
        block = _HDR + f'''
__global__ void {entry}_blk({params}) {{
    __shared__ {T} part[8];
    int {I} = blockIdx.x;
    {T} sum = {lit0};
    for (int {J} = threadIdx.x; {J} < {red_len}; {J} += blockDim.x) sum += {A}[{acc(I, J, True)}] * __ldg(&{X}[{J}]);
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {{
        {T} s = {lit0};
        for (int w = 0; w < 8; w++) s += part[w];
        {epi(I, 's')}
    }}
}}
extern "C" void {entry}({params}) {{
    if ({out_len} <= 0) return;
    {entry}_blk<<<{out_len}, 256>>>({args});
}}
'''
        variants += [
            {"name": "warp_shuffle", "strategy": "one warp per output, coalesced row reads, shuffle reduction", "source": warp},
            {"name": "block_reduce", "strategy": "one 256-thread block per output, warp shuffles then shared-memory combine", "source": block},
        ]
    else:
        tiled = _HDR + f'''
#define XT 256
__global__ void {entry}_xs({params}) {{
    __shared__ {T} xs[XT];
    int {I} = blockIdx.x * blockDim.x + threadIdx.x;
    bool live = {I} < {out_len};  // no early return: every thread must reach the barriers
    {T} sum = {lit0};
    for (int k0 = 0; k0 < {red_len}; k0 += XT) {{
        int cnt = min(XT, {red_len} - k0);
        if (threadIdx.x < cnt) xs[threadIdx.x] = {X}[k0 + threadIdx.x];
        __syncthreads();
        if (live) {{
#pragma unroll 4
            for (int kk = 0; kk < cnt; kk++) {{ int {J} = k0 + kk; sum += {A}[{acc(I, J, True)}] * xs[kk]; }}
        }}
        __syncthreads();
    }}
    if (live) {{ {epi(I, 'sum')} }}
}}
extern "C" void {entry}({params}) {{
    if ({out_len} <= 0) return;
    {entry}_xs<<<({out_len} + XT - 1) / XT, XT>>>({args});
}}
'''
        split = _HDR + f'''
__global__ void {entry}_split({params}) {{
    __shared__ {T} part[8][33];
    int {I} = blockIdx.x * 32 + threadIdx.x;
    {T} sum = {lit0};
    if ({I} < {out_len})
        for (int {J} = threadIdx.y; {J} < {red_len}; {J} += 8) sum += {A}[{acc(I, J, True)}] * __ldg(&{X}[{J}]);
    part[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && {I} < {out_len}) {{
        {T} s = {lit0};
        for (int w = 0; w < 8; w++) s += part[w][threadIdx.x];
        {epi(I, 's')}
    }}
}}
extern "C" void {entry}({params}) {{
    if ({out_len} <= 0) return;
    dim3 block(32, 8);
    {entry}_split<<<({out_len} + 31) / 32, block>>>({args});
}}
'''
        variants += [
            {"name": "tiled_smem", "strategy": "x staged through shared memory in 256-element chunks, unrolled inner loop", "source": tiled},
            {"name": "block_reduce", "strategy": "32 outputs x 8 reduction slices per block, fixed-order shared-memory combine", "source": split},
        ]
    pm, pn = _PERF[shape]
    tests = [{"name": "one", "sizes": {M: 1, N: 1}},
             {"name": "ragged", "sizes": {M: 37, N: 1001}},
             {"name": "ragged_tall", "sizes": {M: 1003, N: 19}},
             {"name": "perf", "sizes": {M: pm, N: pn}, "perf": True}]
    rec = {"task_id": f"c2cuda/{FAMILY}/{T}_{layout}_{trans.lower()}_{form}_{shape}",
           "track": "c2cuda", "entry": entry, "signature": sig, "reference": ref,
           "variants": variants, "tests": tests,
           "meta": {"flops": f"2*{M}*{N}", "source": "generated",
                    "knobs": {"dtype": T, "layout": layout, "op": trans, "form": form,
                              "shape": shape, "contiguous_reduction": contiguous}}}
    if T == "float":
        rec["tolerance"] = {"rtol": 2e-3, "atol": 1e-4, "l2": 1e-3}
    return rec


def generate(rng: random.Random) -> list[dict]:
    out = [_task(*k) for k in itertools.product(("float", "double"), ("row", "col"), ("N", "T"),
                                                ("axpby", "plain", "accum"),
                                                ("square", "tall", "wide"))]
    rng.shuffle(out)
    return out
