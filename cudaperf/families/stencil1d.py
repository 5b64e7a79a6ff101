"""1-D weighted stencils (3/5/7/9 points) with periodic, clamped, zero-padded or fixed boundaries.

Guarantees: every task is a distinct serial C program `out[i] = sum_k w_k * in[i + k]` over a
radius R in 1..4, in float or double; weights come from an input array, from literal binomial
constants, or from symmetric scalar coefficients. The boundary rule is applied identically by the
reference and by every CUDA variant (naive, shared-memory tile with halo, grid-stride read-only
loads), each of which handles n = 1, n not a multiple of the block and n < R.
"""
from __future__ import annotations

import random

from cudaperf.families._d2kit import (P, T, TYPES, V, blocks, capped_blocks, cargs, cparams,
                                      record)

FAMILY = "stencil1d"
CATEGORY = "stencil"

BINOMIAL = {1: [1, 2, 1], 2: [1, 4, 6, 4, 1], 3: [1, 6, 15, 20, 15, 6, 1],
            4: [1, 8, 28, 56, 70, 56, 28, 8, 1]}
BCS = ("periodic", "clamped", "zero", "fixed")
MODES = ("array", "literal", "symmetric")
NAMES = {"array": ["stencil1d", "apply_stencil", "filter_taps", "weighted_stencil"],
         "literal": ["binomial_smooth", "smooth1d", "blur_line", "diffuse1d"],
         "symmetric": ["sym_stencil", "fd_stencil", "central_stencil", "stencil_sym"]}


def _map_c(bc: str, j: str, n: str) -> list[str]:
    """C statements mapping index variable j into range for the boundary rule."""
    if bc == "periodic":
        return [f"while ({j} < 0) {j} += {n};", f"while ({j} >= {n}) {j} -= {n};"]
    if bc in ("clamped", "fixed"):
        return [f"if ({j} < 0) {j} = 0;", f"if ({j} > {n} - 1) {j} = {n} - 1;"]
    return []


def _weights(mode: str, R: int, ty) -> list[str]:
    """Weight of tap k (offset k - R) as source text."""
    if mode == "array":
        return [f"w[{k}]" for k in range(2 * R + 1)]
    if mode == "literal":
        tot = 4 ** R
        return [ty.lit(b / tot) for b in BINOMIAL[R]]
    return [f"c{abs(k - R)}" for k in range(2 * R + 1)]


def _reference(entry, sig, bc, mode, R, ty, names):
    i, src, dst = names
    L = [f"void {entry}({cparams(sig)}) {{"]
    L.append(f"    for (int {i} = 0; {i} < n; {i}++) {{")
    ind = "        "
    if bc == "fixed":
        L.append(f"{ind}if ({i} < {R} || {i} >= n - {R}) {{ {dst}[{i}] = {src}[{i}]; continue; }}")
    if mode == "array":
        L.append(f"{ind}{ty.name} acc = {ty.zero};")
        L.append(f"{ind}for (int k = -{R}; k <= {R}; k++) {{")
        L.append(f"{ind}    int j = {i} + k;")
        if bc == "zero":
            L.append(f"{ind}    if (j < 0 || j >= n) continue;")
        elif bc != "fixed":
            L += [f"{ind}    " + s for s in _map_c(bc, "j", "n")]
        L.append(f"{ind}    acc += w[k + {R}] * {src}[j];")
        L.append(f"{ind}}}")
        L.append(f"{ind}{dst}[{i}] = acc;")
    else:
        w = _weights(mode, R, ty)
        terms = {}
        for k in range(-R, R + 1):
            v = f"j{'m' if k < 0 else 'p'}{abs(k)}" if k else i
            if k:
                L.append(f"{ind}int {v} = {i} {'-' if k < 0 else '+'} {abs(k)};")
                if bc != "fixed":
                    if bc == "zero":
                        pass
                    else:
                        L += [ind + s for s in _map_c(bc, v, "n")]
            if bc == "zero" and k:
                terms[k] = f"({v} >= 0 && {v} < n ? {src}[{v}] : {ty.zero})"
            else:
                terms[k] = f"{src}[{v}]"
        if mode == "literal":
            expr = " + ".join(f"{w[k + R]} * {terms[k]}" for k in range(-R, R + 1))
        else:
            expr = f"c0 * {terms[0]}" + "".join(
                f"\n{ind}    + c{d} * ({terms[-d]} + {terms[d]})" for d in range(1, R + 1))
        L.append(f"{ind}{dst}[{i}] = {expr};")
    L.append("    }")
    L.append("}")
    return "\n".join(L)


def _map_dev(bc: str) -> str:
    """Device helper mapping a global index to the value rule of the boundary (returns -1: zero)."""
    if bc == "periodic":
        body = "j %= n; if (j < 0) j += n; return j;"
    elif bc in ("clamped", "fixed"):
        body = "return j < 0 ? 0 : (j > n - 1 ? n - 1 : j);"
    else:
        body = "return (j < 0 || j >= n) ? -1 : j;"
    return f"__device__ __forceinline__ long long bmap(long long j, long long n) {{ {body} }}\n"


