"""spmv_ell family: sparse matrix-vector products in ELLPACK storage.

Guarantees: 90 distinct tasks from storage (slot-major ELL, row-major ELL, slot-major
ELL-R with a row-length array) x element type (float, double) x operation (y = Ax,
alpha/beta update, accumulate, residual b - Ax, row-scaled D*A*x) x fixed row width (4, 8, 16,
32 slots, written as the literal loop bound; ELL-R rows stop at their length, so ELL-R has
one task per type and operation). Padding slots carry a negative column index
(-1 in practice; the generator draws negatives with a set probability, 10-50%), and the
reference skips every negative index, so the gathers stay in bounds. ELL-R rows stop at their
length. Variants: naive (thread per row); for slot-major storage an unrolled read-only-cache
loop and a two-rows-per-thread version; for row-major storage a sub-warp per row with shuffles
and a vector-load version.
"""
from __future__ import annotations

import itertools
import random

FAMILY = "spmv_ell"
CATEGORY = "sparse"
_HDR = "#include <cuda_runtime.h>\n"


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper
from cudaperf.families._kernelgen import uniq  # noqa: E402


def _min_bytes(fmt, T, form, W, pad):
    """Roofline lower bound (meta.min_bytes); data-dependent traffic at half its expected amount.

    * ellr: a row reads only its first row_len slots (randint(0, W + 1): W/2 of W expected), so
      only m*W/4 slots of columns + values are counted, not the whole m*W arrays;
    * col / row: every column slot is read (to find the padding), but a value only for a real
      entry ((100 - pad)% of the slots, counted at half that);
    * x: only the entries some slot points to, each once (see _kernelgen.uniq);
    * y written once (read too for axpby / accum), b / dscale read once.
    """
    es = 4 if T == "float" else 8
    if fmt == "ellr":
        slots = f"(m*{W}//4)"
        mb = f"m*4+{slots}*{4 + es}"
    else:
        slots = f"(m*{W}*{100 - pad}//200)"
        mb = f"m*{W}*4+{slots}*{es}"
    mb += f"+{uniq(slots, 'n')}*{es}+m*{es * (2 if form in ('axpby', 'accum', 'residual', 'scaled') else 1)}"
    return mb


