"""Argmax / argmin (of values or of absolute values) over a whole array or per row of a
row-major matrix, returning int indices and optionally the extreme values.

Guarantees: 72 tasks = {argmax, argmin, argmax_abs, argmin_abs} x {float, double, int} x
(full array: {index, index+value}; per row: {contiguous, padded lda} x {index, index+value}).
Ties resolve to the LOWEST index (the reference's strict comparison keeps the first
extreme; every CUDA merge compares (value, index) pairs with that rule), and int inputs come
from a small range so ties really occur. Results are exact (no tolerance needed).
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import HDR, IDENTITY, P, SM_COUNT, args, decls, indent, record

FAMILY = "argminmax"
CATEGORY = "reduction"

DATA = {"float": "uniform(-1, 1)", "double": "uniform(-1, 1)", "int": "randint(-50, 50)"}
TC = {"float": "f32", "double": "f64", "int": "i32"}


def _helpers(T, kind):
    cmp = ">" if kind == "max" else "<"
    ident = IDENTITY[(kind, T)]
    return f"""
// (value, index) pairs: the better value wins, equal values keep the lower index.
__device__ __forceinline__ void pick_({T} &v, int &i, {T} w, int k) {{
    if (w {cmp} v || (w == v && k < i)) {{ v = w; i = k; }}
}}
__device__ __forceinline__ void warp_pick_({T} &v, int &i) {{
    for (int o = 16; o > 0; o >>= 1) {{
        {T} w = __shfl_down_sync(0xffffffffu, v, o);
        int k = __shfl_down_sync(0xffffffffu, i, o);
        pick_(v, i, w, k);
    }}
}}
// Every thread of the block must call this (barriers); result valid in thread 0.
__device__ void block_pick_({T} &v, int &i) {{
    __shared__ {T} sv_[32];
    __shared__ int si_[32];
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    warp_pick_(v, i);
    if (lane == 0) {{ sv_[w] = v; si_[w] = i; }}
    __syncthreads();
    if (threadIdx.x < (blockDim.x >> 5)) {{ v = sv_[threadIdx.x]; i = si_[threadIdx.x]; }}
    else {{ v = {ident}; i = 2147483647; }}
    if (w == 0) warp_pick_(v, i);
    __syncthreads();
}}
"""


def _val(T, absval, e):
    return f"({e} < ({T})0 ? -{e} : {e})" if absval else e


def _full(entry, sig, T, kind, absval, with_val):
    ident = IDENTITY[(kind, T)]
    dec, dr, arg = decls(sig), decls(sig, True), args(sig)
    V = lambda e: _val(T, absval, f"x[{e}]")
    store = "index[0] = i;" + (" value[0] = v;" if with_val else "")
    common = HDR + _helpers(T, kind) + f"""
#define PCAP_ (1 << 18)
static __device__ {T} pv_[PCAP_];
static __device__ int pi_[PCAP_];
__global__ void {entry}_final({dec}, const {T} *pv, const int *pi, int np) {{
    {T} v = {ident};
    int i = 2147483647;
    for (int k = threadIdx.x; k < np; k += blockDim.x) pick_(v, i, pv[k], pi[k]);
    block_pick_(v, i);
    if (threadIdx.x == 0) {{ {store} }}
}}
"""
    naive = common + f"""
__global__ void {entry}_k({dec}, {T} *pv, int *pi) {{
    __shared__ {T} sv[256];
    __shared__ int si[256];
    unsigned tid = threadIdx.x;
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    sv[tid] = g < n ? {V('g')} : {ident};
    si[tid] = g < n ? g : 2147483647;
    __syncthreads();
    for (unsigned st = 1; st < blockDim.x; st *= 2) {{
        if (tid % (2 * st) == 0) {{
            {T} v = sv[tid];
            int i = si[tid];
            pick_(v, i, sv[tid + st], si[tid + st]);
            sv[tid] = v;
            si[tid] = i;
        }}
        __syncthreads();
    }}
    if (tid == 0) {{ pv[blockIdx.x] = sv[0]; pi[blockIdx.x] = si[0]; }}
}}
extern "C" void {entry}({dec}) {{
    if (n <= 0) return;
    int nb = (n + 255) / 256;
    {T} *pv = 0;
    int *pi = 0;
    bool own = nb > PCAP_;
    if (own) {{
        cudaMalloc((void **)&pv, sizeof({T}) * (size_t)nb);
        cudaMalloc((void **)&pi, sizeof(int) * (size_t)nb);
    }} else {{
        cudaGetSymbolAddress((void **)&pv, pv_);
        cudaGetSymbolAddress((void **)&pi, pi_);
    }}
    {entry}_k<<<nb, 256>>>({arg}, pv, pi);
    {entry}_final<<<1, 1024>>>({arg}, pv, pi, nb);
    if (own) {{ cudaFree(pv); cudaFree(pi); }}
}}
"""
    host = lambda kern, per: f"""
