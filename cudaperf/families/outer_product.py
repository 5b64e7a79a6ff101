"""outer_product family: rank-1 (and rank-2) updates and outer products of two vectors.

Guarantees: 84 distinct tasks sampled from the update (GER A += alpha x y^T, plain outer product,
beta-scaled outer product, rank-2 update, outer difference, Gaussian-elimination Schur update),
element type (float, double), matrix storage (row- or column-major, both written with the row
loop outermost, so the direct translation is uncoalesced for column-major), packed or BLAS
leading dimension (lda; the padding must survive) and unit or BLAS vector strides (incx, incy);
each task gets a shape class (square, tall, wide) for its perf size. Variants are exact (no reassociation of the
per-element formula), so results match the reference to rounding of one expression.
"""
from __future__ import annotations

import itertools
import random

FAMILY = "outer_product"
CATEGORY = "linalg"
_HDR = "#include <cuda_runtime.h>\n"

_STYLES = {  # rows, cols, matrix, x, y, u, v, i, j
    "square": ("m", "n", "A", "x", "y", "u", "v", "i", "j"),
    "tall": ("rows", "cols", "M", "left", "right", "left2", "right2", "r", "s"),
    "wide": ("nr", "nc", "buf", "p", "q", "p2", "q2", "ii", "jj"),
}
_PERF = {"square": (6144, 6144), "tall": (1 << 20, 64), "wide": (64, 1 << 20)}
_OPS = ("ger", "outer", "scaled_outer", "rank2", "outer_diff", "schur")


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper


