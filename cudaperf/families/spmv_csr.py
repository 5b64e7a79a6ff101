"""spmv_csr family: sparse matrix-vector products with the matrix in CSR.

Guarantees: 80 distinct tasks: operation (y = Ax, alpha/beta update, accumulate, residual
b - Ax, one damped-Jacobi sweep, pattern-only sum) x element type (float, double; int for plain
and pattern) x 32- or 64-bit row pointers and column indices x loop form (row pointers or hoisted
bounds) x accumulator (float tasks also in double-accumulating form). Each task gets an average
row length (2 .. 512 nonzeros) for its tests. Row pointers come from csr_rowptr(m, nnz) and
column indices from randint(0, n), so every gather is in bounds. Variants: naive (thread per
row), warp per row with shuffle reduction, and a sub-warp per row whose width (4..32 lanes) is
chosen from the average row length at launch.
"""
from __future__ import annotations

import itertools
import random

FAMILY = "spmv_csr"
CATEGORY = "sparse"
_HDR = "#include <cuda_runtime.h>\n"
_STYLES = {  # rowptr, colidx, values, x, y, rows, cols, nnz, i, k
    2: ("row_ptr", "col_idx", "vals", "x", "y", "nrows", "ncols", "nnz", "i", "k"),
    8: ("rowptr", "colind", "val", "vec", "out", "m", "n", "nz", "row", "jj"),
    32: ("Ap", "Aj", "Ax", "xv", "yv", "n_row", "n_col", "n_nz", "r", "e"),
    128: ("ptr", "idx", "data", "src", "dst", "rows", "cols", "count", "ii", "p"),
    512: ("offsets", "indices", "coef", "b_in", "b_out", "num_rows", "num_cols", "num_nz", "v", "q"),
}


_FORMS = ("plain", "axpby", "accum", "residual", "jacobi", "pattern")


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper
from cudaperf.families._kernelgen import uniq  # noqa: E402


def _min_bytes(T, form, IT, M, N, NNZ):
    """Roofline lower bound (meta.min_bytes): row offsets, column indices and values read once,
    y written once (read too for axpby / accum), rhs / diag read once; x is gathered through
    the column indices, so only the entries some index hits must come from memory, each once
    (see _kernelgen.uniq; at average row length 2, e^-2 = 14% of x is never referenced). The
    Jacobi sweep also reads x[i] for every row, so there x counts whole."""
    isz = 4 if IT == "int" else 8
    es = 4 if T in ("float", "int") else 8
    mb = f"({M}+1)*{isz}+{NNZ}*{isz}" + ("" if form == "pattern" else f"+{NNZ}*{es}")
    mb += f"+{N}*{es}" if form == "jacobi" else f"+{uniq(NNZ, N)}*{es}"
    mb += f"+{M}*{es}*{ {'jacobi': 3, 'residual': 2, 'axpby': 2, 'accum': 2}.get(form, 1) }"
    return mb


