"""gemv family: dense matrix-vector products y = alpha*op(A)*x + beta*y.

Guarantees: 84 distinct tasks sampled from element type (float, double) x storage (row-/
column-major) x op (A or A^T) x update form (axpby, plain, accumulate) x packed or BLAS leading
dimension (lda) x unit or BLAS strides on x and y (incx, incy); each gets a shape class
(square, tall, wide) for its perf size. Half of the layouts make each output a contiguous reduction
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


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper


def _task(T, layout, trans, form, ld, inc, shape):
    stem, A, X, Y, M, N, I, J = _STYLES[shape]
    pre = "s" if T == "float" else "d"
    entry = f"{pre}{stem}_{layout[0]}{trans.lower()}_{form}{'_lda' if ld else ''}{'_inc' if inc else ''}"
    LDA = "lda" if ld else (N if layout == "row" else M)

    def xat(j, cast=""):
        return f"{X}[{cast}{j} * incx]" if inc else f"{X}[{j}]"

    def yat(i):
        return f"{Y}[{i} * incy]" if inc else f"{Y}[{i}]"
    out_len, red_len = (M, N) if trans == "N" else (N, M)
    lit0 = "0.0f" if T == "float" else "0.0"

    def acc(o, k, cast=False):
        r, c = (o, k) if trans == "N" else (k, o)
        s = "(size_t)" if cast else ""
        return f"{s}{r} * {LDA} + {c}" if layout == "row" else f"{r} + {s}{c} * {LDA}"

    contiguous = (layout == "row") == (trans == "N")
    scal = {"axpby": ["alpha", "beta"], "plain": [], "accum": ["alpha"]}[form]
    sig = [_p(M, "int", "size"), _p(N, "int", "size")]
    if ld:
        sig.append(_p("lda", "int", "size"))
    if inc:
        sig += [_p("incx", "int", "size"), _p("incy", "int", "size")]
    if "alpha" in scal:
        sig.append(_p("alpha", T, "scalar", init="uniform(-2, 2)"))
    a_shape = (f"{M}*lda" if layout == "row" else f"lda*{N}") if ld else f"{M}*{N}"
    sig += [_p(A, f"const {T}*", "in", a_shape, "uniform(-1, 1)"),
            _p(X, f"const {T}*", "in", f"({red_len}-1)*incx+1" if inc else red_len, "uniform(-1, 1)")]
    if "beta" in scal:
        sig.append(_p("beta", T, "scalar", init="uniform(-2, 2)"))
    # a strided y keeps the elements between its entries, so it is read-write even for y = Ax
    y_out = form == "plain" and not inc
    sig.append(_p(Y, f"{T}*", "out" if y_out else "inout", f"({out_len}-1)*incy+1" if inc else out_len,
                  None if y_out else "uniform(-1, 1)"))
    params = ", ".join(f"{p['ctype'].replace('*', '')} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)

    def epi(o, s):
        return {"axpby": f"{yat(o)} = alpha * {s} + beta * {yat(o)};",
                "plain": f"{yat(o)} = {s};",
                "accum": f"{yat(o)} += alpha * {s};"}[form]

    ref = (f"void {entry}({params}) {{\n"
           f"    for (int {I} = 0; {I} < {out_len}; {I}++) {{\n"
           f"        {T} sum = {lit0};\n"
           f"        for (int {J} = 0; {J} < {red_len}; {J}++)\n"
           f"            sum += {A}[{acc(I, J)}] * {xat(J)};\n"
           f"        {epi(I, 'sum')}\n    }}\n}}\n")

    naive = _HDR + f'''
__global__ void {entry}_k({params}) {{
    int {I} = blockIdx.x * blockDim.x + threadIdx.x;
    if ({I} < {out_len}) {{
        {T} sum = {lit0};
        for (int {J} = 0; {J} < {red_len}; {J}++) sum += {A}[{acc(I, J, True)}] * {xat(J, "(size_t)")};
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
    for (int {J} = lane; {J} < {red_len}; {J} += 32) sum += {A}[{acc(I, J, True)}] * __ldg(&{xat(J, "(size_t)")});
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
    for (int {J} = threadIdx.x; {J} < {red_len}; {J} += blockDim.x) sum += {A}[{acc(I, J, True)}] * __ldg(&{xat(J, "(size_t)")});
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
        if (threadIdx.x < cnt) xs[threadIdx.x] = {xat("(k0 + threadIdx.x)", "(size_t)")};
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
        for (int {J} = threadIdx.y; {J} < {red_len}; {J} += 8) sum += {A}[{acc(I, J, True)}] * __ldg(&{xat(J, "(size_t)")});
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

    def sizes(m, n, pad):
        d = {M: m, N: n}
        if ld:
            d["lda"] = (n if layout == "row" else m) + pad
        if inc:
            d.update(incx=2 + pad % 2, incy=3)
        return d
    if inc:  # strided vectors: keep the perf buffers near the packed ones
        pm, pn = (pm // 2, pn) if pm >= pn else (pm, pn // 2)
    tests = [{"name": "one", "sizes": sizes(1, 1, 0)},
             {"name": "ragged", "sizes": sizes(37, 1001, 3)},
             {"name": "ragged_tall", "sizes": sizes(1003, 19, 1)},
             {"name": "perf", "sizes": sizes(pm, pn, 16), "perf": True}]
    rec = {"task_id": f"c2cuda/{FAMILY}/{T}_{layout}_{trans.lower()}_{form}{'_lda' if ld else ''}{'_inc' if inc else ''}_{shape}",
           "track": "c2cuda", "entry": entry, "signature": sig, "reference": ref,
           "variants": variants, "tests": tests,
           "meta": {"flops": f"2*{M}*{N}", "source": "generated",
                    "knobs": {"dtype": T, "layout": layout, "op": trans, "form": form,
                              "lda": ld, "strided_vectors": inc, "shape": shape,
                              "contiguous_reduction": contiguous}}}
    if ld or inc:
        sz = 4 if T == "float" else 8
        rec["meta"]["min_bytes"] = f"{sz}*({M}*{N}+{M}+{N}+{out_len if form != 'plain' else 0})"
    if T == "float":
        rec["tolerance"] = {"rtol": 2e-3, "atol": 1e-4, "l2": 1e-3}
    return rec


def generate(rng: random.Random) -> list[dict]:
    combos = list(itertools.product(("float", "double"), ("row", "col"), ("N", "T"), ("axpby", "plain", "accum"),
                                    (False, True), (False, True)))
    combos = rng.sample(combos, 84)
    return [_task(*c, ("square", "tall", "wide")[i % 3]) for i, c in enumerate(combos)]