def _task(T, op, layout, ld, inc, shape):
    M, N, A, X, Y, U, V, I, J = _STYLES[shape]
    pre = "s" if T == "float" else "d"
    entry = {"ger": f"{pre}ger", "outer": f"{pre}outer", "scaled_outer": f"{pre}outer_scal",
             "rank2": f"{pre}ger2", "outer_diff": f"{pre}outer_sub", "schur": f"{pre}schur_update"}[op]
    entry += f"_{layout[0]}m{'_lda' if ld else ''}{'_inc' if inc else ''}"
    LDA = "lda" if ld else (N if layout == "row" else M)
    sx = (lambda i: f"{i} * incx") if inc else (lambda i: i)
    sy = (lambda j: f"{j} * incy") if inc else (lambda j: j)
    inout = op in ("ger", "scaled_outer", "rank2", "schur")
    writes_all = not inout  # plain outer products overwrite A; with lda the padding must survive
    sig = [_p(M, "int", "size"), _p(N, "int", "size")]
    if ld:
        sig.append(_p("lda", "int", "size"))
    if inc:
        sig += [_p("incx", "int", "size"), _p("incy", "int", "size")]
    xlen = f"({M}-1)*incx+1" if inc else M
    ylen = f"({N}-1)*incy+1" if inc else N
    if op in ("ger",):
        sig.append(_p("alpha", T, "scalar", init="uniform(-2, 2)"))
    if op == "scaled_outer":
        sig.append(_p("beta", T, "scalar", init="uniform(-2, 2)"))
    if op == "schur":
        sig.append(_p("pivot", T, "scalar", init="uniform(1, 2)"))
    sig += [_p(X, f"const {T}*", "in", xlen, "uniform(-1, 1)"), _p(Y, f"const {T}*", "in", ylen, "uniform(-1, 1)")]
    if op == "rank2":
        sig += [_p(U, f"const {T}*", "in", xlen, "uniform(-1, 1)"), _p(V, f"const {T}*", "in", ylen, "uniform(-1, 1)")]
    a_rw = inout or ld
    a_shape = (f"{M}*lda" if layout == "row" else f"lda*{N}") if ld else f"{M}*{N}"
    sig.append(_p(A, f"{T}*", "inout" if a_rw else "out", a_shape, "uniform(-1, 1)" if a_rw else None))
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)

    def rhs(i, j, xi=None, yj=None, ui=None, vj=None):
        xi = xi or f"{X}[{sx(i)}]"
        yj = yj or f"{Y}[{sy(j)}]"
        ui = ui or f"{U}[{sx(i)}]"
        vj = vj or f"{V}[{sy(j)}]"
        return {"ger": (" += ", f"alpha * {xi} * {yj}"), "outer": (" = ", f"{xi} * {yj}"),
                "scaled_outer": (None, None), "rank2": (" += ", f"{xi} * {yj} + {ui} * {vj}"),
                "outer_diff": (" = ", f"{xi} - {yj}"), "schur": (" -= ", f"{xi} * {yj} / pivot")}[op], xi, yj

    def stmt(idx, i, j, **kw):
        (asg, e), xi, yj = rhs(i, j, **kw)
        if op == "scaled_outer":
            return f"{A}[{idx}] = beta * {A}[{idx}] + {xi} * {yj};"
        return f"{A}[{idx}]{asg}{e};"

    def at(i, j, cast=""):
        return f"{cast}{i} * {LDA} + {j}" if layout == "row" else f"{i} + {cast}{j} * {LDA}"

    ref = (f"void {entry}({params}) {{\n"
           f"    for (int {I} = 0; {I} < {M}; {I}++)\n"
           f"        for (int {J} = 0; {J} < {N}; {J}++)\n"
           f"            {stmt(at(I, J), I, J)}\n}}\n")
    naive = _HDR + f'''
__global__ void {entry}_k({params}) {{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < (long long){M} * {N}) {{
        int {I} = (int)(idx / {N}), {J} = (int)(idx % {N});
        {stmt(at(I, J, "(size_t)"), I, J)}
    }}
}}
extern "C" void {entry}({params}) {{
    long long total = (long long){M} * {N};
    if (total <= 0) return;
    {entry}_k<<<(unsigned)((total + 255) / 256), 256>>>({args});
}}
'''
    variants = [{"name": "naive", "strategy": "one thread per element, row loop outermost as in the C code", "source": naive}]
    two = op == "rank2"
    if layout == "row":
        V4 = "float4" if T == "float" else "double2"
        W = 4 if T == "float" else 2
        comps = "xyzw"[:W]
        body = "\n".join(
            f"        {{ size_t o = base + {e}; int {I} = (int)(o / {LDA}), {J} = (int)(o % {LDA}); "
            + (f"{T} cur = pk.{c}; " if inout else "")
            + (f"if ({J} < {N}) " if ld else "")
            + stmt_tmp(op, f"{X}[{sx(I)}]", f"{Y}[{sy(J)}]", f"{U}[{sx(I)}]", f"{V}[{sy(J)}]", f"pk.{c}") + " }"
            for e, c in enumerate(comps))
        vec = _HDR + f'''
// {W}-wide vector access over the flat row-major buffer (cudaMalloc aligns it to 256 bytes);
// each lane recomputes its own (row, col), so rows need not be multiples of {W}
__global__ void {entry}_vec({params}, size_t nvec) {{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nvec) return;
    size_t base = t * {W};
    {V4} pk{" = ((" + V4 + " *)" + A + ")[t]" if a_rw else ""};
{body}
    (({V4} *){A})[t] = pk;
}}
__global__ void {entry}_tail({params}, size_t start) {{
    size_t o = start + blockIdx.x * blockDim.x + threadIdx.x;
    if (o < (size_t){M} * {LDA}) {{
        int {I} = (int)(o / {LDA}), {J} = (int)(o % {LDA});
        {f"if ({J} < {N}) " if ld else ""}{{ {stmt("o", I, J)} }}
    }}
}}
extern "C" void {entry}({params}) {{
    size_t total = (size_t){M} * {LDA};
    if ({M} <= 0 || {N} <= 0) return;
    size_t nvec = total / {W};
    if (nvec) {entry}_vec<<<(unsigned)((nvec + 255) / 256), 256>>>({args}, nvec);
    if (total - nvec * {W}) {entry}_tail<<<1, 32>>>({args}, nvec * {W});
}}
'''
        reg = _HDR + f'''
// each thread owns one column j: y[j]{" and v[j]" if two else ""} live in registers while it walks rows
__global__ void {entry}_cols({params}) {{
    int {J} = blockIdx.x * blockDim.x + threadIdx.x;
    if ({J} >= {N}) return;
    {T} yj = {Y}[{sy(J)}];{f" {T} vj = {V}[{sy(J)}];" if two else ""}
    for (int {I} = blockIdx.y; {I} < {M}; {I} += gridDim.y) {{
        size_t at = (size_t){I} * {LDA} + {J};
        {stmt("at", I, J, yj="yj", vj="vj" if two else None)}
    }}
}}
extern "C" void {entry}({params}) {{
    if ({M} <= 0 || {N} <= 0) return;
    dim3 grid(({N} + 255) / 256, {M} < 1024 ? {M} : 1024);
    {entry}_cols<<<grid, 256>>>({args});
}}
'''
        variants += [{"name": "vectorized", "strategy": f"{V4} loads/stores over the flat matrix, scalar tail", "source": vec},
                     {"name": "register_blocking", "strategy": "2-D grid, thread per column keeps y[j] in a register, grid-stride over rows", "source": reg}]
    else:
        coal = _HDR + f'''
__global__ void {entry}_coal({params}) {{
    size_t total = (size_t){M} * {N};
    for (size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += (size_t)gridDim.x * blockDim.x) {{
        int {I} = (int)(o % {M}), {J} = (int)(o / {M});  // i fastest: consecutive threads, consecutive addresses
        {stmt(at(I, J, "(size_t)"), I, J)}
    }}
}}
extern "C" void {entry}({params}) {{
    size_t total = (size_t){M} * {N};
    if (total == 0) return;
    size_t blocks = (total + 255) / 256; if (blocks > 132 * 32) blocks = 132 * 32;
    {entry}_coal<<<(unsigned)blocks, 256>>>({args});
}}
'''
        reg = _HDR + f'''
// each thread owns one row i: x[i]{" and u[i]" if two else ""} live in registers while it walks columns
__global__ void {entry}_rows({params}) {{
    int {I} = blockIdx.x * blockDim.x + threadIdx.x;
    if ({I} >= {M}) return;
    {T} xi = {X}[{sx(I)}];{f" {T} ui = {U}[{sx(I)}];" if two else ""}
    for (int {J} = blockIdx.y; {J} < {N}; {J} += gridDim.y) {{
        size_t at = {I} + (size_t){J} * {LDA};
        {stmt("at", I, J, xi="xi", ui="ui" if two else None)}
    }}
}}
extern "C" void {entry}({params}) {{
    if ({M} <= 0 || {N} <= 0) return;
    dim3 grid(({M} + 255) / 256, {N} < 1024 ? {N} : 1024);
    {entry}_rows<<<grid, 256>>>({args});
}}
'''
        variants += [{"name": "coalesced", "strategy": "thread index follows the column-major storage, grid-stride", "source": coal},
                     {"name": "register_blocking", "strategy": "2-D grid, thread per row keeps x[i] in a register, grid-stride over columns", "source": reg}]
    pm, pn = _PERF[shape]
    pm, pn = _PERF[shape]

    def sizes(m, n, pad):
        d = {M: m, N: n}
        if ld:
            d["lda"] = (n if layout == "row" else m) + pad
        if inc:
            d.update(incx=2, incy=3 - pad % 2)
        return d
    rec = {"task_id": f"c2cuda/{FAMILY}/{T}_{op}_{layout}{'_lda' if ld else ''}{'_inc' if inc else ''}_{shape}",
            "track": "c2cuda", "entry": entry, "signature": sig, "reference": ref,
            "variants": variants,
            "tests": [{"name": "one", "sizes": sizes(1, 1, 0)},
                      {"name": "ragged", "sizes": sizes(37, 1001, 3)},
                      {"name": "ragged_tall", "sizes": sizes(1001, 3, 1)},
                      {"name": "perf", "sizes": sizes(pm, pn, 16), "perf": True}],
            "meta": {"flops": f"{4 if two else 2}*{M}*{N}", "source": "generated",
                     "knobs": {"dtype": T, "op": op, "layout": layout, "lda": ld, "strided_vectors": inc,
                               "shape": shape}}}
    if ld:
        sz = 4 if T == "float" else 8
        rec["meta"]["min_bytes"] = f"{sz}*({2 if inout else 1}*{M}*{N}+{2 if two else 1}*({M}+{N}))"
    return rec


def stmt_tmp(op, xi, yj, ui, vj, lhs):
    """The per-element update written into a vector lane `lhs` (same formula as the C code)."""
    return {"ger": f"{lhs} = cur + alpha * {xi} * {yj};", "outer": f"{lhs} = {xi} * {yj};",
            "scaled_outer": f"{lhs} = beta * cur + {xi} * {yj};",
            "rank2": f"{lhs} = cur + ({xi} * {yj} + {ui} * {vj});",
            "outer_diff": f"{lhs} = {xi} - {yj};", "schur": f"{lhs} = cur - {xi} * {yj} / pivot;"}[op]


def generate(rng: random.Random) -> list[dict]:
    combos = list(itertools.product(("float", "double"), _OPS, ("row", "col"), (False, True), (False, True)))
    combos = rng.sample(combos, 84)
    return [_task(*c, ("square", "tall", "wide")[i % 3]) for i, c in enumerate(combos)]
