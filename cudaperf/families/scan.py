"""Prefix scans: inclusive and exclusive prefix sum / running max / running min of int, long
long, float and double arrays; suffix (reverse) sums; scans of mapped inputs (squares, 0/1
flags -> stream-compaction offsets, int -> long long widening); segmented per-row scans of a
matrix (contiguous or padded lda input).

Guarantees: 71 tasks. Every variant is deterministic (no atomics) and correct for any n >= 1:
1-D scans run a tile pass, a single-block scan of the tile totals and an offset pass
(Hillis-Steele tiles for naive, warp-shuffle tiles, and reduce-then-scan); per-row scans run
thread-per-row (the direct translation), warp-per-row and block-per-row with carries.
Float sums use positive inputs and a 2e-3 tolerance (different association on the GPU).
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import HDR, IDENTITY, P, SM_COUNT, args, decls, fmt, indent, record

FAMILY = "scan"
CATEGORY = "scan"

IDENTITY = {**IDENTITY, ("sum", "long long"): "0LL"}
COMB = {"sum": "a + b", "max": "(b > a ? b : a)", "min": "(b < a ? b : a)"}
DATA = {"float": "uniform(0, 1)", "double": "uniform(0, 1)", "int": "randint(-100, 100)",
        "long long": "randint(-100000, 100000)"}
SYMDATA = {"float": "uniform(-1, 1)", "double": "uniform(-1, 1)", "int": "randint(-1000000, 1000000)"}
TOL = {"rtol": 2e-3, "atol": 1e-4, "l2": 2e-3}
TC = {"float": "f32", "double": "f64", "int": "i32", "long long": "i64"}


def _step(comb, acc, val):
    if comb == "sum":
        return f"{acc} += {val};"
    return f"if ({val} {'>' if comb == 'max' else '<'} {acc}) {acc} = {val};"


def _common(acc, comb):
    ident = IDENTITY[(comb, acc)]
    return HDR + f"""
__device__ __forceinline__ {acc} comb_({acc} a, {acc} b) {{ return {COMB[comb]}; }}
#define BCAP_ (1 << 18)
static __device__ {acc} bsum_[BCAP_];
// Exclusive scan of the nb tile totals in place, by one block of 1024 threads: each thread
// scans a contiguous chunk serially, chunk totals meet in a shared-memory Hillis-Steele scan.
__global__ void scan_totals_({acc} *s, int nb) {{
    __shared__ {acc} sh[1024];
    int t = threadIdx.x, per = (nb + 1023) / 1024;
    int lo = t * per, hi = lo + per < nb ? lo + per : nb;
    {acc} tot = {ident};
    for (int k = lo; k < hi; k++) tot = comb_(tot, s[k]);
    sh[t] = tot;
    __syncthreads();
    for (int off = 1; off < 1024; off <<= 1) {{
        {acc} w = t >= off ? sh[t - off] : {ident};
        __syncthreads();
        sh[t] = comb_(sh[t], w);
        __syncthreads();
    }}
    {acc} run = t > 0 ? sh[t - 1] : {ident};
    for (int k = lo; k < hi; k++) {{
        {acc} v = s[k];
        s[k] = run;
        run = comb_(run, v);
    }}
}}
"""


def _host(entry, sig, acc, tile, k1, k3, pre=""):
    dec, arg = decls(sig), args(sig)
    return f"""
extern "C" void {entry}({dec}) {{
    if (n <= 0) return;
    int nb = (int)(((size_t)n + {tile} - 1) / {tile});
    {acc} *bs = 0;
    bool own = nb > BCAP_;
    if (own) cudaMalloc((void **)&bs, sizeof({acc}) * (size_t)nb);
    else cudaGetSymbolAddress((void **)&bs, bsum_);
    {k1}<<<nb, 256>>>({arg}, bs);
    if (nb > 1) {{
        scan_totals_<<<1, 1024>>>(bs, nb);
        {k3}
    }}
    if (own) cudaFree(bs);
}}
"""


def _warp_tile(acc, ident, K, load, store, incl, with_offset):
    """Body of a tile kernel: 256 threads x K contiguous elements, warp-shuffle scan."""
    st = "comb_(toff, a[e])" if incl else "(e == 0 ? toff : comb_(toff, a[e - 1]))"
    off = f"comb_(bs[blockIdx.x], woff)" if with_offset else "woff"
    return f"""    int t = threadIdx.x, lane = t & 31, w = t >> 5;
    size_t base = (size_t)blockIdx.x * {256 * K} + (size_t)t * {K};
    {acc} a[{K}];
