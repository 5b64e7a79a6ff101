"""BLAS level-1 vector kernels with strides and offsets: axpy, axpby, copy, swap, rot, scal.

Guarantees: 72 tasks = {axpy, axpby, copy, swap, rot} x {float, double} x 6 access forms, plus
scal x {float, double} x 6 forms. The forms are the ways such C is written: unit stride;
BLAS incx/incy; offset + stride; the reference-BLAS running-index loop (ix += incx); a
hard-coded stride 2 (every other element); a column of a row-major matrix (x[i*ld + col]).
Strided outputs are `inout` so the elements between strides must be left unchanged. Strides
are positive; index products are formed in size_t in the CUDA variants.
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import HDR, P, SM_COUNT, args, decls, fmt, record

FAMILY = "axpby_strided"
CATEGORY = "map"

OPS = {  # op: (scalars, body, x role, y role or None)
    "axpy": (["a"], "@Y += a * @X;", "in", "inout"),
    "axpby": (["a", "b"], "@Y = a * @X + b * @Y;", "in", "inout"),
    "copy": ([], "@Y = @X;", "in", "inout"),
    "swap": ([], "{T} tmp = @X;\n@X = @Y;\n@Y = tmp;", "inout", "inout"),
    "rot": (["c", "s"], "{T} xv = @X, yv = @Y;\n@X = c * xv + s * yv;\n@Y = c * yv - s * xv;", "inout", "inout"),
    "scal": (["a"], "@X = a * @X;", "inout", None),
}
FORMS = ["unit", "inc", "offset_inc", "blas_ix", "stride2", "column"]
BLAS = {"axpy": "axpy", "axpby": "axpby", "copy": "copy", "swap": "swap", "rot": "rot", "scal": "scal"}


def _form(form, has_y):
    """(size params, x shape, y shape, ref index x, ref index y, kernel index x, kernel index y)."""
    if form == "unit":
        return [], "n", "n", "i", "i", "i", "i"
    if form in ("inc", "blas_ix"):
        ref = ("ix", "iy") if form == "blas_ix" else ("i * incx", "i * incy")
        return (["incx", "incy"] if has_y else ["incx"], "(n - 1) * incx + 1", "(n - 1) * incy + 1",
                ref[0], ref[1], "(size_t)i * incx", "(size_t)i * incy")
    if form == "offset_inc":
        return ((["offx", "incx", "offy", "incy"] if has_y else ["offx", "incx"]),
                "offx + (n - 1) * incx + 1", "offy + (n - 1) * incy + 1",
                "offx + i * incx", "offy + i * incy", "offx + (size_t)i * incx", "offy + (size_t)i * incy")
    if form == "stride2":
        return [], "2 * n", "n", "2 * i", "i", "2 * (size_t)i", "i"
    # column of a row-major matrix with leading dimension ld
    return ["ld", "col"], "n * ld", "n * ld", "i * ld + col", "i * ld + col", "(size_t)i * ld + col", "(size_t)i * ld + col"


def _tests(form, has_y, rng):
    out = []
    big = (1 << 25) if form in ("unit", "stride2") else (1 << 24)
    for name, n in (("one", 1), ("odd", 1003), ("mid", 65537), ("perf", big)):
        s = {"n": n}
        if form in ("inc", "blas_ix", "offset_inc"):
            s["incx"] = 1 if name == "one" else rng.choice([1, 2, 3, 4])
            if has_y:
                s["incy"] = rng.choice([1, 2, 3]) if name != "one" else 2
            if form == "offset_inc":
                s["offx"] = 0 if name == "one" else rng.choice([1, 5, 17])
                if has_y:
                    s["offy"] = rng.choice([0, 3, 64])
        elif form == "column":
            s["ld"] = 1 if name == "one" else rng.choice([2, 3, 4])
            s["col"] = 0 if name == "one" else rng.randrange(s["ld"])
        t = {"name": name, "sizes": s}
        if name == "perf":
            t["perf"] = True
        out.append(t)
    return out


def generate(rng: random.Random) -> list[dict]:
    recs = []
    for op, (scal, body0, xrole, yrole) in OPS.items():
        has_y = yrole is not None
        for t in ("float", "double"):
            for form in FORMS:
                pre = "s" if t == "float" else "d"
                sizes, xs, ys, rx, ry, kx, ky = _form(form, has_y)
                entry = f"{pre}{BLAS[op]}" + {"unit": "", "inc": "_inc", "offset_inc": "_off", "blas_ix": "_ref",
                                               "stride2": "_even", "column": "_col"}[form]
                sig = [P("n", "int", "size")]
                sig += [P(s, f"{t}", "scalar", init="uniform(-1, 1)") for s in scal]
                sig.append(P("x", f"const {t}*" if xrole == "in" else f"{t}*", xrole, xs, "uniform(-1, 1)"))
                szp = [P(s, "int", "size") for s in sizes]
                xsz = [p for p in szp if p["name"] in ("incx", "offx", "ld", "col")]
                ysz = [p for p in szp if p["name"] in ("incy", "offy")]
                sig += xsz
                if has_y:
                    sig.append(P("y", f"{t}*", yrole, ys, "uniform(-1, 1)"))
                    sig += ysz
                body = fmt(body0, t)
                rb = body.replace("@X", f"x[{rx}]").replace("@Y", f"y[{ry}]")
                rb = "\n".join("        " + ln for ln in rb.split("\n"))
                if form == "blas_ix":
                    init = "    int ix = 0, iy = 0;\n" if has_y else "    int ix = 0;\n"
                    step = "        ix += incx;\n" + ("        iy += incy;\n" if has_y else "")
                    ref = (f"void {entry}({decls(sig)}) {{\n{init}    for (int i = 0; i < n; i++) {{\n{rb}\n{step}    }}\n}}\n")
                else:
                    ref = f"void {entry}({decls(sig)}) {{\n    for (int i = 0; i < n; i++) {{\n{rb}\n    }}\n}}\n"
                kb = body.replace("@X", f"x[{kx}]").replace("@Y", f"y[{ky}]")
                recs.append(record(FAMILY, f"{pre}{op}_{form}", entry, sig, ref, _variants(entry, sig, kb),
                                   _tests(form, has_y, rng), {"op": op, "dtype": t, "form": form},
                                   flops={"axpy": "2*n", "axpby": "3*n", "rot": "6*n", "scal": "n"}.get(op),
                                   min_bytes=_min_bytes(op, t)))
    return recs


# Elements of x / y each op must read plus write, per index i. Lower bound for the roofline
# check (meta.min_bytes), counted per ELEMENT: only the n strided elements are touched (the
# gaps of a strided or column buffer are neither read nor written, even though the buffer is
# `inout` to keep them), and y of copy is write-only (its old contents are overwritten unread;
# dcopy_unit's default count was 805 MB where 537 MB must move). Sector granularity can only
# add to this.
_ACCESSES = {"axpy": 3, "axpby": 3, "copy": 2, "swap": 4, "rot": 4, "scal": 2}


def _min_bytes(op: str, t: str) -> str:
    return f"n*{_ACCESSES[op] * (4 if t == 'float' else 8)}"


def _ind(s, k):
    return "\n".join(" " * k + ln for ln in s.split("\n"))


def _variants(entry, sig, kb):
    dec, dr, arg = decls(sig), decls(sig, True), args(sig)
    ldg = kb  # x/y may both be written (swap/rot): plain loads keep the code correct for all ops
    naive = HDR + f"""
