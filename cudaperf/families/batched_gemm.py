"""batched_gemm family: many small fixed-size matrix products in strided batches.

Guarantees: 80 distinct tasks over element type (float, double), the fixed matrix shape
(m x k times k x n, written as literal loop bounds the way code for 3x3 rotations or 4x4
transforms is written; from 2x2x2 to 32x32x32 and non-square ones) and the batch layout
(NN, NT, TN, one B broadcast to every item, alpha/beta update). The only size parameter is the
batch count. Variants: naive (one thread per matrix product), one thread per output element
(coalesced across the batch), and blocks that stage whole matrices through shared memory.
"""
from __future__ import annotations

import itertools
import random

FAMILY = "batched_gemm"
CATEGORY = "linalg"
_HDR = "#include <cuda_runtime.h>\n"
_DIMS = [(2, 2, 2), (3, 3, 3), (4, 4, 4), (8, 8, 8), (16, 16, 16), (32, 32, 32), (6, 4, 9), (16, 8, 32)]
_LAYOUTS = ("nn", "nt", "tn", "shared_b", "axpby")


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper


def _task(T, dims, layout, style):
    m, n, k = dims
    A, B, C, NB, b = (("A", "B", "C", "batch", "b") if style == 0 else ("lhs", "rhs", "out", "count", "e"))
    pre = "s" if T == "float" else "d"
    entry = f"{pre}{'bmm' if style == 0 else 'batched_matmul'}{m}x{n}x{k}_{layout}"
    zero = "0.0f" if T == "float" else "0.0"
    MK, KN, MN = m * k, k * n, m * n

    def a_at(bb, i, p, base=None):
        off = base if base is not None else f"(size_t){bb} * {MK}"
        return f"{A}[{off} + {i} * {k} + {p}]" if layout != "tn" else f"{A}[{off} + {p} * {m} + {i}]"

    def b_at(bb, p, j, base=None):
        off = base if base is not None else f"(size_t){bb} * {KN}"
        if layout == "shared_b":
            return f"{B}[{p} * {n} + {j}]"
        return f"{B}[{off} + {j} * {k} + {p}]" if layout == "nt" else f"{B}[{off} + {p} * {n} + {j}]"

    def store(cidx, s):
        return (f"{C}[{cidx}] = alpha * {s} + beta * {C}[{cidx}];" if layout == "axpby"
                else f"{C}[{cidx}] = {s};")

    sig = [_p(NB, "int", "size")]
    if layout == "axpby":
        sig.append(_p("alpha", T, "scalar", init="uniform(-2, 2)"))
    sig += [_p(A, f"const {T}*", "in", f"{NB}*{MK}", "uniform(-1, 1)"),
            _p(B, f"const {T}*", "in", str(KN) if layout == "shared_b" else f"{NB}*{KN}", "uniform(-1, 1)")]
    if layout == "axpby":
        sig.append(_p("beta", T, "scalar", init="uniform(-2, 2)"))
    sig.append(_p(C, f"{T}*", "inout" if layout == "axpby" else "out", f"{NB}*{MN}",
                  "uniform(-1, 1)" if layout == "axpby" else None))
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)

    ref_a = a_at(b, "i", "p", f"{b} * {MK}")
    ref_b = b_at(b, "p", "j", f"{b} * {KN}")
    ref = (f"void {entry}({params}) {{\n"
           f"    for (int {b} = 0; {b} < {NB}; {b}++) {{\n"
           f"        for (int i = 0; i < {m}; i++)\n"
           f"            for (int j = 0; j < {n}; j++) {{\n"
           f"                {T} s = {zero};\n"
           f"                for (int p = 0; p < {k}; p++)\n"
           f"                    s += {ref_a} * {ref_b};\n"
           f"                {store(f'{b} * {MN} + i * {n} + j', 's')}\n"
           f"            }}\n    }}\n}}\n")

    naive = _HDR + f'''
__global__ void {entry}_k({params}) {{
    int {b} = blockIdx.x * blockDim.x + threadIdx.x;
    if ({b} >= {NB}) return;
    for (int i = 0; i < {m}; i++)
        for (int j = 0; j < {n}; j++) {{
            {T} s = {zero};
            for (int p = 0; p < {k}; p++) s += {a_at(b, "i", "p")} * {b_at(b, "p", "j")};
            {store(f"(size_t){b} * {MN} + i * {n} + j", "s")}
        }}
}}
extern "C" void {entry}({params}) {{
    if ({NB} <= 0) return;
    {entry}_k<<<({NB} + 255) / 256, 256>>>({args});
}}
'''
    per_out = _HDR + f'''
__global__ void {entry}_elem({params}) {{
    size_t total = (size_t){NB} * {MN};
    for (size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += (size_t)gridDim.x * blockDim.x) {{
        size_t {b} = o / {MN};
        int r = (int)(o % {MN}), i = r / {n}, j = r % {n};
        {T} s = {zero};
#pragma unroll
        for (int p = 0; p < {k}; p++) s += __ldg(&{a_at(b, "i", "p")}) * __ldg(&{b_at(b, "p", "j")});
        {store("o", "s")}
    }}
}}
extern "C" void {entry}({params}) {{
    if ({NB} <= 0) return;
    size_t total = (size_t){NB} * {MN};
    size_t blocks = (total + 255) / 256; if (blocks > 132 * 32) blocks = 132 * 32;
    {entry}_elem<<<(unsigned)blocks, 256>>>({args});
}}
'''
    G = max(1, 256 // MN)
    b_smem = KN if layout == "shared_b" else G * KN
    b_load = (f"for (int l = threadIdx.x; l < {KN}; l += blockDim.x) sB[l] = {B}[l];" if layout == "shared_b" else
              f"for (int l = threadIdx.x; l < cnt * {KN}; l += blockDim.x) sB[l] = {B}[(size_t)b0 * {KN} + l];")
    b_s = (lambda p, j: f"sB[{p} * {n} + {j}]") if layout == "shared_b" else (
        (lambda p, j: f"sB[g * {KN} + {j} * {k} + {p}]") if layout == "nt" else (lambda p, j: f"sB[g * {KN} + {p} * {n} + {j}]"))
    a_s = (lambda i, p: f"sA[g * {MK} + {p} * {m} + {i}]") if layout == "tn" else (lambda i, p: f"sA[g * {MK} + {i} * {k} + {p}]")
    smem = _HDR + f'''
// {G} matrices per block; each item's A and B are contiguous in memory, so the loads are coalesced
__global__ void {entry}_smem({params}) {{
    __shared__ {T} sA[{G * MK}];
    __shared__ {T} sB[{b_smem}];
    size_t b0 = (size_t)blockIdx.x * {G};
    int cnt = (int)min((size_t){G}, (size_t){NB} - b0);
    for (int l = threadIdx.x; l < cnt * {MK}; l += blockDim.x) sA[l] = {A}[b0 * {MK} + l];
    {b_load}
    __syncthreads();
    for (int o = threadIdx.x; o < cnt * {MN}; o += blockDim.x) {{
        int g = o / {MN}, r = o % {MN}, i = r / {n}, j = r % {n};
        {T} s = {zero};
#pragma unroll 8
        for (int p = 0; p < {k}; p++) s += {a_s("i", "p")} * {b_s("p", "j")};
        size_t ci = b0 * {MN} + o;
        {store("ci", "s")}
    }}
}}
extern "C" void {entry}({params}) {{
    if ({NB} <= 0) return;
    {entry}_smem<<<({NB} + {G - 1}) / {G}, 256>>>({args});
}}
'''
    per_bytes = (MK + (0 if layout == "shared_b" else KN) + MN * (2 if layout == "axpby" else 1)) * (4 if T == "float" else 8)
    perf_b = int(min(400e6 / per_bytes, 6e8 / (m * n * k)))
    return {"task_id": f"c2cuda/{FAMILY}/{T}_{m}x{n}x{k}_{layout}",
            "track": "c2cuda", "entry": entry, "signature": sig, "reference": ref,
            "variants": [
                {"name": "naive", "strategy": "one thread per matrix product", "source": naive},
                {"name": "coalesced", "strategy": "one thread per output element, grid-stride over the batch", "source": per_out},
                {"name": "tiled_smem", "strategy": f"{G} matrices per block staged in shared memory with coalesced loads", "source": smem},
            ],
            "tests": [{"name": "one", "sizes": {NB: 1}},
                      {"name": "ragged", "sizes": {NB: 1003}},
                      {"name": "perf", "sizes": {NB: perf_b}, "perf": True}],
            "tolerance": {"rtol": 1e-3, "atol": 1e-4, "l2": 1e-4} if T == "float" else {},
            "meta": {"flops": f"2*{NB}*{m * n * k}", "source": "generated",
                     "knobs": {"dtype": T, "m": m, "n": n, "k": k, "layout": layout, "style": style}}}


def generate(rng: random.Random) -> list[dict]:
    out = [_task(T, d, lay, di % 2) for T in ("float", "double")
           for di, d in enumerate(_DIMS) for lay in _LAYOUTS]
    rng.shuffle(out)
    return out