#pragma unroll
    for (int e = 0; e < {K}; e++) a[e] = base + e < (size_t)n ? ({acc})({load('(base + e)')}) : {ident};
#pragma unroll
    for (int e = 1; e < {K}; e++) a[e] = comb_(a[e - 1], a[e]);
    {acc} sc = a[{K - 1}];
    for (int o = 1; o < 32; o <<= 1) {{
        {acc} y = __shfl_up_sync(0xffffffffu, sc, o);
        if (lane >= o) sc = comb_(y, sc);
    }}
    {acc} prev = __shfl_up_sync(0xffffffffu, sc, 1);
    __shared__ {acc} wt[8];
    if (lane == 31) wt[w] = sc;
    __syncthreads();
    {acc} woff = {ident};
    for (int k = 0; k < w; k++) woff = comb_(woff, wt[k]);
    woff = {off};
    {acc} toff = lane > 0 ? comb_(woff, prev) : woff;
#pragma unroll
    for (int e = 0; e < {K}; e++)
        if (base + e < (size_t)n) {store('(base + e)', st)}
"""


def scan1d_variants(entry, sig, acc, comb, load, store, incl):
    """load(i) -> C expr of element i; store(i, v) -> C statement writing v at scan position i."""
    ident = IDENTITY[(comb, acc)]
    dec, dr, arg = decls(sig), decls(sig, True), args(sig)
    readout = lambda i: store(i, "X").split("=")[0].strip()  # the output lvalue at position i
    k3 = (lambda tile: f"""
__global__ void {entry}_add({dr}, const {acc} *bs) {{
    size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g < (size_t)n && g >= {tile}) {store('g', f'comb_(bs[g / {tile}], {readout("g")})')}
}}
""")
    launch3 = f"{entry}_add<<<(unsigned)(((size_t)n + 255) / 256), 256>>>({arg}, bs);"
    res = "s[t]" if incl else f"(t > 0 ? s[t - 1] : {ident})"
    naive = _common(acc, comb) + f"""
__global__ void {entry}_tile({dec}, {acc} *bs) {{
    __shared__ {acc} s[256];
    int t = threadIdx.x;
    size_t g = (size_t)blockIdx.x * 256 + t;
    s[t] = g < (size_t)n ? ({acc})({load('g')}) : {ident};
    __syncthreads();
    for (int off = 1; off < 256; off <<= 1) {{
        {acc} w = t >= off ? s[t - off] : {ident};
        __syncthreads();
        s[t] = comb_(s[t], w);
        __syncthreads();
    }}
    if (g < (size_t)n) {store('g', res)}
    if (t == 255) bs[blockIdx.x] = s[255];
}}
""" + k3(256) + _host(entry, sig, acc, 256, f"{entry}_tile", launch3)
    ws = _common(acc, comb) + f"""
__global__ void {entry}_wtile({dr}, {acc} *bs) {{
{_warp_tile(acc, ident, 4, load, store, incl, False)}    if (t == 255) bs[blockIdx.x] = comb_(toff, a[3]);
}}
""" + k3(1024) + _host(entry, sig, acc, 1024, f"{entry}_wtile", launch3)
    rts = _common(acc, comb) + f"""
