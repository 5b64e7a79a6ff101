"""1-D signal convolution and correlation with filter widths 3..31, 'valid' and 'same' padding.

Guarantees: every task is a distinct serial C program filtering one signal (or a batch of
signals stored row after row) with a fixed-width filter `w` (width a literal constant of the
program), either as correlation `y[i] = sum_t x[i+t] w[t]` or true convolution (flipped taps),
with 'valid' output (n - K + 1 points, so tests keep n >= K) or 'same' output (n points, zero
padding, centre tap at K/2). CUDA variants: naive one thread per output, a shared-memory tile of
the input plus filter, and 4-outputs-per-thread register blocking with the filter in shared
memory; all handle the smallest valid n, ragged tiles and batch rows independently.
"""
from __future__ import annotations

import random

from cudaperf.families._d2kit import FLOAT_TOL, P, T, TYPES, V, blocks, cargs, cparams, record

FAMILY = "conv1d"
CATEGORY = "conv"

WIDTHS = (3, 5, 7, 9, 15, 21, 31)
ENTRY = {"corr": ["xcorr1d", "correlate", "fir_corr"], "conv": ["conv1d", "convolve", "fir_filter"]}


def _tap(op, K, t):
    """Filter index used with input offset t."""
    return t if op == "corr" else f"{K - 1} - {t}"


def _reference(entry, sig, op, mode, K, batched, ty):
    H = K // 2
    nout = f"n - {K - 1}" if mode == "valid" else "n"
    L = [f"void {entry}({cparams(sig)}) {{"]
    ind = "    "
    if batched:
        L.append(f"    for (int b = 0; b < nb; b++) {{")
        L.append(f"        const {ty.name} *xs = x + (long)b * n;")
        L.append(f"        {ty.name} *ys = y + (long)b * ({nout});")
        ind = "        "
        xs, ys = "xs", "ys"
    else:
        xs, ys = "x", "y"
    L.append(f"{ind}for (int i = 0; i < {nout}; i++) {{")
    L.append(f"{ind}    {ty.name} acc = {ty.zero};")
    L.append(f"{ind}    for (int t = 0; t < {K}; t++) {{")
    wi = "t" if op == "corr" else f"{K - 1} - t"
    if mode == "valid":
        L.append(f"{ind}        acc += {xs}[i + t] * w[{wi}];")
    else:
        L.append(f"{ind}        int j = i + t - {H};")
        L.append(f"{ind}        if (j >= 0 && j < n) acc += {xs}[j] * w[{wi}];")
    L.append(f"{ind}    }}")
    L.append(f"{ind}    {ys}[i] = acc;")
    L.append(f"{ind}}}")
    if batched:
        L.append("    }")
    L.append("}")
    return "\n".join(L)


