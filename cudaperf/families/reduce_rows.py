"""Per-row reductions of a row-major matrix: sum, mean, max, min, sum of squares, L2 norm, L1
norm, max-abs (float, double) and sum, max, min (int).

Guarantees: 76 tasks = 19 (operation, type) pairs x {contiguous rows, padded leading dimension
lda >= cols} x {accumulator variable, accumulate straight into out[r]} (two ways such C is
written; same results). Perf shapes rotate over square, tall-skinny and short-wide (knob
`shape`), which decide between thread-, warp- and block-per-row. Float sums use positive
inputs and a 2e-3 tolerance (different summation order on the GPU).
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import P, fmt, record, row_reduce_reference, row_reduce_variants

FAMILY = "reduce_rows"
CATEGORY = "reduction"

POS, SYM = "uniform(0, 1)", "uniform(-1, 1)"
OPS = {  # op: (combine, term of v, final, init)
    "sum": ("sum", "v", "acc", POS), "mean": ("sum", "v", "acc / {C}", POS),
    "max": ("max", "v", "acc", SYM), "min": ("min", "v", "acc", SYM),
    "sumsq": ("sum", "v * v", "acc", SYM), "l2": ("sum", "v * v", "sqrt{s}(acc)", SYM),
    "l1": ("sum", "fabs{s}(v)", "acc", SYM), "absmax": ("max", "fabs{s}(v)", "acc", SYM),
}
INT_INIT = {"sum": "randint(-100, 100)", "max": "randint(-100000, 100000)", "min": "randint(-100000, 100000)"}
# (rows, cols) of the perf test; the naive thread-per-row loop must stay in the milliseconds.
SHAPES = {"square": (8192, 4096), "tall": (1 << 20, 64), "wide": (1024, 1 << 15)}
TOL = {"rtol": 2e-3, "atol": 1e-4, "l2": 2e-3}


def cases():
    out = [(op, T) for T in ("float", "double") for op in OPS]
    return out + [(op, "int") for op in ("sum", "max", "min")]


def build(rng, family, axis, op, T, layout, style, shape, reference_fn, variants_fn, shapes=None):
    comb, termv, final, init = OPS[op]
    if T == "int":
        init = INT_INIT[op]
    tc = {"float": "f32", "double": "f64", "int": "i32"}[T]
    ld = "lda" if layout == "lda" else "cols"
    elem = f"a[(size_t)@r * {ld} + @j]"
    term = fmt(termv, T).replace("v", elem) if termv != "v" else elem
    if "fabs" in termv:
        term = fmt("fabs{s}(", T) + elem + ")"
    n_out = "rows" if axis == "rows" else "cols"
    final = fmt(final, T).replace("{C}", "cols" if axis == "rows" else "rows")
    sig = [P("rows", "int", "size"), P("cols", "int", "size")]
    if layout == "lda":
        sig.append(P("lda", "int", "size"))
    sig += [P("a", f"const {T}*", "in", f"rows*{ld}", init), P("out", f"{T}*", "out", n_out)]
    entry = rng.choice([f"{axis[:-1]}_{{op}}_{{t}}", f"{{op}}_{axis}_{{t}}", f"{{t}}{{op}}_per_{axis[:-1]}"]).format(op=op, t=tc)
    entry += ("_ld" if layout == "lda" else "") + ("_v2" if style == "inplace" else "")
    if axis == "rows":
        ref = reference_fn(entry, sig, "rows", "cols", T, comb, term, final, "out", style=style,
                           rv=rng.choice(["r", "i", "row"]), cv=rng.choice(["j", "c", "k"]))
        var = variants_fn(entry, sig, "rows", "cols", T, comb, term, final, "out")
    else:
        # column reduction: the reduced index runs over rows
        ref = reference_fn(entry, sig, "cols", "rows", T, comb, term.replace("@r", "@R").replace("@j", "@r").replace("@R", "@j"),
                           final, "out", style=style, rv=rng.choice(["c", "j", "col"]), cv=rng.choice(["r", "i", "row"]))
        var = variants_fn(entry, sig, "rows", "cols", T, comb, term, final, "out")
    R, C = (shapes or SHAPES)[shape]
    if T == "double" and R * C > (1 << 25):  # keep double perf buffers near 256 MB
        R, C = (R // 2, C) if R >= C else (R, C // 2)
    pad = lambda c: {"lda": c + 3} if layout == "lda" else {}
    tests = [{"name": "one", "sizes": {"rows": 1, "cols": 1, **pad(1)}},
             {"name": "ragged", "sizes": {"rows": 37, "cols": 1001, **pad(1001)}},
             {"name": "tall_odd", "sizes": {"rows": 1003, "cols": 5, **pad(5)}},
             {"name": "perf", "sizes": {"rows": R, "cols": C, **pad(C)}, "perf": True}]
    return record(family, f"{op}_{tc}_{layout}_{style}", entry, sig, ref, var, tests,
                  {"op": op, "dtype": T, "layout": layout, "style": style, "shape": shape},
                  flops="rows*cols", tol=TOL if (T != "int" and comb == "sum") else None)


def generate(rng: random.Random) -> list[dict]:
    recs = []
    k = 0
    for op, T in cases():
        for layout in ("contig", "lda"):
            for style in ("local", "inplace"):
                shape = list(SHAPES)[k % 3]
                k += 1
                recs.append(build(rng, FAMILY, "rows", op, T, layout, style, shape,
                                  row_reduce_reference, row_reduce_variants))
    return recs
