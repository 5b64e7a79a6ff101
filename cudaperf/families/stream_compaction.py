"""Order-preserving stream compaction: keep the elements (or indices) satisfying a predicate.

Guarantees: every task is a distinct serial C program that copies, in input order, the values
and/or indices of the elements satisfying a predicate (threshold, range, sign, magnitude,
non-zero, parity, bit mask) into dense outputs, writes the number kept into `count[0]` and zero
fills the rest of every output, so all outputs are fully defined. Predicates compare raw input
values with scalars (no arithmetic), so the decision is the same in any precision. CUDA
variants: naive (a thread per 256-element chunk, one thread scanning the chunk counts), a
three-kernel blocked scan with a shared-memory block scan, and the same pipeline with striped
coalesced loads ranked by warp ballots; scratch for block offsets is cudaMalloc'ed per call.
"""
from __future__ import annotations

import random

from cudaperf.families._d2kit import P, T, TYPES, V, blocks, capped_blocks, cargs, cparams, record

FAMILY = "stream_compaction"
CATEGORY = "scan"

FPREDS = ("gt", "lt", "positive", "in_range", "out_range", "abs_gt", "abs_lt", "nonzero")
IPREDS = ("gt", "lt", "positive", "in_range", "out_range", "nonzero", "even", "odd", "bitmask")
ENTRY = {"values": "compact", "indices": "select_indices", "pairs": "filter_with_index"}


def _pred(pred, ty, v, fabs):
    tn = ty.name
    if pred == "gt":
        return f"{v} > thr", [P("thr", tn, "scalar", init="uniform(-0.5, 0.5)" if ty.is_float else "randint(-50, 50)")]
    if pred == "lt":
        return f"{v} < thr", [P("thr", tn, "scalar", init="uniform(-0.5, 0.5)" if ty.is_float else "randint(-50, 50)")]
    if pred == "positive":
        return f"{v} > {ty.zero}", []
    lohi = [P("lo", tn, "scalar", init="uniform(-0.6, -0.1)" if ty.is_float else "randint(-60, -10)"),
            P("hi", tn, "scalar", init="uniform(0.1, 0.6)" if ty.is_float else "randint(10, 60)")]
    if pred == "in_range":
        return f"{v} >= lo && {v} < hi", lohi
    if pred == "out_range":
        return f"{v} < lo || {v} >= hi", lohi
    if pred == "abs_gt":
        return f"{fabs}({v}) > thr", [P("thr", tn, "scalar", init="uniform(0.2, 0.8)")]
    if pred == "abs_lt":
        return f"{fabs}({v}) < thr", [P("thr", tn, "scalar", init="uniform(0.2, 0.8)")]
    if pred == "nonzero":
        return f"{v} != {ty.zero}", []
    if pred == "even":
        return f"{v} % 2 == 0", []
    if pred == "odd":
        return f"{v} % 2 != 0", []
    return f"({v} & mask) != 0", [P("mask", "int", "scalar", init="choice(1, 2, 4, 8, 6, 12)")]


def _init(pred, ty):
    if pred == "nonzero":
        return "choice(0, 0, 1, -2, 3)"
    return "uniform(-1, 1)" if ty.is_float else "randint(-100, 100)"


def _outs(mode, tn):
    o = []
    if mode in ("values", "pairs"):
        o.append(P("out", f"{tn}*", "out", "n"))
    if mode in ("indices", "pairs"):
        o.append(P("idx", "int*", "out", "n"))
    return o + [P("count", "int*", "out", "1")]


def _store(mode, pos, i):
    s = []
    if mode in ("values", "pairs"):
        s.append(f"out[{pos}] = in[{i}];")
    if mode in ("indices", "pairs"):
        s.append(f"idx[{pos}] = (int)({i});")
    return " ".join(s)


def _zero(mode, i, ty):
    s = []
    if mode in ("values", "pairs"):
        s.append(f"out[{i}] = {ty.zero};")
    if mode in ("indices", "pairs"):
        s.append(f"idx[{i}] = 0;")
    return " ".join(s)


def _reference(entry, sig, pred, mode, ty):
    cond, _ = _pred(pred, ty, "in[i]", "fabs")
    L = [f"void {entry}({cparams(sig)}) {{", "    int k = 0;", "    for (int i = 0; i < n; i++) {",
         f"        if ({cond}) {{", f"            {_store(mode, 'k', 'i')}", "            k++;",
         "        }", "    }", "    count[0] = k;",
         f"    for (int i = k; i < n; i++) {{ {_zero(mode, 'i', ty)} }}", "}"]
    return "\n".join(L)


