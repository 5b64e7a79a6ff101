"""Histograms: integer keys, modular keys, byte data, float ranges, 2-D, weighted, log2 bins.

Guarantees: every task is a distinct serial C program that zeroes a histogram with a literal
number of bins (16..4096, or a 2-D grid of bins) and counts (or sums weights of) the input
elements falling in each bin. Integer keys are generated inside the bin range (randint), so no
access is out of bounds. Float binning uses `(int)((v - lo) * scale)` with explicit range
checks; those tasks set meta.reference_precision = "native" so the reference bins in the same
precision as the GPU and every count is exact. Weighted histograms use float/double atomics and
carry a tolerance. CUDA variants: naive global atomics, per-block shared-memory privatisation,
and two shared sub-histograms per block (fewer same-address collisions) with grid-stride loads.
"""
from __future__ import annotations

import random

from cudaperf.families._d2kit import (FLOAT_TOL, P, T, V, blocks, capped_blocks, cargs, cparams,
                                      record)

FAMILY = "histogram"
CATEGORY = "reduction"

BINS = (16, 64, 256, 1024, 4096)
BINS2 = ((16, 16), (32, 32), (64, 64), (8, 128), (128, 8))


def _spec(kind, nb, dt, knob):
    """(signature params without n/hist, bin statements on i -> b, valid expr or None, inc,
    hist element type, entry stem, native)."""
    if kind == "direct":
        return ([P("data", f"const {dt}*", "in", "n", f"randint(0, {nb})")],
                [f"int b = (int)data[i];"], None, "1", "int", "histogram", False)
    if kind == "offset":
        lo = knob
        return ([P("vals", f"const {dt}*", "in", "n", f"randint({lo}, {lo + nb})")],
                [f"int b = vals[i] - ({lo});"], None, "1", "int", "histogram_offset", False)
    if kind == "mod":
        return ([P("keys", f"const {dt}*", "in", "n", "randint(0, 1000000)")],
                [f"int b = (int)(keys[i] % {nb}u);" if dt.startswith("unsigned") else f"int b = keys[i] % {nb};"],
                None, "1", "int", "hash_bucket_count", False)
    if kind in ("range", "clamp"):
        sig = [P("lo", dt, "scalar", init="uniform(-1, -0.5)"), P("hi", dt, "scalar", init="uniform(0.5, 1)"),
               P("x", f"const {dt}*", "in", "n", "uniform(-1.2, 1.2)")]
        if kind == "range":
            return (sig, [f"{dt} v = x[i];", f"int b = (int)((v - lo) * scale);",
                          f"if (b > {nb - 1}) b = {nb - 1};"], "v >= lo && v < hi", "1", "int",
                    "bin_values", True)
        return (sig, [f"int b = (int)((x[i] - lo) * scale);", "if (b < 0) b = 0;",
                      f"if (b > {nb - 1}) b = {nb - 1};"], None, "1", "int", "bin_clamped", True)
    if kind == "2d_int":
        bx, by = nb
        return ([P("row", f"const {dt}*", "in", "n", f"randint(0, {bx})"),
                 P("col", f"const {dt}*", "in", "n", f"randint(0, {by})")],
                [f"int b = row[i] * {by} + col[i];"], None, "1", "int", "hist2d", False)
    if kind == "2d_float":
        bx, by = nb
        return ([P("u", f"const {dt}*", "in", "n", "uniform(0, 1)"),
                 P("v", f"const {dt}*", "in", "n", "uniform(0, 1)")],
                [f"int bx = (int)(u[i] * {bx}), by = (int)(v[i] * {by});",
                 f"if (bx > {bx - 1}) bx = {bx - 1};", f"if (by > {by - 1}) by = {by - 1};",
                 f"int b = bx * {by} + by;"], None, "1", "int", "joint_hist", True)
    if kind == "weighted":
        return ([P("idx", "const int*", "in", "n", f"randint(0, {nb})"),
                 P("w", f"const {dt}*", "in", "n", "uniform(0, 1)")],
                ["int b = idx[i];"], None, "w[i]", dt, "weighted_hist", False)
    if kind == "log2":
        return ([P("vals", f"const {dt}*", "in", "n", "randint(1, 2147483647)")],
                [f"unsigned long long u = (unsigned long long)vals[i];", "int b = 0;",
                 "while (u >>= 1) b++;"], None, "1", "int", "log2_hist", False)
    if kind == "byte":
        return ([P("bytes", "const unsigned char*", "in", "n", "randint(0, 256)")],
                ["int b = bytes[i];"], None, "1", "int", "byte_hist", False)
    return ([P("bytes", "const unsigned char*", "in", "n", "randint(0, 256)")],
            ["int b = bytes[i] >> 4;"], None, "1", "int", "nibble_hist", False)