extern "C" void {entry}({dec}) {{
    if (n <= 0) return;
{SM_COUNT}    int nb = (n + {per} - 1) / {per};
    if (nb > sms_ * 4) nb = sms_ * 4;
    {T} *pv = 0;
    int *pi = 0;
    cudaGetSymbolAddress((void **)&pv, pv_);
    cudaGetSymbolAddress((void **)&pi, pi_);
    {kern}<<<nb, 256>>>({arg}, pv, pi);
    {entry}_final<<<1, 1024>>>({arg}, pv, pi, nb);
}}
"""
    ws = common + f"""
// Grid-stride: each thread visits increasing indices, so a strict comparison keeps the first.
__global__ void {entry}_ws({dr}, {T} *pv, int *pi) {{
    {T} v = {ident};
    int i = 2147483647;
    for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < n; g += blockDim.x * gridDim.x)
        pick_(v, i, {V('g')}, g);
    block_pick_(v, i);
    if (threadIdx.x == 0) {{ pv[blockIdx.x] = v; pi[blockIdx.x] = i; }}
}}
""" + host(f"{entry}_ws", 256)
    chunk = common + f"""
// Each block owns one contiguous chunk of the array (coalesced tiles of 256), so block
// partials are already ordered by index.
__global__ void {entry}_chunk({dr}, {T} *pv, int *pi) {{
    int per = (n + gridDim.x - 1) / gridDim.x;
    int lo = blockIdx.x * per, hi = lo + per < n ? lo + per : n;
    {T} v = {ident};
    int i = 2147483647;
    for (int g = lo + threadIdx.x; g < hi; g += blockDim.x) pick_(v, i, {V('g')}, g);
    block_pick_(v, i);
    if (threadIdx.x == 0) {{ pv[blockIdx.x] = v; pi[blockIdx.x] = i; }}
}}
""" + host(f"{entry}_chunk", 256)
    return [{"name": "naive", "strategy": "one element per thread, interleaved shared-memory tree of "
             "(value, index) pairs, per-block partials, final block", "source": naive},
            {"name": "warp_shuffle", "strategy": "grid-stride on an SM-sized grid, (value, index) warp "
             "shuffles, final block", "source": ws},
            {"name": "block_reduce", "strategy": "one contiguous chunk per block, block-wide pair "
             "reduction, final block", "source": chunk}]


def _rows(entry, sig, T, kind, absval, with_val, ld):
    ident = IDENTITY[(kind, T)]
    cmp = ">" if kind == "max" else "<"
    dec, dr, arg = decls(sig), decls(sig, True), args(sig)
    V = lambda c: _val(T, absval, f"a[(size_t)r * {ld} + {c}]")
    store = "index[r] = i;" + (" value[r] = v;" if with_val else "")
    naive = HDR + f"""
__global__ void {entry}_k({dec}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {{
        {T} v = {V('0')};
        int i = 0;
        for (int j = 1; j < cols; j++) {{
            {T} w = {V('j')};
            if (w {cmp} v) {{ v = w; i = j; }}
        }}
        {store}
    }}
}}
extern "C" void {entry}({dec}) {{
    if (rows <= 0 || cols <= 0) return;
    {entry}_k<<<(rows + 255) / 256, 256>>>({arg});
}}
"""
    warp = HDR + _helpers(T, kind) + f"""