def _variants(entry, sig, pred, mode, ty):
    ps, args = cparams(sig), cargs(sig)
    cond, _ = _pred(pred, ty, "in[i]", ty.fn("fabs") if ty.is_float else "abs")
    zfill = f"""
__global__ void {entry}_fill({ps}) {{
    int kept = count[0];
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x)
        if (i >= kept) {{ {_zero(mode, 'i', ty)} }}
}}
"""
    scan1 = f"""
// exclusive scan of nb block counts in place, total into count[0]; one block of 1024 threads
__global__ void {entry}_scan(int nb, int *bc, int *count) {{
    __shared__ int s[1024];
    __shared__ int carry;
    int t = threadIdx.x;
    if (t == 0) carry = 0;
    __syncthreads();
    for (int c0 = 0; c0 < nb; c0 += 1024) {{
        int v = c0 + t < nb ? bc[c0 + t] : 0;
        s[t] = v;
        __syncthreads();
        for (int off = 1; off < 1024; off <<= 1) {{
            int a = t >= off ? s[t - off] : 0;
            __syncthreads();
            s[t] += a;
            __syncthreads();
        }}
        if (c0 + t < nb) bc[c0 + t] = carry + s[t] - v;
        __syncthreads();
        if (t == 1023) carry += s[1023];
        __syncthreads();
    }}
    if (t == 0) count[0] = carry;
}}
"""
    naive = zfill + f"""
__global__ void {entry}_count({ps}, int *cc) {{
    long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long nc = ((long long)n + 255) / 256;
    if (c >= nc) return;
    int k = 0;
    long long end = (c + 1) * 256 < n ? (c + 1) * 256 : n;
    for (long long i = c * 256; i < end; i++) if ({cond}) k++;
    cc[c] = k;
}}
__global__ void {entry}_serial_scan(long long nc, int *cc, int *count) {{
    int run = 0;
    for (long long c = 0; c < nc; c++) {{ int v = cc[c]; cc[c] = run; run += v; }}
    count[0] = run;
}}
__global__ void {entry}_write({ps}, const int *cc) {{
    long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long nc = ((long long)n + 255) / 256;
    if (c >= nc) return;
    int k = cc[c];
    long long end = (c + 1) * 256 < n ? (c + 1) * 256 : n;
    for (long long i = c * 256; i < end; i++) if ({cond}) {{ {_store(mode, 'k', 'i')} k++; }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) {{ cudaMemsetAsync(count, 0, sizeof(int)); return; }}
    long long nc = ((long long)n + 255) / 256;
    int *cc = 0;
    cudaMalloc(&cc, sizeof(int) * nc);
    {entry}_count<<<{blocks('nc')}, 256>>>({args}, cc);
    {entry}_serial_scan<<<1, 1>>>(nc, cc, count);
    {entry}_write<<<{blocks('nc')}, 256>>>({args}, cc);
    {entry}_fill<<<{blocks('n')}, 256>>>({args});
    cudaFree(cc);
}}
"""
    # blocked: tile of 1024 = 256 threads x 4 consecutive items; shared-memory Hillis-Steele scan
    blocked = zfill + scan1 + f"""
__global__ void {entry}_bcount({ps}, int *bc) {{
    __shared__ int s[256];
    long long base = (long long)blockIdx.x * 1024 + threadIdx.x * 4;
    int k = 0;
    for (int r = 0; r < 4; r++) {{ long long i = base + r; if (i < n && ({cond})) k++; }}
    s[threadIdx.x] = k;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {{
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }}
    if (threadIdx.x == 0) bc[blockIdx.x] = s[0];
}}
__global__ void {entry}_bwrite({ps}, const int *bc) {{
    __shared__ int s[256];
    long long base = (long long)blockIdx.x * 1024 + threadIdx.x * 4;
    bool f[4];
    int k = 0;
    for (int r = 0; r < 4; r++) {{ long long i = base + r; f[r] = i < n && ({cond}); k += f[r]; }}
    int t = threadIdx.x;
    s[t] = k;
    __syncthreads();
    for (int off = 1; off < 256; off <<= 1) {{
        int a = t >= off ? s[t - off] : 0;
        __syncthreads();
        s[t] += a;
        __syncthreads();
    }}
    int pos = bc[blockIdx.x] + s[t] - k;
    for (int r = 0; r < 4; r++) if (f[r]) {{ long long i = base + r; {_store(mode, 'pos', 'i')} pos++; }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) {{ cudaMemsetAsync(count, 0, sizeof(int)); return; }}
    int nb = (int)(((long long)n + 1023) / 1024);
    int *bc = 0;
    cudaMalloc(&bc, sizeof(int) * nb);
    {entry}_bcount<<<nb, 256>>>({args}, bc);
    {entry}_scan<<<1, 1024>>>(nb, bc, count);
    {entry}_bwrite<<<nb, 256>>>({args}, bc);
    {entry}_fill<<<{capped_blocks('n', 256)}, 256>>>({args});
    cudaFree(bc);
}}
"""
    ballot = zfill + scan1 + f"""
__global__ void {entry}_wcount({ps}, int *bc) {{
    long long base = (long long)blockIdx.x * 1024 + threadIdx.x;
    int k = 0;
    for (int r = 0; r < 4; r++) {{
        long long i = base + r * 256;
        k += __syncthreads_count(i < n && ({cond}));
    }}
    if (threadIdx.x == 0) bc[blockIdx.x] = k;
}}
__global__ void {entry}_wwrite({ps}, const int *bc) {{
    __shared__ int wsum[8];
    long long base = (long long)blockIdx.x * 1024 + threadIdx.x;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int running = bc[blockIdx.x];
    for (int r = 0; r < 4; r++) {{
        long long i = base + r * 256;
        bool f = i < n && ({cond});
        unsigned m = __ballot_sync(0xffffffffu, f);
        int rank = __popc(m & ((1u << lane) - 1u));
        if (lane == 0) wsum[w] = __popc(m);
        __syncthreads();
        int before = 0, total = 0;
        for (int q = 0; q < 8; q++) {{ int c = wsum[q]; if (q < w) before += c; total += c; }}
        if (f) {{ int pos = running + before + rank; {_store(mode, 'pos', 'i')} }}
        running += total;
        __syncthreads();
    }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) {{ cudaMemsetAsync(count, 0, sizeof(int)); return; }}
    int nb = (int)(((long long)n + 1023) / 1024);
    int *bc = 0;
    cudaMalloc(&bc, sizeof(int) * nb);
    {entry}_wcount<<<nb, 256>>>({args}, bc);
    {entry}_scan<<<1, 1024>>>(nb, bc, count);
    {entry}_wwrite<<<nb, 256>>>({args}, bc);
    {entry}_fill<<<{capped_blocks('n', 256)}, 256>>>({args});
    cudaFree(bc);
}}
"""
    return [V("naive", "one thread per 256-element chunk counts and later writes its chunk "
              "serially; a single thread scans the chunk counts", naive),
            V("two_pass", "1024-element tiles (4 consecutive items per thread): block counts, "
              "one-block scan of tile offsets, shared-memory block scan for in-tile ranks", blocked),
            V("warp_shuffle", "striped coalesced 1024-element tiles: __syncthreads_count for tile "
              "counts, warp __ballot_sync/__popc ranks plus per-warp totals for in-tile order", ballot)]


def generate(rng: random.Random) -> list[dict]:
    out = []
    for tn in ("float", "double", "int"):
        ty = TYPES[tn]
        for pred in (FPREDS if ty.is_float else IPREDS):
            for mode in ("values", "indices", "pairs"):
                cond, scal = _pred(pred, ty, "x", "fabs")
                entry = f"{ENTRY[mode]}_{pred}_{ty.tag}"
                sig = [P("n", "int", "size")] + scal + [P("in", f"const {tn}*", "in", "n", _init(pred, ty))]
                sig += _outs(mode, tn)
                ref = _reference(entry, sig, pred, mode, ty)
                tests = [T("one", {"n": 1}), T("odd", {"n": 1003}), T("mid", {"n": 300007}),
                         T("perf", {"n": 1 << 25}, perf=True)]
                out.append(record(FAMILY, f"{pred}_{mode}_{ty.tag}", entry, sig, ref,
                                  _variants(entry, sig, pred, mode, ty), tests,
                                  {"predicate": pred, "output": mode, "dtype": tn}))
    return out