def _variants(entry, sig, bc, mode, R, ty):
    t = ty.name
    ps, args = cparams(sig), cargs(sig)
    w = _weights(mode, R, ty)
    # kernel params: everything; the weights/coeffs are referenced by name in w[]
    helper = _map_dev(bc)
    fixed_guard = (f"if (i < {R} || i >= n - {R}) {{ out[i] = in[i]; return; }}\n    "
                   if bc == "fixed" else "")

    def tap_global(k):
        if bc == "fixed":
            return f"in[i + ({k})]"
        return f"tapv(in, i + ({k}), n)"
    tap_fn = (f"__device__ __forceinline__ {t} tapv(const {t} *in, long long j, long long n) {{\n"
              f"    j = bmap(j, n); return j < 0 ? {ty.zero} : in[j];\n}}\n")
    body_g = " + ".join(f"{w[k + R]} * {tap_global(k)}" for k in range(-R, R + 1))
    naive = f"""
{helper}{tap_fn}
__global__ void {entry}_k({ps}) {{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    {fixed_guard}out[i] = {body_g};
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_k<<<{blocks('n')}, 256>>>({args});
}}
"""
    # shared-memory tile: block of 256 outputs plus R halo cells each side, mapped at load time
    body_s = " + ".join(f"{w[k + R]} * tile[threadIdx.x + {R + k}]" for k in range(-R, R + 1))
    fixed_s = (f"if (i < {R} || i >= n - {R}) out[i] = tile[threadIdx.x + {R}]; else "
               if bc == "fixed" else "")
    tiled = f"""
{helper}
__global__ void {entry}_tile({ps}) {{
    __shared__ {t} tile[256 + {2 * R}];
    long long base = (long long)blockIdx.x * 256 - {R};
    for (int s = threadIdx.x; s < 256 + {2 * R}; s += 256) {{
        long long j = bmap(base + s, n);
        tile[s] = j < 0 ? {ty.zero} : in[j];
    }}
    __syncthreads();
    long long i = (long long)blockIdx.x * 256 + threadIdx.x;
    if (i < n) {{ {fixed_s}out[i] = {body_s}; }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_tile<<<{blocks('n')}, 256>>>({args});
}}
"""
    # grid-stride with read-only loads; interior points skip the boundary mapping entirely
    wl = [x.replace("w[", "wr[") for x in w]
    wload = ""
    if mode == "array":
        wload = f"{t} wr[{2 * R + 1}];\n    #pragma unroll\n    for (int k = 0; k < {2 * R + 1}; k++) wr[k] = __ldg(&w[k]);\n    "
    fast = " + ".join(f"{wl[k + R]} * __ldg(&in[i + ({k})])" for k in range(-R, R + 1))
    slow = (f"in[i]" if bc == "fixed" else
            " + ".join(f"{wl[k + R]} * tapv(in, i + ({k}), n)" for k in range(-R, R + 1)))
    rps = ps.replace("const " + t + " *", "const " + t + " *__restrict__ ").replace(
        f"{t} *out", f"{t} *__restrict__ out")
    gs = f"""
{helper}{tap_fn}
__global__ void __launch_bounds__(512) {entry}_gs({rps}) {{
    {wload}long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {{
        if (i >= {R} && i < n - {R}) out[i] = {fast};
        else out[i] = {slow};
    }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_gs<<<{capped_blocks('n', 512)}, 512>>>({args});
}}
"""
    return [V("naive", "one thread per output point, boundary rule per tap", naive),
            V("tiled_smem", f"256-point shared-memory tile with a {R}-cell halo each side, "
              "boundary mapped once at load", tiled),
            V("ldg_restrict", "grid-stride loop, 512-thread blocks, __ldg read-only loads, "
              "weights in registers, boundary mapping only near the ends", gs)]


def generate(rng: random.Random) -> list[dict]:
    out = []
    combos = [(bc, mode, R, tn) for bc in BCS for mode in MODES for R in (1, 2, 3, 4)
              for tn in ("float", "double")]
    rng.shuffle(combos)
    combos = sorted(combos[:84], key=lambda c: (BCS.index(c[0]), MODES.index(c[1]), c[2], c[3]))
    for bc, mode, R, tn in combos:
        ty = TYPES[tn]
        npts = 2 * R + 1
        entry = f"{rng.choice(NAMES[mode])}_{npts}pt_{bc}_{ty.tag}"
        names = rng.choice([("i", "in", "out")])
        sig = [P("n", "int", "size"), P("in", f"const {tn}*", "in", "n", "uniform(-1, 1)")]
        if mode == "array":
            sig.append(P("w", f"const {tn}*", "in", str(npts), "uniform(0, 0.5)"))
        if mode == "symmetric":
            sig += [P(f"c{d}", tn, "scalar", init="uniform(-0.5, 0.5)") for d in range(R + 1)]
        sig.append(P("out", f"{tn}*", "out", "n"))
        ref = _reference(entry, sig, bc, mode, R, ty, names)
        perf_n = 1 << 26 if tn == "float" else 1 << 25
        tests = [T("one", {"n": 1}), T("short", {"n": R + 2}), T("odd", {"n": 1003}),
                 T("mid", {"n": 65537}), T("perf", {"n": perf_n}, perf=True)]
        out.append(record(FAMILY, f"{bc}_{mode}_r{R}_{ty.tag}", entry, sig, ref,
                          _variants(entry, sig, bc, mode, R, ty), tests,
                          {"boundary": bc, "weights": mode, "radius": R, "dtype": tn},
                          flops=f"{2 * npts}*n"))
    return out