def _task(fmt, T, form, W, pad):
    pre = "s" if T == "float" else "d"
    entry = {"col": "ellmv", "row": "ell_rowmajor_mv", "ellr": "ellr_mv"}[fmt] + str(W)
    entry = pre + entry + {"plain": "", "axpby": "_axpby", "accum": "_acc", "residual": "_resid", "scaled": "_dscale"}[form]
    zero = "0.0f" if T == "float" else "0.0"
    sig = [_p("m", "int", "size"), _p("n", "int", "size")]
    if form == "axpby":
        sig.append(_p("alpha", T, "scalar", init="uniform(-2, 2)"))
    cinit = f"randint(0, n)" if fmt == "ellr" else f"randint(-(n*{pad}//{100 - pad})-1, n)"
    sig += [_p("ell_cols", "const int*", "in", f"m*{W}", cinit),
            _p("ell_vals", f"const {T}*", "in", f"m*{W}", "uniform(-1, 1)")]
    if fmt == "ellr":
        sig.append(_p("row_len", "const int*", "in", "m", f"randint(0, {W + 1})"))
    sig.append(_p("x", f"const {T}*", "in", "n", "uniform(-1, 1)"))
    if form == "axpby":
        sig.append(_p("beta", T, "scalar", init="uniform(-2, 2)"))
    if form == "residual":
        sig.append(_p("b", f"const {T}*", "in", "m", "uniform(-1, 1)"))
    if form == "scaled":
        sig.append(_p("dscale", f"const {T}*", "in", "m", "uniform(0.5, 2)"))
    inout = form in ("axpby", "accum")
    sig.append(_p("y", f"{T}*", "inout" if inout else "out", "m", "uniform(-1, 1)" if inout else None))
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)

    def slot(i, k, cast=""):
        return f"{k} * {cast}m + {i}" if fmt in ("col", "ellr") else f"{cast}{i} * {W} + {k}"

    def fin(i, s):
        return {"plain": f"y[{i}] = {s};", "axpby": f"y[{i}] = alpha * {s} + beta * y[{i}];",
                "accum": f"y[{i}] += {s};", "residual": f"y[{i}] = b[{i}] - {s};",
                "scaled": f"y[{i}] = dscale[{i}] * {s};"}[form]

    bound = "row_len[i]" if fmt == "ellr" else str(W)
    if fmt == "ellr":
        body_ref = (f"        for (int k = 0; k < row_len[i]; k++)\n"
                    f"            sum += ell_vals[{slot('i', 'k')}] * x[ell_cols[{slot('i', 'k')}]];\n")
    else:
        body_ref = (f"        for (int k = 0; k < {W}; k++) {{\n"
                    f"            int c = ell_cols[{slot('i', 'k')}];\n"
                    f"            if (c < 0) continue;  /* padding */\n"
                    f"            sum += ell_vals[{slot('i', 'k')}] * x[c];\n        }}\n")
    ref = (f"void {entry}({params}) {{\n    for (int i = 0; i < m; i++) {{\n        {T} sum = {zero};\n"
           f"{body_ref}        {fin('i', 'sum')}\n    }}\n}}\n")

    def gpu_body(i, ldg=False, unroll=False):
        L = (lambda e: "__ldg(&" + e + ")") if ldg else (lambda e: e)
        s = slot(i, "k", "(size_t)")
        pr = "#pragma unroll\n        " if unroll else ""
        col = L("ell_cols[" + s + "]")
        val = L("ell_vals[" + s + "]")
        if fmt == "ellr":
            ln = L("row_len[" + i + "]")
            xg = L("x[" + col + "]")
            pr = "#pragma unroll 4\n        " if unroll else ""
            return (f"int len = {ln};\n        {pr}for (int k = 0; k < len; k++) sum += {val} * {xg};")
        xc = L("x[c]")
        return f"{pr}for (int k = 0; k < {W}; k++) {{ int c = {col}; if (c >= 0) sum += {val} * {xc}; }}"

    naive = _HDR + f'''
__global__ void {entry}_k({params}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) {{
        {T} sum = {zero};
        {gpu_body("i")}
        {fin("i", "sum")}
    }}
}}
extern "C" void {entry}({params}) {{
    if (m <= 0) return;
    {entry}_k<<<(m + 255) / 256, 256>>>({args});
}}
'''
    variants = [{"name": "naive", "strategy": "one thread per row", "source": naive}]
    if fmt in ("col", "ellr"):
        unr = _HDR + f'''
__global__ void __launch_bounds__(128) {entry}_unr({params}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    {T} sum = {zero};
    {gpu_body("i", ldg=True, unroll=True)}
    {fin("i", "sum")}
}}
extern "C" void {entry}({params}) {{
    if (m <= 0) return;
    {entry}_unr<<<(m + 127) / 128, 128>>>({args});
}}
'''
        two = _HDR + f'''
// two rows per thread, half a grid apart: both loads of a slot stay coalesced, twice the
// independent gathers in flight per thread
__global__ void {entry}_x2({params}, int half) {{
    int i0 = blockIdx.x * blockDim.x + threadIdx.x;
    for (int h = 0; h < 2; h++) {{
        int i = i0 + h * half;
        if (i0 < half && i < m) {{
            {T} sum = {zero};
            {gpu_body("i", ldg=True)}
            {fin("i", "sum")}
        }}
    }}
}}
extern "C" void {entry}({params}) {{
    if (m <= 0) return;
    int half = (m + 1) / 2;
    {entry}_x2<<<(half + 255) / 256, 256>>>({args}, half);
}}
'''
        variants += [{"name": "loop_unrolled", "strategy": "unrolled slot loop through the read-only cache, 128-thread blocks", "source": unr},
                     {"name": "register_blocking", "strategy": "two rows per thread for more memory-level parallelism", "source": two}]
    else:
        L = min(W, 32)
        sub = _HDR + f'''
// {L} lanes per row read the row's {W} contiguous slots together (coalesced), then shuffle-reduce
__global__ void {entry}_sub({params}) {{
    long long g = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / {L};
    int lane = threadIdx.x % {L};
    unsigned mask = {"0xffffffffu" if L == 32 else f"(((1u << {L}) - 1u) << ((threadIdx.x & 31) / {L} * {L}))"};
    if (g >= m) return;
    int i = (int)g;
    {T} sum = {zero};
    for (int k = lane; k < {W}; k += {L}) {{
        int c = __ldg(&ell_cols[(size_t)i * {W} + k]);
        if (c >= 0) sum += __ldg(&ell_vals[(size_t)i * {W} + k]) * __ldg(&x[c]);
    }}
    for (int off = {L // 2}; off > 0; off >>= 1) sum += __shfl_down_sync(mask, sum, off, {L});
    if (lane == 0) {{ {fin("i", "sum")} }}
}}
extern "C" void {entry}({params}) {{
    if (m <= 0) return;
    long long threads = (long long)m * {L};
    {entry}_sub<<<(unsigned)((threads + 255) / 256), 256>>>({args});
}}
'''
        V, VW = ("float4", 4) if T == "float" else ("double2", 2)
        comps = "xyzw"[:VW]
        # the row's W slots: int4 per 4 columns, {V} per {VW} values (W is a multiple of 4)
        vec = _HDR + f'''
__global__ void {entry}_vec({params}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    const int4 *cr = (const int4 *)(ell_cols + (size_t)i * {W});
    const {V} *vr = (const {V} *)(ell_vals + (size_t)i * {W});
    {T} sum = {zero};
#pragma unroll
    for (int q = 0; q < {W // 4}; q++) {{
        int4 cc = __ldg(&cr[q]);
        {V} v0 = __ldg(&vr[q * {4 // VW}]);
        {f"{V} v1 = __ldg(&vr[q * 2 + 1]);" if VW == 2 else ""}
        if (cc.x >= 0) sum += v0.x * __ldg(&x[cc.x]);
        if (cc.y >= 0) sum += v0.y * __ldg(&x[cc.y]);
        if (cc.z >= 0) sum += {"v0.z" if VW == 4 else "v1.x"} * __ldg(&x[cc.z]);
        if (cc.w >= 0) sum += {"v0.w" if VW == 4 else "v1.y"} * __ldg(&x[cc.w]);
    }}
    {fin("i", "sum")}
}}
extern "C" void {entry}({params}) {{
    if (m <= 0) return;
    {entry}_vec<<<(m + 255) / 256, 256>>>({args});
}}
'''
        variants += [{"name": "warp_shuffle", "strategy": f"{L} lanes per row, coalesced slot reads, segmented shuffle reduction", "source": sub},
                     {"name": "vectorized", "strategy": f"int4 column and {V} value loads per row (rows are 16-byte aligned)", "source": vec}]
    pm = (1 << 25) // W
    tests = [{"name": "one", "sizes": {"m": 1, "n": 1}},
             {"name": "ragged", "sizes": {"m": 1003, "n": 997}},
             {"name": "wide_x", "sizes": {"m": 37, "n": 100003}},
             {"name": "perf", "sizes": {"m": pm, "n": pm}, "perf": True}]
    rec = {"task_id": f"c2cuda/{FAMILY}/{fmt}_{T}_{form}_w{W}", "track": "c2cuda", "entry": entry,
           "signature": sig, "reference": ref, "variants": variants, "tests": tests,
           "meta": {"flops": f"2*m*{W}", "min_bytes": _min_bytes(fmt, T, form, W, pad), "source": "generated",
                    "knobs": {"format": fmt, "dtype": T, "form": form, "width": W,
                              "padding_pct": None if fmt == "ellr" else pad}}}
    if T == "float":
        rec["tolerance"] = {"rtol": 1e-3, "atol": 1e-4, "l2": 5e-4}
    return rec


def generate(rng: random.Random) -> list[dict]:
    combos = list(itertools.product(("col", "row", "ellr"), ("float", "double"),
                                    ("plain", "axpby", "accum", "residual", "scaled"), (4, 8, 16, 32)))
    # ELL-R references do not depend on the width (rows stop at row_len), so the builder's
    # de-duplication keeps one ELL-R task per (dtype, op): 40 + 40 + 10 programs
    return [_task(*c, rng.choice((10, 30, 50))) for c in combos]