def _nbins(kind, nb):
    return nb[0] * nb[1] if kind.startswith("2d") else nb


def _scale_decl(kind, nb, dt):
    if kind in ("range", "clamp"):
        return f"{dt} scale = ({dt}){nb} / (hi - lo);"
    return ""


def _reference(entry, sig, kind, nb, dt, spec):
    _, lines, valid, inc, ht, _, _ = spec
    NB = _nbins(kind, nb)
    L = [f"void {entry}({cparams(sig)}) {{"]
    sd = _scale_decl(kind, nb, dt)
    if sd:
        L.append("    " + sd)
    L.append(f"    for (int k = 0; k < {NB}; k++) hist[k] = 0;")
    L.append("    for (int i = 0; i < n; i++) {")
    if valid:
        L.append(f"        if (!(x[i] >= lo && x[i] < hi)) continue;")
    L += ["        " + s for s in lines]
    L.append(f"        hist[b] += {inc};" if inc != "1" else "        hist[b]++;")
    L += ["    }", "}"]
    return "\n".join(L)


def _variants(entry, sig, kind, nb, dt, spec):
    _, lines, valid, inc, ht, _, _ = spec
    NB = _nbins(kind, nb)
    ps, args = cparams(sig), cargs(sig)
    sd = _scale_decl(kind, nb, dt)
    bin_code = "\n".join("        " + s for s in lines)
    guard = "if (!(x[i] >= lo && x[i] < hi)) continue;" if valid else ""
    zero = f"""
__global__ void {entry}_zero({ht} *hist) {{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < {NB}) hist[k] = 0;
}}
"""
    naive = zero + f"""
__global__ void {entry}_k({ps}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    {sd}
    do {{
        {guard}
{bin_code}
        atomicAdd(&hist[b], ({ht})({inc}));
    }} while (0);
}}
extern "C" void {entry}({ps}) {{
    {entry}_zero<<<{(NB + 255) // 256}, 256>>>(hist);
    if (n > 0) {entry}_k<<<{blocks('n')}, 256>>>({args});
}}
"""
    smem = zero + f"""
__global__ void {entry}_priv({ps}) {{
    __shared__ {ht} local[{NB}];
    for (int k = threadIdx.x; k < {NB}; k += blockDim.x) local[k] = 0;
    __syncthreads();
    {sd}
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {{
        {guard}
{bin_code}
        atomicAdd(&local[b], ({ht})({inc}));
    }}
    __syncthreads();
    for (int k = threadIdx.x; k < {NB}; k += blockDim.x)
        if (local[k] != 0) atomicAdd(&hist[k], local[k]);
}}
extern "C" void {entry}({ps}) {{
    {entry}_zero<<<{(NB + 255) // 256}, 256>>>(hist);
    if (n > 0) {entry}_priv<<<{capped_blocks('n', 256, 8)}, 256>>>({args});
}}
"""
    esz = 8 if ht == "double" else 4
    copies = 2 if 2 * NB * esz <= 40 * 1024 else 1
    multi = zero + f"""
__global__ void __launch_bounds__(512) {entry}_sub({ps}) {{
    __shared__ {ht} local[{copies}][{NB}];
    for (int k = threadIdx.x; k < {copies * NB}; k += blockDim.x) local[k / {NB}][k % {NB}] = 0;
    __syncthreads();
    {sd}
    {ht} *mine = local[(threadIdx.x >> 5) % {copies}];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {{
        {guard}
{bin_code}
        atomicAdd(&mine[b], ({ht})({inc}));
    }}
    __syncthreads();
    for (int k = threadIdx.x; k < {NB}; k += blockDim.x) {{
        {ht} s = 0;
        for (int c = 0; c < {copies}; c++) s += local[c][k];
        if (s != 0) atomicAdd(&hist[k], s);
    }}
}}
extern "C" void {entry}({ps}) {{
    {entry}_zero<<<{(NB + 255) // 256}, 256>>>(hist);
    if (n > 0) {entry}_sub<<<{capped_blocks('n', 512, 4)}, 512>>>({args});
}}
"""
    return [V("naive", "zero kernel, then one thread per element with a global atomicAdd", naive),
            V("smem_privatized", "per-block shared-memory histogram over a grid-stride loop, "
              "merged into global memory with one atomic per non-empty bin", smem),
            V("multi_hist", f"{copies} shared sub-histogram(s) per 512-thread block (warps "
              "alternate between copies to cut same-address contention), grid-stride", multi)]