__global__ void {entry}_k({dec}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{
{_ind(kb, 8)}
    }}
}}
extern "C" void {entry}({dec}) {{
    if (n <= 0) return;
    {entry}_k<<<(n + 255) / 256, 256>>>({arg});
}}
"""
    gs = HDR + f"""
__global__ void {entry}_gs({dr}) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {{
{_ind(ldg, 8)}
    }}
}}
extern "C" void {entry}({dec}) {{
    if (n <= 0) return;
{SM_COUNT}    int blocks = (n + 511) / 512;
    if (blocks > sms_ * 8) blocks = sms_ * 8;
    {entry}_gs<<<blocks, 512>>>({arg});
}}
"""
    unr = HDR + f"""
// 4 independent elements per thread, each a block-width apart, so a warp's accesses stay
// as contiguous as the strides allow while 4 loads are in flight per thread.
__global__ void {entry}_u4({dr}) {{
    int base = blockIdx.x * blockDim.x * 4 + threadIdx.x;
#pragma unroll
    for (int u = 0; u < 4; u++) {{
        int i = base + u * blockDim.x;
        if (i < n) {{
{_ind(kb, 12)}
        }}
    }}
}}
extern "C" void {entry}({dec}) {{
    if (n <= 0) return;
    int per_block = 256 * 4;
    {entry}_u4<<<(n + per_block - 1) / per_block, 256>>>({arg});
}}
"""
    return [{"name": "naive", "strategy": "one thread per element, 256 threads", "source": naive},
            {"name": "grid_stride", "strategy": "grid-stride loop, 512 threads, grid capped at 8 blocks/SM, __restrict__", "source": gs},
            {"name": "loop_unrolled", "strategy": "4 elements per thread a block-width apart (ILP)", "source": unr}]