def _variants(entry, sig, op, mode, K, batched, ty):
    t = ty.name
    ps, args = cparams(sig), cargs(sig)
    H = K // 2
    nout = f"(n - {K - 1})" if mode == "valid" else "n"
    nb = "nb" if batched else "1"
    wi = (lambda v: v) if op == "corr" else (lambda v: f"{K - 1} - ({v})")
    off = "0" if mode == "valid" else str(H)  # input index = out index + t - off

    def xval(row, j):  # value of input j (may be outside for 'same')
        if mode == "valid":
            return f"x[{row} + {j}]"
        return f"(({j}) >= 0 && ({j}) < n ? x[{row} + ({j})] : {ty.zero})"
    naive = f"""
__global__ void {entry}_k({ps}) {{
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long m = {nout};
    if (g >= (long long){nb} * m) return;
    long long b = g / m, i = g % m;
    long long row = b * n;
    {t} acc = {ty.zero};
    for (int t = 0; t < {K}; t++) {{
        long long j = i + t - {off};
        acc += {xval('row', 'j')} * w[{wi('t')}];
    }}
    y[b * m + i] = acc;
}}
extern "C" void {entry}({ps}) {{
    long long m = {nout};
    if (m <= 0 || {nb} <= 0) return;
    {entry}_k<<<{blocks(f'(long long){nb} * m')}, 256>>>({args});
}}
"""
    # tile: 256 outputs of one row need 256 + K - 1 consecutive inputs
    tiled = f"""
__global__ void {entry}_tile({ps}) {{
    __shared__ {t} xt[256 + {K - 1}];
    __shared__ {t} wt[{K}];
    long long m = {nout};
    long long b = blockIdx.y;
    long long i0 = (long long)blockIdx.x * 256;
    const {t} *xr = x + b * n;
    for (int s = threadIdx.x; s < 256 + {K - 1}; s += 256) {{
        long long j = i0 + s - {off};
        xt[s] = (j >= 0 && j < n) ? xr[j] : {ty.zero};
    }}
    if (threadIdx.x < {K}) wt[threadIdx.x] = w[{wi('threadIdx.x')}];
    __syncthreads();
    long long i = i0 + threadIdx.x;
    if (i < m) {{
        {t} acc = {ty.zero};
        #pragma unroll
        for (int t = 0; t < {K}; t++) acc += xt[threadIdx.x + t] * wt[t];
        y[b * m + i] = acc;
    }}
}}
extern "C" void {entry}({ps}) {{
    long long m = {nout};
    if (m <= 0 || {nb} <= 0) return;
    dim3 grid((unsigned)((m + 255) / 256), {nb});
    {entry}_tile<<<grid, 256>>>({args});
}}
"""
    # register blocking: 4 consecutive outputs per thread slide over K + 3 inputs
    regs = f"""
__global__ void __launch_bounds__(128) {entry}_rb({ps}) {{
    __shared__ {t} wt[{K}];
    for (int s = threadIdx.x; s < {K}; s += blockDim.x) wt[s] = w[{wi('s')}];
    __syncthreads();
    long long m = {nout};
    long long b = blockIdx.y;
    long long i0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i0 >= m) return;
    const {t} *__restrict__ xr = x + b * n;
    {t} win[{K + 3}];
    #pragma unroll
    for (int s = 0; s < {K + 3}; s++) {{
        long long j = i0 + s - {off};
        win[s] = (j >= 0 && j < n) ? __ldg(&xr[j]) : {ty.zero};
    }}
    #pragma unroll
    for (int r = 0; r < 4; r++) {{
        {t} acc = {ty.zero};
        #pragma unroll
        for (int t = 0; t < {K}; t++) acc += win[r + t] * wt[t];
        if (i0 + r < m) y[b * m + i0 + r] = acc;
    }}
}}
extern "C" void {entry}({ps}) {{
    long long m = {nout};
    if (m <= 0 || {nb} <= 0) return;
    dim3 grid((unsigned)((m + 511) / 512), {nb});
    {entry}_rb<<<grid, 128>>>({args});
}}
"""
    return [V("naive", "one thread per output sample, filter and input read from global memory", naive),
            V("tiled_smem", f"256 outputs per block from a shared-memory input tile of 256+{K - 1} "
              "samples (zero padded) and the filter in shared memory", tiled),
            V("register_blocking", "4 consecutive outputs per thread from a register window of "
              f"{K + 3} inputs, filter in shared memory, 128-thread blocks", regs)]


def generate(rng: random.Random) -> list[dict]:
    out = []
    combos = [(op, mode, K, b, tn) for op in ("corr", "conv") for mode in ("valid", "same")
              for K in WIDTHS for b in (False, True) for tn in ("float", "double")]
    rng.shuffle(combos)
    combos = sorted(combos[:84], key=lambda c: (c[0], c[1], c[2], c[3], c[4]))
    for op, mode, K, batched, tn in combos:
        ty = TYPES[tn]
        entry = f"{rng.choice(ENTRY[op])}_{mode}_k{K}{'_batch' if batched else ''}_{ty.tag}"
        m = f"n-{K - 1}" if mode == "valid" else "n"
        sig = []
        if batched:
            sig.append(P("nb", "int", "size"))
        sig += [P("n", "int", "size"),
                P("x", f"const {tn}*", "in", f"nb*n" if batched else "n", "uniform(-1, 1)"),
                P("w", f"const {tn}*", "in", str(K), "uniform(-1, 1)"),
                P("y", f"{tn}*", "out", f"nb*({m})" if batched else m)]
        ref = _reference(entry, sig, op, mode, K, batched, ty)
        edge = K if mode == "valid" else 1
        big = 1 << (25 if K <= 9 else 24)
        if batched:
            tests = [T("one", {"nb": 1, "n": edge}), T("short", {"nb": 3, "n": K + 1}),
                     T("odd", {"nb": 7, "n": 1003}),
                     T("perf", {"nb": big >> 16, "n": 1 << 16}, perf=True)]
        else:
            tests = [T("one", {"n": edge}), T("short", {"n": K + 1}), T("odd", {"n": 1003}),
                     T("mid", {"n": 100003}), T("perf", {"n": big}, perf=True)]
        out.append(record(FAMILY, f"{op}_{mode}_k{K}_{'batch' if batched else 'single'}_{ty.tag}",
                          entry, sig, ref, _variants(entry, sig, op, mode, K, batched, ty), tests,
                          {"op": op, "padding": mode, "width": K, "batched": batched, "dtype": tn},
                          flops=f"{2 * K}*{'nb*' if batched else ''}({m})",
                          tolerance=FLOAT_TOL if tn == "float" else None))
    return out