__global__ void {entry}_warp({dr}) {{
    int lane = threadIdx.x & 31;
    int warps = (gridDim.x * blockDim.x) >> 5;
    for (int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {{
        {T} v = {ident};
        int i = 2147483647;
        for (int j = lane; j < cols; j += 32) pick_(v, i, {V('j')}, j);
        warp_pick_(v, i);
        if (lane == 0) {{ {store} }}
    }}
}}
extern "C" void {entry}({dec}) {{
    if (rows <= 0 || cols <= 0) return;
{SM_COUNT}    long long want = ((long long)rows * 32 + 255) / 256;
    int blocks = want < (long long)sms_ * 16 ? (int)want : sms_ * 16;
    {entry}_warp<<<blocks, 256>>>({arg});
}}
"""
    block = HDR + _helpers(T, kind) + f"""
__global__ void {entry}_blk({dr}) {{
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {{
        {T} v = {ident};
        int i = 2147483647;
        for (int j = threadIdx.x; j < cols; j += blockDim.x) pick_(v, i, {V('j')}, j);
        block_pick_(v, i);
        if (threadIdx.x == 0) {{ {store} }}
    }}
}}
extern "C" void {entry}({dec}) {{
    if (rows <= 0 || cols <= 0) return;
{SM_COUNT}    int blocks = rows < sms_ * 16 ? rows : sms_ * 16;
    {entry}_blk<<<blocks, 256>>>({arg});
}}
"""
    return [{"name": "naive", "strategy": "one thread per row, serial scan of the row", "source": naive},
            {"name": "warp_per_row", "strategy": "warp per row, (value, index) shuffles", "source": warp},
            {"name": "block_per_row", "strategy": "block per row, block-wide pair reduction", "source": block}]


def generate(rng: random.Random) -> list[dict]:
    recs = []
    ops = [("argmax", "max", False), ("argmin", "min", False), ("argmax_abs", "max", True), ("argmin_abs", "min", True)]
    for op, kind, absval in ops:
        cmp = ">" if kind == "max" else "<"
        for T in ("float", "double", "int"):
            tc = TC[T]
            for with_val in (False, True):
                # ---- full array
                sig = [P("n", "int", "size"), P("x", f"const {T}*", "in", "n", DATA[T]), P("index", "int*", "out", "1")]
                if with_val:
                    sig.append(P("value", f"{T}*", "out", "1"))
                entry = rng.choice(["{op}_{t}", "find_{op}_{t}", "i{op}_{t}"]).format(op=op, t=tc) + ("_val" if with_val else "")
                iv = rng.choice(["i", "k"])
                v0, vi = _val(T, absval, "x[0]"), _val(T, absval, f"x[{iv}]")
                ref = (f"/* ties: the lowest index wins (strict comparison keeps the first extreme) */\n"
                       f"void {entry}({decls(sig)}) {{\n    {T} best = {v0};\n    int where = 0;\n"
                       f"    for (int {iv} = 1; {iv} < n; {iv}++) {{\n        {T} v = {vi};\n"
                       f"        if (v {cmp} best) {{\n            best = v;\n            where = {iv};\n        }}\n    }}\n"
                       f"    index[0] = where;\n" + ("    value[0] = best;\n" if with_val else "") + "}\n")
                big = (1 << 26) if T != "double" else (1 << 25)
                tests = [{"name": "one", "sizes": {"n": 1}}, {"name": "odd", "sizes": {"n": 1003}},
                         {"name": "mid", "sizes": {"n": 100003}}, {"name": "perf", "sizes": {"n": big}, "perf": True}]
                recs.append(record(FAMILY, f"{op}_{tc}_full{'_val' if with_val else ''}", entry, sig, ref,
                                   _full(entry, sig, T, kind, absval, with_val), tests,
                                   {"op": op, "dtype": T, "scope": "full", "with_value": with_val}))
                # ---- per row
                for layout in ("contig", "lda"):
                    ld = "lda" if layout == "lda" else "cols"
                    sig = [P("rows", "int", "size"), P("cols", "int", "size")]
                    if layout == "lda":
                        sig.append(P("lda", "int", "size"))
                    sig += [P("a", f"const {T}*", "in", f"rows*{ld}", DATA[T]), P("index", "int*", "out", "rows")]
                    if with_val:
                        sig.append(P("value", f"{T}*", "out", "rows"))
                    entry = rng.choice(["{op}_rows_{t}", "row_{op}_{t}", "{op}_dim1_{t}"]).format(op=op, t=tc)
                    entry += ("_ld" if layout == "lda" else "") + ("_val" if with_val else "")
                    rv, cv = rng.choice([("r", "c"), ("i", "j"), ("row", "col")])
                    e0 = _val(T, absval, f"a[(size_t){rv} * {ld}]")
                    ej = _val(T, absval, f"a[(size_t){rv} * {ld} + {cv}]")
                    ref = (f"/* per row; ties: the lowest column index wins */\n"
                           f"void {entry}({decls(sig)}) {{\n    for (int {rv} = 0; {rv} < rows; {rv}++) {{\n"
                           f"        {T} best = {e0};\n        int where = 0;\n"
                           f"        for (int {cv} = 1; {cv} < cols; {cv}++) {{\n            {T} v = {ej};\n"
                           f"            if (v {cmp} best) {{\n                best = v;\n                where = {cv};\n            }}\n        }}\n"
                           f"        index[{rv}] = where;\n" + (f"        value[{rv}] = best;\n" if with_val else "") + "    }\n}\n")
                    R, C = rng.choice([(8192, 4096), (1 << 20, 32), (4096, 8192)])
                    if T == "double":
                        R //= 2
                    pad = (lambda c: {"lda": c + 5}) if layout == "lda" else (lambda c: {})
                    tests = [{"name": "one", "sizes": {"rows": 1, "cols": 1, **pad(1)}},
                             {"name": "ragged", "sizes": {"rows": 37, "cols": 1001, **pad(1001)}},
                             {"name": "tall_odd", "sizes": {"rows": 1003, "cols": 3, **pad(3)}},
                             {"name": "perf", "sizes": {"rows": R, "cols": C, **pad(C)}, "perf": True}]
                    recs.append(record(FAMILY, f"{op}_{tc}_rows_{layout}{'_val' if with_val else ''}", entry, sig, ref,
                                       _rows(entry, sig, T, kind, absval, with_val, ld), tests,
                                       {"op": op, "dtype": T, "scope": "rows", "layout": layout, "with_value": with_val}))
    return recs
