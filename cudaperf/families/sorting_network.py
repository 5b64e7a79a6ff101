"""sorting_network family: data-independent sorting networks over many small independent rows.

Guarantees: 74 distinct tasks: bitonic sort of fixed power-of-two segments (32 .. 2048 keys)
and odd-even transposition sort of short rows (5 .. 48 keys, any width), ascending or
descending, over int, float (and double for bitonic) keys. A sort's output is unique whatever
the order of equal keys, so every variant must match the reference exactly. Variants: naive
(one thread runs the whole network for one segment/row in global memory); bitonic: one launch
per network stage with a thread per element, and a shared-memory version that runs all stages
of one or more segments in one block; odd-even: the row held in registers, and rows staged
through shared memory with coalesced loads.
"""
from __future__ import annotations

import random

FAMILY = "sorting_network"
CATEGORY = "sort"
_HDR = "#include <cuda_runtime.h>\n"
_INIT = {"int": "randint(-1000000, 1000000)", "float": "uniform(-100, 100)", "double": "uniform(-1, 1)"}
_TAG = {"int": "i32", "float": "f32", "double": "f64"}
_SIZE = {"int": 4, "float": 4, "double": 8}


def _min_bytes(T: str, count: str, k: int) -> str:
    """Roofline lower bound (meta.min_bytes) for sorting `count` independent groups of k keys
    in place: every key is read, but a key already at its sorted position need not be written
    back. With random keys that is 1/k of them in expectation (oddeven5 ran at 0.85x the
    read + write count), so writes are counted for (k-1)/k of the keys, at half that share
    (data-dependent traffic is counted at half its expected amount)."""
    return f"{count}*{k}*{_SIZE[T]}+(({count}*{k}*{k - 1})//{2 * k})*{_SIZE[T]}"


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper


def _bitonic(T, S, asc):
    d = "asc" if asc else "desc"
    entry = f"bitonic_sort{S}_{d}_{_TAG[T]}"
    sig = [_p("nseg", "int", "size"), _p("keys", f"{T}*", "inout", f"nseg*{S}", _INIT[T])]
    params = f"int nseg, {T} *keys"
    upc = "(i & k) == 0" if asc else "(i & k) != 0"
    ref = f"""void {entry}(int nseg, {T} *keys) {{
    for (int s = 0; s < nseg; s++) {{
        {T} *a = keys + s * {S};
        for (int k = 2; k <= {S}; k <<= 1)
            for (int j = k >> 1; j > 0; j >>= 1)
                for (int i = 0; i < {S}; i++) {{
                    int l = i ^ j;
                    if (l > i) {{
                        int up = {upc};
                        if ((up && a[i] > a[l]) || (!up && a[i] < a[l])) {{
                            {T} t = a[i]; a[i] = a[l]; a[l] = t;
                        }}
                    }}
                }}
    }}
}}
"""
    cex = lambda A, i, l, up: (f"{T} x = {A}[{i}], y = {A}[{l}]; "
                               f"if (({up}) ? (x > y) : (x < y)) {{ {A}[{i}] = y; {A}[{l}] = x; }}")
    naive = _HDR + f'''
__global__ void {entry}_k(int nseg, {T} *keys) {{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= nseg) return;
    {T} *a = keys + (size_t)s * {S};
    for (int k = 2; k <= {S}; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1)
            for (int i = 0; i < {S}; i++) {{
                int l = i ^ j;
                if (l > i) {{ bool up = {upc}; {cex("a", "i", "l", "up")} }}
            }}
}}
extern "C" void {entry}(int nseg, {T} *keys) {{
    if (nseg <= 0) return;
    {entry}_k<<<(nseg + 255) / 256, 256>>>(nseg, keys);
}}
'''
    stages = _HDR + f'''
// one launch per (k, j) stage; each thread owns the lower element of one compare-exchange pair
__global__ void {entry}_stage({T} *keys, size_t npairs, int k, int j) {{
    size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    size_t seg = p / {S // 2};
    int q = (int)(p % {S // 2});
    int i = 2 * j * (q / j) + (q % j), l = i + j;
    bool up = {upc};
    {T} *a = keys + seg * {S};
    {cex("a", "i", "l", "up")}
}}
extern "C" void {entry}(int nseg, {T} *keys) {{
    if (nseg <= 0) return;
    size_t npairs = (size_t)nseg * {S // 2};
    unsigned blocks = (unsigned)((npairs + 255) / 256);
    for (int k = 2; k <= {S}; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1)
            {entry}_stage<<<blocks, 256>>>(keys, npairs, k, j);
}}
'''
    E = max(S, 512)
    TPB = E // 2
    smem = _HDR + f'''
// {E // S} segment(s) of {S} keys per block, all stages in shared memory, {TPB} threads
__global__ void {entry}_smem(int nseg, {T} *keys) {{
    __shared__ {T} sh[{E}];
    size_t base = (size_t)blockIdx.x * {E};
    size_t total = (size_t)nseg * {S};
    for (int e = threadIdx.x; e < {E}; e += {TPB})
        if (base + e < total) sh[e] = keys[base + e];
    __syncthreads();
    for (int k = 2; k <= {S}; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {{
            int q = threadIdx.x;
            int i = 2 * j * (q / j) + (q % j), l = i + j;
            bool up = ((i & {S - 1}) & k) {"==" if asc else "!="} 0;
            // slots past the last segment hold garbage; they are sorted among themselves and never stored
            {cex("sh", "i", "l", "up")}
            __syncthreads();
        }}
    for (int e = threadIdx.x; e < {E}; e += {TPB})
        if (base + e < total) keys[base + e] = sh[e];
}}
extern "C" void {entry}(int nseg, {T} *keys) {{
    if (nseg <= 0) return;
    size_t total = (size_t)nseg * {S};
    {entry}_smem<<<(unsigned)((total + {E - 1}) / {E}), {TPB}>>>(nseg, keys);
}}
'''
    n = (1 << 23) if S <= 256 else (1 << 22)
    return {"task_id": f"c2cuda/{FAMILY}/bitonic{S}_{d}_{_TAG[T]}", "track": "c2cuda", "entry": entry,
            "signature": sig, "reference": ref,
            "variants": [{"name": "naive", "strategy": "one thread per segment runs the whole network in global memory", "source": naive},
                         {"name": "coalesced", "strategy": "one kernel per network stage, one thread per compare-exchange", "source": stages},
                         {"name": "tiled_smem", "strategy": "whole segments in shared memory, all stages in one launch", "source": smem}],
            "tests": [{"name": "one", "sizes": {"nseg": 1}}, {"name": "ragged", "sizes": {"nseg": 37}},
                      {"name": "odd_blocks", "sizes": {"nseg": max(3, 1537 // S * 3 + 1)}},
                      {"name": "perf", "sizes": {"nseg": n // S}, "perf": True}],
            "meta": {"flops": "0", "min_bytes": _min_bytes(T, "nseg", S), "source": "generated",
                     "knobs": {"network": "bitonic", "segment": S, "order": d, "dtype": T}}}


def _oddeven(T, W, asc):
    d = "asc" if asc else "desc"
    entry = f"oddeven_sort_rows{W}_{d}_{_TAG[T]}"
    cmp = ">" if asc else "<"
    sig = [_p("rows", "int", "size"), _p("data", f"{T}*", "inout", f"rows*{W}", _INIT[T])]
    ref = f"""void {entry}(int rows, {T} *data) {{
    for (int r = 0; r < rows; r++) {{
        {T} *row = data + r * {W};
        for (int phase = 0; phase < {W}; phase++)
            for (int i = phase & 1; i + 1 < {W}; i += 2)
                if (row[i] {cmp} row[i + 1]) {{
                    {T} t = row[i]; row[i] = row[i + 1]; row[i + 1] = t;
                }}
    }}
}}
"""
    naive = _HDR + f'''
__global__ void {entry}_k(int rows, {T} *data) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    {T} *row = data + (size_t)r * {W};
    for (int phase = 0; phase < {W}; phase++)
        for (int i = phase & 1; i + 1 < {W}; i += 2)
            if (row[i] {cmp} row[i + 1]) {{ {T} t = row[i]; row[i] = row[i + 1]; row[i + 1] = t; }}
}}
extern "C" void {entry}(int rows, {T} *data) {{
    if (rows <= 0) return;
    {entry}_k<<<(rows + 255) / 256, 256>>>(rows, data);
}}
'''
    reg = _HDR + f'''
// constant trip counts, fully unrolled: the row lives in registers ({W} values)
__global__ void {entry}_reg(int rows, {T} *data) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    {T} *row = data + (size_t)r * {W};
    {T} v[{W}];
#pragma unroll
    for (int i = 0; i < {W}; i++) v[i] = row[i];
#pragma unroll
    for (int phase = 0; phase < {W}; phase++)
#pragma unroll
        for (int i = phase & 1; i + 1 < {W}; i += 2) {{
            {T} a = v[i], b = v[i + 1];
            bool sw = a {cmp} b;
            v[i] = sw ? b : a; v[i + 1] = sw ? a : b;
        }}
#pragma unroll
    for (int i = 0; i < {W}; i++) row[i] = v[i];
}}
extern "C" void {entry}(int rows, {T} *data) {{
    if (rows <= 0) return;
    {entry}_reg<<<(rows + 127) / 128, 128>>>(rows, data);
}}
'''
    PW = W if W % 2 else W + 1  # odd row pitch: threads of a warp hit different banks
    smem = _HDR + f'''
#define RB 64
__global__ void {entry}_smem(int rows, {T} *data) {{
    __shared__ {T} sh[RB * {PW}];
    size_t r0 = (size_t)blockIdx.x * RB;
    int nr = (int)min((size_t)RB, (size_t)rows - r0);
    const {T} *src = data + r0 * {W};
    for (int l = threadIdx.x; l < nr * {W}; l += blockDim.x) sh[(l / {W}) * {PW} + l % {W}] = src[l];
    __syncthreads();
    if (threadIdx.x < nr) {{
        {T} *row = sh + threadIdx.x * {PW};
        for (int phase = 0; phase < {W}; phase++)
            for (int i = phase & 1; i + 1 < {W}; i += 2)
                if (row[i] {cmp} row[i + 1]) {{ {T} t = row[i]; row[i] = row[i + 1]; row[i + 1] = t; }}
    }}
    __syncthreads();
    for (int l = threadIdx.x; l < nr * {W}; l += blockDim.x) data[r0 * {W} + l] = sh[(l / {W}) * {PW} + l % {W}];
}}
extern "C" void {entry}(int rows, {T} *data) {{
    if (rows <= 0) return;
    {entry}_smem<<<(rows + RB - 1) / RB, RB>>>(rows, data);
}}
'''
    rows = min(1 << 22, (1 << 28) // (W * W))
    return {"task_id": f"c2cuda/{FAMILY}/oddeven{W}_{d}_{_TAG[T]}", "track": "c2cuda", "entry": entry,
            "signature": sig, "reference": ref,
            "variants": [{"name": "naive", "strategy": "one thread per row, network in global memory", "source": naive},
                         {"name": "register_blocking", "strategy": "row held in registers, unrolled branch-free compare-exchange", "source": reg},
                         {"name": "tiled_smem", "strategy": "64 rows per block staged through shared memory with coalesced loads/stores", "source": smem}],
            "tests": [{"name": "one", "sizes": {"rows": 1}}, {"name": "ragged", "sizes": {"rows": 1003}},
                      {"name": "perf", "sizes": {"rows": rows}, "perf": True}],
            "meta": {"flops": "0", "min_bytes": _min_bytes(T, "rows", W), "source": "generated",
                     "knobs": {"network": "odd_even_transposition", "width": W, "order": d, "dtype": T}}}


def generate(rng: random.Random) -> list[dict]:
    out = [_bitonic(T, S, a) for T in ("int", "float", "double") for S in (32, 64, 128, 256, 512, 1024, 2048)
           for a in (True, False)]
    out += [_oddeven(T, W, a) for T in ("int", "float") for W in (5, 8, 12, 16, 24, 31, 32, 48) for a in (True, False)]
    rng.shuffle(out)
    return out