def _combos():
    c = []
    for nb in BINS:
        for dt in ("int", "unsigned int", "unsigned short"):
            c.append(("direct", nb, dt, None))
        c.append(("offset", nb, "int", -nb // 2 if nb <= 256 else 1000))
        for dt in ("int", "unsigned int"):
            c.append(("mod", nb, dt, None))
        for dt in ("float", "double"):
            c.append(("range", nb, dt, None))
            c.append(("clamp", nb, dt, None))
            c.append(("weighted", nb, dt, None))
    for nb in BINS2:
        c.append(("2d_int", nb, "int", None))
        c.append(("2d_float", nb, "float", None))
    for dt in ("int", "unsigned int", "long long"):
        c.append(("log2", 32, dt, None))
    c.append(("byte", 256, "unsigned char", None))
    c.append(("nibble", 16, "unsigned char", None))
    return c


TAG = {"int": "i32", "unsigned int": "u32", "unsigned short": "u16", "float": "f32", "double": "f64",
       "long long": "i64", "unsigned char": "u8"}


def generate(rng: random.Random) -> list[dict]:
    out = []
    for kind, nb, dt, knob in _combos():
        spec = _spec(kind, nb, dt, knob)
        params, _, _, inc, ht, stem, native = spec
        NB = _nbins(kind, nb)
        bins_tag = f"{nb[0]}x{nb[1]}" if isinstance(nb, tuple) else str(nb)
        entry = f"{stem}_{bins_tag}_{TAG[dt]}"
        sig = [P("n", "int", "size")] + params + [P("hist", f"{ht}*", "out", str(NB))]
        ref = _reference(entry, sig, kind, nb, dt, spec)
        esz = {"unsigned char": 1, "unsigned short": 2, "double": 8, "long long": 8}.get(dt, 4)
        nin = len([p for p in params if p["role"] == "in"])
        big = min(1 << 27, int(4e8 // (esz * nin + (4 if kind == "weighted" else 0))))
        if kind == "log2":
            big = 1 << 25  # the serial bit loop costs ~30 steps per element on the CPU
        tests = [T("one", {"n": 1}), T("odd", {"n": 1003}), T("mid", {"n": 100003}),
                 T("perf", {"n": big}, perf=True)]
        extra = {"reference_precision": "native"} if native else None
        out.append(record(FAMILY, f"{kind}_{bins_tag}_{TAG[dt]}", entry, sig, ref,
                          _variants(entry, sig, kind, nb, dt, spec), tests,
                          {"kind": kind, "bins": bins_tag, "dtype": dt},
                          tolerance=FLOAT_TOL if kind == "weighted" else None,
                          extra_meta=extra))
    return out
