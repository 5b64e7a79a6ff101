"""Binary elementwise operations on a row-major rows x cols matrix with a vector broadcast
along rows (b[j], one value per column) or along columns (b[i], one value per row).

Guarantees: 78 tasks = {add, sub, mul, div, max, min, pow} x {row, column broadcast} x {float,
double} x {out-of-place, in-place}, plus reversed operand order (b op a) for the
non-commutative sub/div/pow, plus int add/sub/mul/max/min. Divisors and pow bases are drawn
from [0.5, 2]. Perf shapes rotate over square, tall and wide classes (the knob `shape`), which
decide whether thread-per-element, 2-D tiles or block-per-row wins. Index products use size_t.
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import HDR, P, SM_COUNT, args, decls, fmt, record

FAMILY = "map_binary_broadcast"
CATEGORY = "map"

OPS = {"add": "{x} + {y}", "sub": "{x} - {y}", "mul": "{x} * {y}", "div": "{x} / {y}",
       "max": "({x} > {y} ? {x} : {y})", "min": "({x} < {y} ? {x} : {y})", "pow": "pow{s}({x}, {y})"}
SHAPES = {"square": (8192, 8192), "tall": (1 << 20, 64), "wide": (64, 1 << 20)}


def _variants(entry, sig, form, bcast, expr_fn, a, b, o):
    """expr_fn(aval, bval) -> C expression; o is the output array name (== a when in place)."""
    dec, dec_r, arg = decls(sig), decls(sig, True), args(sig)
    bidx = "j" if bcast == "row" else "i"
    naive = HDR + f"""
__global__ void {entry}_k({dec}) {{
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < (size_t)rows * cols) {{
        {"int j = (int)(idx % cols);" if bcast == "row" else "int i = (int)(idx / cols);"}
        {o}[idx] = {expr_fn(f"{a}[idx]", f"{b}[{bidx}]")};
    }}
}}
extern "C" void {entry}({dec}) {{
    size_t n = (size_t)rows * cols;
    if (n == 0) return;
    {entry}_k<<<(unsigned)((n + 255) / 256), 256>>>({arg});
}}
"""
    if bcast == "row":
        inner = (f"    {sig[3]['ctype'].replace('const ', '').replace('*', '').strip()} bv = {b}[j];\n"
                 f"    for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < rows; i += gridDim.y * blockDim.y) {{\n"
                 f"        size_t p = (size_t)i * cols + j;\n        {o}[p] = {expr_fn(f'{a}[p]', 'bv')};\n    }}")
        why = "the broadcast value b[j] stays in a register across the rows a thread visits"
    else:
        inner = (f"    for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < rows; i += gridDim.y * blockDim.y) {{\n"
                 f"        size_t p = (size_t)i * cols + j;\n        {o}[p] = {expr_fn(f'{a}[p]', f'__ldg(&{b}[i])')};\n    }}")
        why = "threads of a warp share one b[i] load (broadcast through L1)"
    grid2d = HDR + f"""
// 32 x 8 threads per block along (cols, rows): warps read contiguous row segments, no
// division per element; gridDim.y is capped at 65535 and rows are walked with a stride.
__global__ void {entry}_2d({dec_r}) {{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
{inner}
}}
extern "C" void {entry}({dec}) {{
    if (rows <= 0 || cols <= 0) return;
    int gy = (rows + 7) / 8;
    if (gy > 65535) gy = 65535;
    dim3 block(32, 8), grid((cols + 31) / 32, gy);
    {entry}_2d<<<grid, block>>>({arg});
}}
"""
    if bcast == "col":
        rb_body = (f"        const {sig[3]['ctype'].replace('const ', '').replace('*', '').strip()} bv = {b}[i];\n"
                   f"        for (int j = threadIdx.x; j < cols; j += blockDim.x) {{\n"
                   f"            size_t p = row + j;\n            {o}[p] = {expr_fn(f'{a}[p]', 'bv')};\n        }}")
    else:
        rb_body = (f"        for (int j = threadIdx.x; j < cols; j += blockDim.x) {{\n"
                   f"            size_t p = row + j;\n            {o}[p] = {expr_fn(f'{a}[p]', f'__ldg(&{b}[j])')};\n        }}")
    rowblock = HDR + f"""