def _task(T, form, IT, style, ACC, dens):
    RP, CI, VA, X, Y, M, N, NNZ, I, K = _STYLES[dens]
    pre = {"float": "s", "double": "d", "int": "i"}[T]
    entry = {"plain": "csrmv", "axpby": "csrmv_axpby", "accum": "csrmv_add", "residual": "csr_residual",
             "jacobi": "csr_jacobi_sweep", "pattern": "csr_pattern_sum"}[form]
    entry = (f"{pre}{entry}{'_i64' if IT != 'int' else ''}{'_dacc' if ACC != T else ''}"
             f"{'_v2' if style == 'hoist' else ''}")
    zero = {"float": "0.0f", "double": "0.0", "int": "0"}[ACC]
    vinit = "randint(-4, 5)" if T == "int" else "uniform(-1, 1)"
    xinit = "randint(-10, 10)" if T == "int" else "uniform(-1, 1)"
    sig = [_p(M, "int", "size"), _p(N, "int", "size"), _p(NNZ, "int", "size")]
    if form == "axpby" or form == "jacobi":
        sig.append(_p("alpha" if form == "axpby" else "omega", T, "scalar",
                      init="uniform(-2, 2)" if form == "axpby" else "uniform(0.5, 1)"))
    sig += [_p(RP, f"const {IT}*", "in", f"{M}+1", f"csr_rowptr({M}, {NNZ})"),
            _p(CI, f"const {IT}*", "in", NNZ, f"randint(0, {N})")]
    if form != "pattern":
        sig.append(_p(VA, f"const {T}*", "in", NNZ, vinit))
    sig.append(_p(X, f"const {T}*", "in", N, xinit))
    if form == "axpby":
        sig.append(_p("beta", T, "scalar", init="uniform(-2, 2)"))
    if form in ("residual", "jacobi"):
        sig.append(_p("rhs", f"const {T}*", "in", M, xinit))
    if form == "jacobi":
        # the sweep updates x itself: the matrix is square here (n is bound to m in every test)
        sig.append(_p("diag", f"const {T}*", "in", M, "uniform(1, 2)"))
        sig.append(_p("xnew", f"{T}*", "out", M))
    else:
        inout = form in ("axpby", "accum")
        sig.append(_p(Y, f"{T}*", "inout" if inout else "out", M, xinit if inout else None))
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)
    term = f"{X}[{CI}[{K}]]" if form == "pattern" else f"{VA}[{K}] * {X}[{CI}[{K}]]"

    def fin(i, s):
        return {"plain": f"{Y}[{i}] = {s};", "pattern": f"{Y}[{i}] = {s};",
                "axpby": f"{Y}[{i}] = alpha * {s} + beta * {Y}[{i}];", "accum": f"{Y}[{i}] += {s};",
                "residual": f"{Y}[{i}] = rhs[{i}] - {s};",
                "jacobi": f"xnew[{i}] = {X}[{i}] + omega * (rhs[{i}] - {s}) / diag[{i}];"}[form]

    ref = (f"void {entry}({params}) {{\n"
           f"    for (int {I} = 0; {I} < {M}; {I}++) {{\n"
           f"        {ACC} sum = {zero};\n" + (
           f"        for ({IT} {K} = {RP}[{I}]; {K} < {RP}[{I} + 1]; {K}++)\n" if style == "for" else
           f"        {IT} start = {RP}[{I}], end = {RP}[{I} + 1];\n"
           f"        for ({IT} {K} = start; {K} < end; {K}++)\n") +
           f"            sum += {term};\n"
           f"        {fin(I, 'sum')}\n    }}\n}}\n")
    naive = _HDR + f'''
__global__ void {entry}_k({params}) {{
    int {I} = blockIdx.x * blockDim.x + threadIdx.x;
    if ({I} < {M}) {{
        {ACC} sum = {zero};
        for ({IT} {K} = {RP}[{I}]; {K} < {RP}[{I} + 1]; {K}++) sum += {term};
        {fin(I, 'sum')}
    }}
}}
extern "C" void {entry}({params}) {{
    if ({M} <= 0) return;
    {entry}_k<<<({M} + 255) / 256, 256>>>({args});
}}
'''
    ldg_term = f"__ldg(&{X}[__ldg(&{CI}[{K}])])" if form == "pattern" else f"__ldg(&{VA}[{K}]) * __ldg(&{X}[__ldg(&{CI}[{K}])])"
    warp = _HDR + f'''
__global__ void {entry}_warp({params}) {{
    long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (w >= {M}) return;  // uniform per warp
    int {I} = (int)w;
    {IT} start = {RP}[{I}], end = {RP}[{I} + 1];
    {ACC} sum = {zero};
    for ({IT} {K} = start + lane; {K} < end; {K} += 32) sum += {ldg_term};
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
    if (lane == 0) {{ {fin(I, 'sum')} }}
}}
extern "C" void {entry}({params}) {{
    if ({M} <= 0) return;
    long long threads = (long long){M} * 32;
    {entry}_warp<<<(unsigned)((threads + 255) / 256), 256>>>({args});
}}
'''
    sub = _HDR + f'''
template <int L>
__global__ void {entry}_sub({params}) {{
    long long g = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / L;
    int lane = threadIdx.x % L;
    // L divides 32, so a group never straddles a warp; the mask covers exactly this group
    unsigned mask = (L == 32) ? 0xffffffffu : (((1u << L) - 1u) << ((threadIdx.x & 31) / L * L));
    if (g >= {M}) return;
    int {I} = (int)g;
    {IT} start = {RP}[{I}], end = {RP}[{I} + 1];
    {ACC} sum = {zero};
    for ({IT} {K} = start + lane; {K} < end; {K} += L) sum += {ldg_term};
    for (int off = L / 2; off > 0; off >>= 1) sum += __shfl_down_sync(mask, sum, off, L);
    if (lane == 0) {{ {fin(I, 'sum')} }}
}}
extern "C" void {entry}({params}) {{
    if ({M} <= 0) return;
    int avg = {NNZ} / {M};
    long long nrow_ll = {M};
    if (avg <= 6) {entry}_sub<4><<<(unsigned)((nrow_ll * 4 + 255) / 256), 256>>>({args});
    else if (avg <= 16) {entry}_sub<8><<<(unsigned)((nrow_ll * 8 + 255) / 256), 256>>>({args});
    else if (avg <= 48) {entry}_sub<16><<<(unsigned)((nrow_ll * 16 + 255) / 256), 256>>>({args});
    else {entry}_sub<32><<<(unsigned)((nrow_ll * 32 + 255) / 256), 256>>>({args});
}}
'''
    pm = (1 << 25) // dens
    rn = 1003 if form != "jacobi" else 1003
    tests = [{"name": "one", "sizes": {M: 1, N: 1, NNZ: 1}},
             {"name": "ragged", "sizes": {M: 1003, N: 1003 if form == "jacobi" else 997, NNZ: 1003 * min(dens, 64) + 7}},
             {"name": "empty_rows", "sizes": {M: 777, N: 777 if form == "jacobi" else 5000, NNZ: 300}},
             {"name": "perf", "sizes": {M: pm, N: pm, NNZ: 1 << 25}, "perf": True}]
    tag = f"{'_i64' if IT != 'int' else ''}{'_dacc' if ACC != T else ''}{'_hoist' if style == 'hoist' else ''}"
    rec = {"task_id": f"c2cuda/{FAMILY}/{T}_{form}{tag}_d{dens}", "track": "c2cuda", "entry": entry,
           "signature": sig, "reference": ref,
           "variants": [{"name": "naive", "strategy": "one thread per row", "source": naive},
                        {"name": "warp_shuffle", "strategy": "one warp per row, coalesced nonzero reads, shuffle reduction", "source": warp},
                        {"name": "subwarp_adaptive", "strategy": "4/8/16/32 lanes per row chosen from nnz/m, segmented shuffles", "source": sub}],
           "tests": tests,
           "meta": {"flops": f"2*{NNZ}", "min_bytes": _min_bytes(T, form, IT, M, N, NNZ), "source": "generated",
                    "knobs": {"dtype": T, "form": form, "index_type": IT, "loop_style": style,
                              "accumulator": ACC, "avg_row_nnz": dens}}}
    if T == "float":
        rec["tolerance"] = {"rtol": 2e-3, "atol": 1e-4, "l2": 1e-3}
    return rec


def generate(rng: random.Random) -> list[dict]:
    combos = [(T, f, IT, st, acc) for T in ("float", "double") for f in _FORMS for IT in ("int", "long long")
              for st in ("for", "hoist") for acc in ((T, "double") if T == "float" else (T,))]
    combos += [("int", f, IT, st, "int") for f in ("plain", "pattern") for IT in ("int", "long long")
               for st in ("for", "hoist")]
    dens = sorted(_STYLES)
    return [_task(*c, dens[i % len(dens)]) for i, c in enumerate(combos)]
