"""Sliding-window statistics over a 1-D series: moving sum/mean/max/min/range/variance/RMS.

Guarantees: every task is a distinct serial C program computing, for each i, a statistic of the
window x[lo..hi] where the window is trailing (i-W+1..i) or centred (i-H..i+H) with a literal
width, truncated at the ends (the statistic uses only the points that exist). Element types are
float, double and (for sum/max/min/range, exact) int. Sequential recurrences such as
exponential smoothing are deliberately absent. CUDA variants: naive one thread per output, a
shared-memory tile with halo, and a grid-stride read-only-cache loop; all handle n = 1 and n
smaller than the window.
"""
from __future__ import annotations

import random

from cudaperf.families._d2kit import (FLOAT_TOL, P, T, TYPES, V, blocks, capped_blocks, cargs,
                                      cparams, record)

FAMILY = "moving_window"
CATEGORY = "stencil"

FOPS = ("mean", "sum", "max", "min", "range", "var", "rms")
IOPS = ("sum", "max", "min", "range")
WINDOWS = [("trailing", 8), ("trailing", 32), ("trailing", 128),
           ("centered", 5), ("centered", 17), ("centered", 65)]
ENTRY = {"mean": "moving_average", "sum": "rolling_sum", "max": "rolling_max", "min": "rolling_min",
         "range": "rolling_range", "var": "moving_variance", "rms": "moving_rms"}


def _stat(op, ty, V, sqrt):
    """(declarations, loop statements on value v, result expression) over j = lo..hi."""
    tn, z = ty.name, ty.zero
    if op in ("sum", "mean"):
        res = "acc" if op == "sum" else f"acc / ({tn})(hi - lo + 1)"
        return [f"{tn} acc = {z};"], [f"acc += {V('j')};"], res
    if op in ("max", "min", "range"):
        decl = [f"{tn} mx = {V('lo')}, mn = {V('lo')};"]
        loop = []
        if op != "min":
            loop.append(f"if ({V('j')} > mx) mx = {V('j')};")
        if op != "max":
            loop.append(f"if ({V('j')} < mn) mn = {V('j')};")
        return decl, loop, {"max": "mx", "min": "mn", "range": "mx - mn"}[op]
    if op == "rms":
        return [f"{tn} ss = {z};"], [f"ss += {V('j')} * {V('j')};"], f"{sqrt}(ss / ({tn})(hi - lo + 1))"
    # var: two passes over the window
    return ([f"{tn} m = {z};", f"for (int j = lo; j <= hi; j++) m += {V('j')};",
             f"m /= ({tn})(hi - lo + 1);", f"{tn} q = {z};"],
            [f"q += ({V('j')} - m) * ({V('j')} - m);"], f"q / ({tn})(hi - lo + 1)")


def _bounds(wt, W, n="n", i="i"):
    if wt == "trailing":
        return [f"int lo = {i} - {W - 1} < 0 ? 0 : {i} - {W - 1};", f"int hi = {i};"]
    H = W // 2
    return [f"int lo = {i} - {H} < 0 ? 0 : {i} - {H};",
            f"int hi = {i} + {H} > {n} - 1 ? {n} - 1 : {i} + {H};"]


def _body(op, ty, V, sqrt, wt, W, ind, store):
    decl, loop, res = _stat(op, ty, V, sqrt)
    L = [ind + s for s in _bounds(wt, W)] + [ind + d for d in decl]
    L.append(f"{ind}for (int j = lo; j <= hi; j++) {{ {' '.join(loop)} }}")
    L.append(f"{ind}{store} = {res};")
    return L


def _reference(entry, sig, op, wt, W, ty):
    L = [f"void {entry}({cparams(sig)}) {{", "    for (int i = 0; i < n; i++) {"]
    L += _body(op, ty, lambda j: f"x[{j}]", "sqrt", wt, W, "        ", "y[i]")
    L += ["    }", "}"]
    return "\n".join(L)


def _variants(entry, sig, op, wt, W, ty):
    tn = ty.name
    ps, args = cparams(sig), cargs(sig)
    sq = ty.fn("sqrt")
    nb = "\n".join(_body(op, ty, lambda j: f"x[{j}]", sq, wt, W, "    ", "y[i]"))
    naive = f"""
__global__ void {entry}_k({ps}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
{nb}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_k<<<{blocks('n')}, 256>>>({args});
}}
"""
    left = W - 1 if wt == "trailing" else W // 2
    right = 0 if wt == "trailing" else W // 2
    TL = 256 + left + right
    tb = "\n".join(_body(op, ty, lambda j: f"xt[{j} - base]", sq, wt, W, "        ", "y[i]"))
    tiled = f"""
__global__ void {entry}_tile({ps}) {{
    __shared__ {tn} xt[{TL}];
    int base = blockIdx.x * 256 - {left};
    for (int s = threadIdx.x; s < {TL}; s += 256) {{
        int g = base + s;
        xt[s] = (g >= 0 && g < n) ? x[g] : {ty.zero};
    }}
    __syncthreads();
    int i = blockIdx.x * 256 + threadIdx.x;
    if (i < n) {{
{tb}
    }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_tile<<<{blocks('n')}, 256>>>({args});
}}
"""
    gb = "\n".join(_body(op, ty, lambda j: f"__ldg(&x[{j}])", sq, wt, W, "        ", "y[i]"))
    rps = ps.replace(f"const {tn} *x", f"const {tn} *__restrict__ x").replace(
        f"{tn} *y", f"{tn} *__restrict__ y")
    gs = f"""
__global__ void __launch_bounds__(512) {entry}_gs({rps}) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {{
{gb}
    }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_gs<<<{capped_blocks('n', 512)}, 512>>>({args});
}}
"""
    return [V("naive", "one thread per output, window read from global memory", naive),
            V("tiled_smem", f"256 outputs per block from a shared-memory tile of {TL} samples "
              "(window halo included)", tiled),
            V("ldg_restrict", "grid-stride loop, 512-thread blocks, __restrict__ pointers and "
              "read-only cache loads", gs)]


def generate(rng: random.Random) -> list[dict]:
    combos = [(op, wt, W, tn) for tn in ("float", "double", "int")
              for op in (FOPS if tn != "int" else IOPS) for wt, W in WINDOWS]
    rng.shuffle(combos)
    combos = sorted(combos[:84], key=lambda c: (c[3], FOPS.index(c[0]), c[1], c[2]))
    out = []
    for op, wt, W, tn in combos:
        ty = TYPES[tn]
        entry = f"{ENTRY[op]}_{wt}_w{W}_{ty.tag}"
        init = "randint(-1000, 1000)" if tn == "int" else "uniform(-1, 1)"
        sig = [P("n", "int", "size"), P("x", f"const {tn}*", "in", "n", init),
               P("y", f"{tn}*", "out", "n")]
        ref = _reference(entry, sig, op, wt, W, ty)
        big = min(1 << 26, (1 << 31) // W) if tn != "double" else min(1 << 25, (1 << 31) // W)
        big = min(big, int(1.2e9 // W))  # serial C cost ~ n * W
        tests = [T("one", {"n": 1}), T("short", {"n": W // 2 + 1}), T("odd", {"n": 1003}),
                 T("perf", {"n": big}, perf=True)]
        out.append(record(FAMILY, f"{op}_{wt}_w{W}_{ty.tag}", entry, sig, ref,
                          _variants(entry, sig, op, wt, W, ty), tests,
                          {"op": op, "window": wt, "width": W, "dtype": tn},
                          flops=f"{W}*n",
                          tolerance=FLOAT_TOL if tn == "float" else None))
    return out