// Pass 1 only reduces each 2048-element tile (coalesced, no stores); pass 3 rescans the tile
// with its offset, so every output is written exactly once.
__global__ void {entry}_red({dr}, {acc} *bs) {{
    size_t base = (size_t)blockIdx.x * 2048;
    {acc} v = {ident};
    for (int e = threadIdx.x; e < 2048; e += 256)
        if (base + e < (size_t)n) v = comb_(v, ({acc})({load('(base + e)')}));
    for (int o = 16; o > 0; o >>= 1) v = comb_(v, __shfl_down_sync(0xffffffffu, v, o));
    __shared__ {acc} wt[8];
    if ((threadIdx.x & 31) == 0) wt[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {{
        {acc} s = wt[0];
        for (int k = 1; k < 8; k++) s = comb_(s, wt[k]);
        bs[blockIdx.x] = s;
    }}
}}
__global__ void {entry}_rescan({dr}, const {acc} *bs) {{
{_warp_tile(acc, ident, 8, load, store, incl, True)}}}
__global__ void {entry}_single({dr}, {acc} *bs) {{
    (void)bs;
{_warp_tile(acc, ident, 8, load, store, incl, False)}}}
extern "C" void {entry}({dec}) {{
    if (n <= 0) return;
    int nb = (int)(((size_t)n + 2047) / 2048);
    if (nb == 1) {{ {entry}_single<<<1, 256>>>({arg}, 0); return; }}
    {acc} *bs = 0;
    bool own = nb > BCAP_;
    if (own) cudaMalloc((void **)&bs, sizeof({acc}) * (size_t)nb);
    else cudaGetSymbolAddress((void **)&bs, bsum_);
    {entry}_red<<<nb, 256>>>({arg}, bs);
    scan_totals_<<<1, 1024>>>(bs, nb);
    {entry}_rescan<<<nb, 256>>>({arg}, bs);
    if (own) cudaFree(bs);
}}
"""
    return [{"name": "naive", "strategy": "256-element Hillis-Steele tiles in shared memory, tile totals "
             "scanned by one block, offsets added by a third kernel", "source": naive},
            {"name": "warp_shuffle", "strategy": "1024-element tiles: 4 elements per thread, warp "
             "__shfl_up scans, shared warp totals; same 3-kernel structure", "source": ws},
            {"name": "reduce_then_scan", "strategy": "reduce 2048-element tiles, scan totals, rescan "
             "tiles with offsets (each output written once)", "source": rts}]


def rows_variants(entry, sig, acc, comb, load, store, incl):
    """load(r, j), store(r, j, v). naive thread-per-row; warp- and block-per-row with carries."""
    ident = IDENTITY[(comb, acc)]
    dec, dr, arg = decls(sig), decls(sig, True), args(sig)
    cmb = f"__device__ __forceinline__ {acc} comb_({acc} a, {acc} b) {{ return {COMB[comb]}; }}\n"
    if incl:
        ser = f"{acc} v = {load('r', 'j')};\n            run = comb_(run, v);\n            {store('r', 'j', 'run')}"
    else:
        ser = f"{acc} v = {load('r', 'j')};\n            {store('r', 'j', 'run')}\n            run = comb_(run, v);"
    naive = HDR + cmb + f"""
__global__ void {entry}_k({dec}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {{
        {acc} run = {ident};
        for (int j = 0; j < cols; j++) {{
            {ser}
        }}
    }}
}}
extern "C" void {entry}({dec}) {{
    if (rows <= 0) return;
    {entry}_k<<<(rows + 255) / 256, 256>>>({arg});
}}
"""
    pick = "comb_(carry, sc)" if incl else "(lane > 0 ? comb_(carry, prev) : carry)"
    warp = HDR + cmb + f"""