// One block per row (grid-stride over rows), threads stride over the columns of the row.
__global__ void {entry}_rows({dec_r}) {{
    for (int i = blockIdx.x; i < rows; i += gridDim.x) {{
        size_t row = (size_t)i * cols;
{rb_body}
    }}
}}
extern "C" void {entry}({dec}) {{
    if (rows <= 0 || cols <= 0) return;
{SM_COUNT}    int threads = cols >= 256 ? 256 : ((cols + 31) / 32) * 32;
    int blocks = rows < sms_ * 16 ? rows : sms_ * 16;
    {entry}_rows<<<blocks, threads>>>({arg});
}}
"""
    return [{"name": "naive", "strategy": "one thread per element, row/col from division", "source": naive},
            {"name": "coalesced", "strategy": "2-D grid of 32x8 blocks, coalesced rows, no division; " + why, "source": grid2d},
            {"name": "block_per_row", "strategy": "block per row with grid-stride over rows, __ldg broadcast loads", "source": rowblock}]


def generate(rng: random.Random) -> list[dict]:
    cases = []
    for op in OPS:
        for bc in ("row", "col"):
            for t in ("float", "double"):
                for form in ("out", "inplace") + (("rev",) if op in ("sub", "div", "pow") else ()):
                    cases.append((op, bc, t, form))
    for op in ("add", "sub", "mul", "max", "min"):
        for bc in ("row", "col"):
            cases.append((op, bc, "int", "out"))
    recs = []
    shape_cycle = list(SHAPES)
    for ci, (op, bc, t, form) in enumerate(cases):
        tc = {"float": "f32", "double": "f64", "int": "i32"}[t]
        a, b, o = rng.choice([("a", "b", "c"), ("A", "v", "C"), ("mat", "vec", "res"), ("x", "bias", "y")])
        if form == "inplace":
            o = a
        data = "randint(-100, 100)" if t == "int" else "uniform(-2, 2)"
        ai = bi = data
        if op in ("div", "pow"):
            if form == "rev":
                bi = "uniform(0.5, 2)"
            else:
                ai = "uniform(0.5, 2)" if op == "pow" else data
                bi = "uniform(0.5, 2)" if op == "div" else "uniform(-2, 2)"
            if op == "div" and form == "rev":
                ai = "uniform(0.5, 2)"
        blen = "cols" if bc == "row" else "rows"
        sig = [P("rows", "int", "size"), P("cols", "int", "size")]
        sig.append(P(a, f"{t}*" if form == "inplace" else f"const {t}*", "inout" if form == "inplace" else "in", "rows*cols", ai))
        sig.append(P(b, f"const {t}*", "in", blen, bi))
        if form != "inplace":
            sig.append(P(o, f"{t}*", "out", "rows*cols"))
        e = fmt(OPS[op], t)

        def expr_fn(x, y, e=e, form=form):
            return e.format(x=y, y=x) if form == "rev" else e.format(x=x, y=y)
        entry = rng.choice(["{op}_bcast_{bc}_{t}", "broadcast_{op}_{bc}_{t}", "{op}_{bc}vec_{t}", "mat_{op}_{bc}_{t}"]).format(
            op=op, bc=bc, t=tc) + {"out": "", "inplace": "_inplace", "rev": "_rev"}[form]
        bidx = "j" if bc == "row" else "i"
        if bc == "col" and rng.random() < 0.5:
            T = t
            ref = (f"void {entry}({decls(sig)}) {{\n    for (int i = 0; i < rows; i++) {{\n"
                   f"        {T} s = {b}[i];\n        for (int j = 0; j < cols; j++)\n"
                   f"            {o}[i * cols + j] = {expr_fn(f'{a}[i * cols + j]', 's')};\n    }}\n}}\n")
        else:
            ref = (f"void {entry}({decls(sig)}) {{\n    for (int i = 0; i < rows; i++)\n"
                   f"        for (int j = 0; j < cols; j++)\n"
                   f"            {o}[i * cols + j] = {expr_fn(f'{a}[i * cols + j]', f'{b}[{bidx}]')};\n}}\n")
        shape = shape_cycle[ci % 3]
        R, C = SHAPES[shape]
        if t == "double" or op == "pow":
            R, C = (R // 2, C) if R >= C else (R, C // 2)
        tests = [{"name": "one", "sizes": {"rows": 1, "cols": 1}},
                 {"name": "ragged", "sizes": {"rows": 37, "cols": 1001}},
                 {"name": "tall_odd", "sizes": {"rows": 1003, "cols": 3}},
                 {"name": "perf", "sizes": {"rows": R, "cols": C}, "perf": True}]
        # Roofline lower bound (meta.min_bytes): an in-place max/min rewrites only the elements
        # the vector beats, half of them in expectation (both drawn from U(-2, 2)); counted at
        # half that share (a quarter), data-dependent traffic being counted at half its expected
        # amount. Every other case reads each input and writes each output once (the default).
        es = 8 if t == "double" else 4
        mb = (f"rows*cols*{es}+((rows*cols)//4)*{es}+{blen}*{es}"
              if form == "inplace" and op in ("max", "min") else None)
        recs.append(record(FAMILY, f"{op}_{bc}_{tc}_{form}", entry, sig, ref,
                           _variants(entry, sig, form, bc, expr_fn, a, b, o), tests,
                           {"op": op, "broadcast": bc, "dtype": t, "form": form, "shape": shape},
                           flops="rows*cols", min_bytes=mb))
    return recs
