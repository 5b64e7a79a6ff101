"""gemm family: dense matrix products C = alpha*op(A)*op(B) + beta*C.

Guarantees: 84 distinct tasks sampled from element type (float, double, int) x transposition
(NN, NT, TN) x update form (axpby, plain, accumulate) x loop order of the C code (dot-product
i-j-p, or the cache-aware row update i-p-j) x packed or BLAS leading dimensions (lda/ldb/ldc,
whose padding must survive); each gets a shape class (square, tall, wide) for its perf size. C is row-major M x N; A is M x K (or K x M for TN), B is K x N (or N x K for NT).
Perf sizes keep the serial double reference near 5e8 multiply-adds. Variants: naive (one thread
per C element), 16x16 shared-memory tiles, and 64x64 tiles with 4x4 register blocking; all
handle any M, N, K >= 1 by zero-padding partial tiles.
"""
from __future__ import annotations

import itertools
import random

FAMILY = "gemm"
CATEGORY = "linalg"
_HDR = "#include <cuda_runtime.h>\n"

_STYLES = {  # entry stem, A, B, C, M, N, K, i, j, p
    "square": ("gemm", "A", "B", "C", "M", "N", "K", "i", "j", "p"),
    "tall": ("matmul", "a", "b", "c", "m", "n", "k", "row", "col", "l"),
    "wide": ("mm", "lhs", "rhs", "dst", "rows", "cols", "inner", "r", "s", "t"),
}
_PERF = {"square": (1024, 1024, 320), "tall": (4096, 256, 320), "wide": (256, 4096, 320)}


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper


def _task(T, trans, form, order, ld, shape):
    stem, A, B, C, M, N, K, I, J, P = _STYLES[shape]
    pre = {"float": "s", "double": "d", "int": "i"}[T]
    entry = f"{pre}{stem}_{trans.lower()}_{form}{'_ld' if ld else ''}{'_ipj' if order == 'ipj' else ''}"
    LDA = "lda" if ld else (K if trans[0] == "N" else M)
    LDB = "ldb" if ld else (N if trans[1] == "N" else K)
    LDC = "ldc" if ld else N
    zero = {"float": "0.0f", "double": "0.0", "int": "0"}[T]

    def a_at(i, k, cast=""):
        return f"{A}[{cast}{i} * {LDA} + {k}]" if trans[0] == "N" else f"{A}[{cast}{k} * {LDA} + {i}]"

    def b_at(k, j, cast=""):
        return f"{B}[{cast}{k} * {LDB} + {j}]" if trans[1] == "N" else f"{B}[{cast}{j} * {LDB} + {k}]"

    def c_at(i, j, cast=""):
        return f"{C}[{cast}{i} * {LDC} + {j}]"

    def epi(i, j, s, cast="(size_t)"):
        c = c_at(i, j, cast)
        return {"axpby": f"{c} = alpha * {s} + beta * {c};", "plain": f"{c} = {s};",
                "accum": f"{c} += alpha * {s};"}[form]

    rnd = "randint(-8, 8)" if T == "int" else "uniform(-1, 1)"
    srnd = "randint(-3, 4)" if T == "int" else "uniform(-2, 2)"
    sig = [_p(M, "int", "size"), _p(N, "int", "size"), _p(K, "int", "size")]
    if ld:
        sig += [_p("lda", "int", "size"), _p("ldb", "int", "size"), _p("ldc", "int", "size")]
    a_rows = M if trans[0] == "N" else K
    b_rows = K if trans[1] == "N" else N
    if form != "plain":
        sig.append(_p("alpha", T, "scalar", init=srnd))
    sig += [_p(A, f"const {T}*", "in", f"{a_rows}*{LDA}" if ld else f"{M}*{K}", rnd),
            _p(B, f"const {T}*", "in", f"{b_rows}*{LDB}" if ld else f"{K}*{N}", rnd)]
    if form == "axpby":
        sig.append(_p("beta", T, "scalar", init=srnd))
    # with a leading dimension the padding of C must survive, so C is read-write even for C = AB
    c_out = form == "plain" and not ld
    sig.append(_p(C, f"{T}*", "out" if c_out else "inout", f"{M}*{LDC}", None if c_out else rnd))
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)

    if order == "ijp":
        ref = (f"void {entry}({params}) {{\n"
               f"    for (int {I} = 0; {I} < {M}; {I}++) {{\n"
               f"        for (int {J} = 0; {J} < {N}; {J}++) {{\n"
               f"            {T} acc = {zero};\n"
               f"            for (int {P} = 0; {P} < {K}; {P}++)\n"
               f"                acc += {a_at(I, P)} * {b_at(P, J)};\n"
               f"            {epi(I, J, 'acc', '')}\n        }}\n    }}\n}}\n")
    else:  # row-update (i-p-j) order, as cache-aware C code is written: scale the row of C first
        pre_row = {"axpby": f"        for (int {J} = 0; {J} < {N}; {J}++) {c_at(I, J)} *= beta;\n",
                   "plain": f"        for (int {J} = 0; {J} < {N}; {J}++) {c_at(I, J)} = {zero};\n",
                   "accum": ""}[form]
        scale = "" if form == "plain" else "alpha * "
        ref = (f"void {entry}({params}) {{\n"
               f"    for (int {I} = 0; {I} < {M}; {I}++) {{\n" + pre_row +
               f"        for (int {P} = 0; {P} < {K}; {P}++) {{\n"
               f"            {T} aip = {scale}{a_at(I, P)};\n"
               f"            for (int {J} = 0; {J} < {N}; {J}++)\n"
               f"                {c_at(I, J)} += aip * {b_at(P, J)};\n"
               f"        }}\n    }}\n}}\n")

    naive = _HDR + f'''
__global__ void {entry}_k({params}) {{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < (long long){M} * {N}) {{
        int {I} = (int)(idx / {N}), {J} = (int)(idx % {N});
        {T} acc = {zero};
        for (int {P} = 0; {P} < {K}; {P}++) acc += {a_at(I, P, '(size_t)')} * {b_at(P, J, '(size_t)')};
        {epi(I, J, 'acc')}
    }}
}}
extern "C" void {entry}({params}) {{
    long long total = (long long){M} * {N};
    if (total <= 0) return;
    {entry}_k<<<(unsigned)((total + 255) / 256), 256>>>({args});
}}
'''
    tiled = _HDR + f'''
#define TS 16
__global__ void {entry}_tile({params}) {{
    __shared__ {T} As[TS][TS + 1];
    __shared__ {T} Bs[TS][TS + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int {I} = blockIdx.y * TS + ty, {J} = blockIdx.x * TS + tx;
    {T} acc = {zero};
    for (int k0 = 0; k0 < {K}; k0 += TS) {{
        int ka = k0 + tx, kb = k0 + ty;
        As[ty][tx] = ({I} < {M} && ka < {K}) ? {a_at(I, 'ka', '(size_t)')} : ({T})0;
        Bs[ty][tx] = (kb < {K} && {J} < {N}) ? {b_at('kb', J, '(size_t)')} : ({T})0;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TS; kk++) acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }}
    if ({I} < {M} && {J} < {N}) {{ {epi(I, J, 'acc')} }}
}}
extern "C" void {entry}({params}) {{
    if ({M} <= 0 || {N} <= 0) return;
    dim3 block(TS, TS), grid(({N} + TS - 1) / TS, ({M} + TS - 1) / TS);
    {entry}_tile<<<grid, block>>>({args});
}}
'''
    # load mappings follow the storage so that consecutive threads read consecutive addresses
    a_load = ("int ii = l / BK, kk = l % BK;" if trans[0] == "N" else "int ii = l % BM, kk = l / BM;")
    b_load = ("int kk = l / BN, jj = l % BN;" if trans[1] == "N" else "int kk = l % BK, jj = l / BK;")
    reg = _HDR + f'''
#define BM 64
#define BN 64
#define BK 16
__global__ void __launch_bounds__(256) {entry}_rb({params}) {{
    __shared__ {T} As[BK][BM + 1];
    __shared__ {T} Bs[BK][BN];
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    {T} acc[4][4];
#pragma unroll
    for (int ri = 0; ri < 4; ri++)
#pragma unroll
        for (int cj = 0; cj < 4; cj++) acc[ri][cj] = {zero};
    for (int k0 = 0; k0 < {K}; k0 += BK) {{
        for (int l = threadIdx.x; l < BM * BK; l += 256) {{
            {a_load}
            int gi = row0 + ii, gk = k0 + kk;
            As[kk][ii] = (gi < {M} && gk < {K}) ? {a_at('gi', 'gk', '(size_t)')} : ({T})0;
        }}
        for (int l = threadIdx.x; l < BK * BN; l += 256) {{
            {b_load}
            int gk = k0 + kk, gj = col0 + jj;
            Bs[kk][jj] = (gk < {K} && gj < {N}) ? {b_at('gk', 'gj', '(size_t)')} : ({T})0;
        }}
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {{
            {T} av[4], bv[4];
#pragma unroll
            for (int ri = 0; ri < 4; ri++) av[ri] = As[kk][ty + 16 * ri];
#pragma unroll
            for (int cj = 0; cj < 4; cj++) bv[cj] = Bs[kk][tx + 16 * cj];
#pragma unroll
            for (int ri = 0; ri < 4; ri++)
#pragma unroll
                for (int cj = 0; cj < 4; cj++) acc[ri][cj] += av[ri] * bv[cj];
        }}
        __syncthreads();
    }}
#pragma unroll
    for (int ri = 0; ri < 4; ri++)
#pragma unroll
        for (int cj = 0; cj < 4; cj++) {{
            int {I} = row0 + ty + 16 * ri, {J} = col0 + tx + 16 * cj;
            if ({I} < {M} && {J} < {N}) {{ {epi(I, J, 'acc[ri][cj]')} }}
        }}
}}
extern "C" void {entry}({params}) {{
    if ({M} <= 0 || {N} <= 0) return;
    dim3 grid(({N} + BN - 1) / BN, ({M} + BM - 1) / BM);
    {entry}_rb<<<grid, 256>>>({args});
}}
'''
    pm, pn, pk = _PERF[shape]

    def sizes(m, n, k, pad):
        d = {M: m, N: n, K: k}
        if ld:
            d.update(lda=(k if trans[0] == "N" else m) + pad, ldb=(n if trans[1] == "N" else k) + pad + 1,
                     ldc=n + pad + 2)
        return d
    rec = {"task_id": f"c2cuda/{FAMILY}/{T}_{trans.lower()}_{form}_{order}{'_ld' if ld else ''}_{shape}",
           "track": "c2cuda", "entry": entry, "signature": sig, "reference": ref,
           "variants": [
               {"name": "naive", "strategy": "one thread per element of C", "source": naive},
               {"name": "tiled_smem", "strategy": "16x16 shared-memory tiles of A and B", "source": tiled},
               {"name": "register_blocking", "strategy": "64x64 block tile, 16-deep k slices, 4x4 outputs per thread in registers", "source": reg},
           ],
           "tests": [{"name": "one", "sizes": sizes(1, 1, 1, 0)},
                     {"name": "ragged", "sizes": sizes(37, 53, 29, 3)},
                     {"name": "odd_tall", "sizes": sizes(129, 7, 300, 1)},
                     {"name": "perf", "sizes": sizes(pm, pn, pk, 8), "perf": True}],
           "meta": {"flops": f"2*{M}*{N}*{K}", "source": "generated",
                    "knobs": {"dtype": T, "trans": trans, "form": form, "loop_order": order,
                              "leading_dims": ld, "shape": shape}}}
    if ld:
        sz = 4 if T in ("float", "int") else 8
        rec["meta"]["min_bytes"] = f"{sz}*({M}*{K}+{K}*{N}+2*{M}*{N})"
    if T == "float":
        rec["tolerance"] = {"rtol": 2e-3, "atol": 1e-4, "l2": 1e-3}
    return rec


def generate(rng: random.Random) -> list[dict]:
    combos = list(itertools.product(("float", "double", "int"), ("NN", "NT", "TN"), ("axpby", "plain", "accum"),
                                    ("ijp", "ipj"), (False, True)))
    combos = rng.sample(combos, 84)
    return [_task(*c, ("square", "tall", "wide")[i % 3]) for i, c in enumerate(combos)]