__global__ void {entry}_warp({dr}) {{
    int lane = threadIdx.x & 31;
    int warps = (gridDim.x * blockDim.x) >> 5;
    for (int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {{
        {acc} carry = {ident};
        for (int c0 = 0; c0 < cols; c0 += 32) {{
            int j = c0 + lane;
            {acc} sc = j < cols ? ({acc})({load('r', 'j')}) : {ident};
            for (int o = 1; o < 32; o <<= 1) {{
                {acc} y = __shfl_up_sync(0xffffffffu, sc, o);
                if (lane >= o) sc = comb_(y, sc);
            }}
            {acc} prev = __shfl_up_sync(0xffffffffu, sc, 1);
            if (j < cols) {store('r', 'j', pick)}
            carry = comb_(carry, __shfl_sync(0xffffffffu, sc, 31));
        }}
    }}
}}
extern "C" void {entry}({dec}) {{
    if (rows <= 0 || cols <= 0) return;
{SM_COUNT}    long long want = ((long long)rows * 32 + 255) / 256;
    int blocks = want < (long long)sms_ * 16 ? (int)want : sms_ * 16;
    {entry}_warp<<<blocks, 256>>>({arg});
}}
"""
    bpick = "comb_(base, sc)" if incl else "(lane > 0 ? comb_(base, prev) : base)"
    block = HDR + cmb + f"""
// Block per row, 256-column chunks; loop bounds depend only on blockIdx and cols, so every
// thread reaches every barrier.
__global__ void {entry}_blk({dr}) {{
    __shared__ {acc} wt[8];
    int t = threadIdx.x, lane = t & 31, w = t >> 5;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {{
        {acc} carry = {ident};
        for (int c0 = 0; c0 < cols; c0 += 256) {{
            int j = c0 + t;
            {acc} sc = j < cols ? ({acc})({load('r', 'j')}) : {ident};
            for (int o = 1; o < 32; o <<= 1) {{
                {acc} y = __shfl_up_sync(0xffffffffu, sc, o);
                if (lane >= o) sc = comb_(y, sc);
            }}
            {acc} prev = __shfl_up_sync(0xffffffffu, sc, 1);
            if (lane == 31) wt[w] = sc;
            __syncthreads();
            {acc} base = carry;
            for (int k = 0; k < w; k++) base = comb_(base, wt[k]);
            if (j < cols) {store('r', 'j', bpick)}
            {acc} tot = wt[0];
            for (int k = 1; k < 8; k++) tot = comb_(tot, wt[k]);
            carry = comb_(carry, tot);
            __syncthreads();
        }}
    }}
}}
extern "C" void {entry}({dec}) {{
    if (rows <= 0 || cols <= 0) return;
{SM_COUNT}    int blocks = rows < sms_ * 16 ? rows : sms_ * 16;
    {entry}_blk<<<blocks, 256>>>({arg});
}}
"""
    return [{"name": "naive", "strategy": "one thread per row, serial scan (direct translation)", "source": naive},
            {"name": "warp_per_row", "strategy": "warp per row, 32-wide shuffle scans with a carry", "source": warp},
            {"name": "block_per_row", "strategy": "block per row, 256-wide block scans with a carry", "source": block}]


def _ref1d(entry, sig, acc, comb, valexpr, outl, incl, reverse, iv):
    ident = IDENTITY[(comb, acc)]
    loop = f"for (int {iv} = n - 1; {iv} >= 0; {iv}--)" if reverse else f"for (int {iv} = 0; {iv} < n; {iv}++)"
    v = valexpr(iv)
    if incl:
        body = f"        {_step(comb, 'acc', v)}\n        {outl(iv)} = acc;\n"
    else:
        body = f"        {outl(iv)} = acc;\n        {_step(comb, 'acc', v)}\n"
    return f"void {entry}({decls(sig)}) {{\n    {acc} acc = {ident};\n    {loop} {{\n{body}    }}\n}}\n"


def generate(rng: random.Random) -> list[dict]:
    recs = []
    cases = [("sum", T, "plain") for T in ("int", "long long", "float", "double")]
    cases += [(op, T, "plain") for op in ("max", "min") for T in ("int", "float", "double")]
    cases += [("sum", T, "square") for T in ("float", "double")]
    cases += [("sum", "int", "flags"), ("sum", "long long", "widen")]
    for op, T, form in cases:
        for incl in (True, False):
            acc = T
            xt = {"flags": "unsigned char", "widen": "int"}.get(form, T)
            init = {"flags": "bernoulli(0.3)", "widen": "randint(-1000, 1000)"}.get(form, DATA[T] if op == "sum" else SYMDATA[T])
            sig = [P("n", "int", "size"), P("x", f"const {xt}*", "in", "n", init), P("out", f"{acc}*", "out", "n")]
            val = (lambda i: f"x[{i}] * x[{i}]") if form == "square" else (
                (lambda i: f"({acc})x[{i}]") if form in ("flags", "widen") else (lambda i: f"x[{i}]"))
            tc = TC[T]
            kind = "inclusive" if incl else "exclusive"
            entry = rng.choice(["{k}_{op}_scan_{t}", "cum{op}_{t}_{k}", "prefix_{op}_{t}_{k}"]).format(
                k=kind[:4] if incl else "excl", op=op, t=tc) + ("" if form == "plain" else f"_{form}")
            ref = _ref1d(entry, sig, acc, op, val, lambda i: f"out[{i}]", incl, False, rng.choice(["i", "k"]))
            var = scan1d_variants(entry, sig, acc, op, val, lambda i, v: f"out[{i}] = {v};", incl)
            big = (1 << 25) if T in ("float", "int") else (1 << 24)
            tests = [{"name": "one", "sizes": {"n": 1}}, {"name": "odd", "sizes": {"n": 1003}},
                     {"name": "multi_tile", "sizes": {"n": 300007}}, {"name": "perf", "sizes": {"n": big}, "perf": True}]
            recs.append(record(FAMILY, f"{op}_{tc}_{form}_{kind}", entry, sig, ref, var, tests,
                               {"op": op, "dtype": T, "form": form, "inclusive": incl},
                               tol=TOL if (T in ("float", "double") and op == "sum" and T == "float") else None))
    # suffix (reverse) sums: position i holds the sum of x[i..n-1]
    for T in ("int", "float", "double"):
        sig = [P("n", "int", "size"), P("x", f"const {T}*", "in", "n", DATA[T]), P("out", f"{T}*", "out", "n")]
        entry = f"suffix_sum_{TC[T]}"
        rv = lambda i: f"(n - 1 - (size_t){i})"
        ref = _ref1d(entry, sig, T, "sum", lambda i: f"x[{i}]", lambda i: f"out[{i}]", True, True, "i")
        var = scan1d_variants(entry, sig, T, "sum", lambda i: f"x[{rv(i)}]", lambda i, v: f"out[{rv(i)}] = {v};", True)
        tests = [{"name": "one", "sizes": {"n": 1}}, {"name": "odd", "sizes": {"n": 1003}},
                 {"name": "multi_tile", "sizes": {"n": 300007}}, {"name": "perf", "sizes": {"n": 1 << 24}, "perf": True}]
        recs.append(record(FAMILY, f"suffix_sum_{TC[T]}", entry, sig, ref, var, tests,
                           {"op": "sum", "dtype": T, "form": "reverse", "inclusive": True},
                           tol=TOL if T == "float" else None))
    # segmented per-row scans
    row_cases = [("sum", T) for T in ("int", "long long", "float", "double")]
    row_cases += [(op, T) for op in ("max", "min") for T in ("int", "float", "double")]
    k = 0
    for op, T in row_cases:
        for incl in (True, False):
            for layout in ("contig", "lda"):
                ld = "lda" if layout == "lda" else "cols"
                sig = [P("rows", "int", "size"), P("cols", "int", "size")]
                if layout == "lda":
                    sig.append(P("lda", "int", "size"))
                init = DATA[T] if op == "sum" else SYMDATA[T]
                sig += [P("a", f"const {T}*", "in", f"rows*{ld}", init), P("out", f"{T}*", "out", "rows*cols")]
                tc, kind = TC[T], ("incl" if incl else "excl")
                entry = rng.choice(["row_{k}_{op}_{t}", "cum{op}_rows_{t}_{k}", "segmented_{op}_{t}_{k}"]).format(
                    k=kind, op=op, t=tc) + ("_ld" if layout == "lda" else "")
                load = lambda r, j: f"a[(size_t){r} * {ld} + {j}]"
                store = lambda r, j, v: f"out[(size_t){r} * cols + {j}] = {v};"
                rv, cv = rng.choice([("r", "c"), ("i", "j"), ("row", "col")])
                stp = _step(op, "acc", load(rv, cv))
                body = (f"            {stp}\n            {store(rv, cv, 'acc')}\n" if incl else
                        f"            {store(rv, cv, 'acc')}\n            {stp}\n")
                ref = (f"void {entry}({decls(sig)}) {{\n    for (int {rv} = 0; {rv} < rows; {rv}++) {{\n"
                       f"        {T} acc = {IDENTITY[(op, T)]};\n        for (int {cv} = 0; {cv} < cols; {cv}++) {{\n"
                       f"{body}        }}\n    }}\n}}\n")
                R, C = [(8192, 2048), (1 << 18, 64), (1024, 16384)][k % 3]
                k += 1
                if T in ("double", "long long"):
                    R //= 2
                pad = (lambda c: {"lda": c + 7}) if layout == "lda" else (lambda c: {})
                tests = [{"name": "one", "sizes": {"rows": 1, "cols": 1, **pad(1)}},
                         {"name": "ragged", "sizes": {"rows": 37, "cols": 1001, **pad(1001)}},
                         {"name": "tall_odd", "sizes": {"rows": 1003, "cols": 3, **pad(3)}},
                         {"name": "perf", "sizes": {"rows": R, "cols": C, **pad(C)}, "perf": True}]
                recs.append(record(FAMILY, f"rows_{op}_{tc}_{kind}_{layout}", entry, sig, ref,
                                   rows_variants(entry, sig, T, op, load, store, incl), tests,
                                   {"op": op, "dtype": T, "form": "segmented", "inclusive": incl, "layout": layout},
                                   tol=TOL if (T == "float" and op == "sum") else None))
    return recs
