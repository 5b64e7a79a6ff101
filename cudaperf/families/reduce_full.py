"""Full reductions of arrays to one value: sum, mean, sum of squares, L1/L2 norms, RMS, max,
min, max-abs, dot product, squared and absolute distances, log-sum, entropy, counts, masked
and strided reductions, deviation sums, Huber and hinge losses, accumulate-into-output.

Guarantees: 74 tasks over float, double and int. Float sums get positive (or squared)
terms so that the result is well conditioned, and a 2e-3 tolerance for the different
summation order of the GPU (the reference runs in double). Every variant is deterministic
(per-block partials and a final single-block pass; no float atomics), and correct for any
n >= 1. Strided forms read x[i*incx] (incx a size parameter).
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import P, fmt, full_reduce_reference, full_reduce_variants, record

FAMILY = "reduce_full"
CATEGORY = "reduction"

POS, SYM = "uniform(0, 1)", "uniform(-1, 1)"
# op: (combine, term, final, x init, uses y, extra scalar (name, init) or None, uses mask)
FLOAT_OPS = {
    "sum": ("sum", "x[@i]", "acc", POS, False, None),
    "mean": ("sum", "x[@i]", "acc / n", POS, False, None),
    "sumsq": ("sum", "x[@i] * x[@i]", "acc", SYM, False, None),
    "l1": ("sum", "fabs{s}(x[@i])", "acc", SYM, False, None),
    "l2norm": ("sum", "x[@i] * x[@i]", "sqrt{s}(acc)", SYM, False, None),
    "rms": ("sum", "x[@i] * x[@i]", "sqrt{s}(acc / n)", SYM, False, None),
    "max": ("max", "x[@i]", "acc", SYM, False, None),
    "min": ("min", "x[@i]", "acc", SYM, False, None),
    "absmax": ("max", "fabs{s}(x[@i])", "acc", SYM, False, None),
    "dot": ("sum", "x[@i] * y[@i]", "acc", POS, True, None),
    "sse": ("sum", "(x[@i] - y[@i]) * (x[@i] - y[@i])", "acc", SYM, True, None),
    "l1dist": ("sum", "fabs{s}(x[@i] - y[@i])", "acc", SYM, True, None),
    "maxdiff": ("max", "fabs{s}(x[@i] - y[@i])", "acc", SYM, True, None),
    "sumlog": ("sum", "log{s}(x[@i])", "acc", "uniform(1, 3)", False, None),
    "entropy": ("sum", "-x[@i] * log{s}(x[@i])", "acc", "uniform(0.01, 1)", False, None),
    "mad": ("sum", "fabs{s}(x[@i] - mu)", "acc / n", SYM, False, ("mu", "uniform(-0.5, 0.5)")),
    "var_known_mean": ("sum", "(x[@i] - mu) * (x[@i] - mu)", "acc / n", SYM, False, ("mu", "uniform(-0.5, 0.5)")),
    "huber": ("sum", "(fabs{s}(x[@i] - y[@i]) < delta ? 0.5{c} * (x[@i] - y[@i]) * (x[@i] - y[@i]) : "
              "delta * (fabs{s}(x[@i] - y[@i]) - 0.5{c} * delta))", "acc", SYM, True, ("delta", "uniform(0.2, 1)")),
    "hinge": ("sum", "(1.0{c} - y[@i] * x[@i] > 0.0{c} ? 1.0{c} - y[@i] * x[@i] : 0.0{c})", "acc", SYM, True, None),
}
INT_OPS = {
    "sum": ("sum", "x[@i]", "acc", "randint(-100, 100)", False, None),
    "max": ("max", "x[@i]", "acc", "randint(-1000000, 1000000)", False, None),
    "min": ("min", "x[@i]", "acc", "randint(-1000000, 1000000)", False, None),
    "dot": ("sum", "x[@i] * y[@i]", "acc", "randint(-10, 10)", True, None),
    "count_eq": ("sum", "(x[@i] == key ? 1 : 0)", "acc", "randint(0, 16)", False, ("key", "randint(0, 16)")),
}
TOL = {"rtol": 2e-3, "atol": 1e-4, "l2": 2e-3}


def _task(rng, op, spec, T, form):
    comb, term, final, xinit, has_y, scal = spec
    tc = {"float": "f32", "double": "f64", "int": "i32"}[T]
    term, final = fmt(term, T), fmt(final, T)
    acc = T
    out_t = T
    if form == "count_gt":
        acc, out_t = "int", "int"
    sig = [P("n", "int", "size")]
    xin = P("x", f"const {T}*", "in", "n", xinit)
    yin = P("y", f"const {T}*", "in", "n", xinit if T != "float" or op != "hinge" else SYM)
    if form == "strided":
        sig += [P("incx", "int", "size")]
        xin["shape"] = "(n - 1) * incx + 1"
        term = term.replace("x[@i]", "x[(size_t)(@i) * incx]")
        if has_y:
            sig += [P("incy", "int", "size")]
            yin["shape"] = "(n - 1) * incy + 1"
            term = term.replace("y[@i]", "y[(size_t)(@i) * incy]")
    sig.append(xin)
    if has_y:
        sig.append(yin)
    if form == "masked":
        sig.append(P("mask", "const unsigned char*", "in", "n", "bernoulli(0.5)"))
        from cudaperf.families._kernelgen import IDENTITY
        term = f"(mask[@i] ? {term} : {IDENTITY[(comb, T)]})"
    if scal:
        sig.append(P(scal[0], T, "scalar", init=scal[1]))
    if form == "count_gt":
        sig.append(P("thr", T, "scalar", init="uniform(-0.5, 0.5)"))
        term = "(x[@i] > thr ? 1 : 0)"
    accumulate = form == "accum"
    out = P("result", f"{out_t}*", "inout" if accumulate else "out", "1", "uniform(-1, 1)" if accumulate else None)
    sig.append(out)
    fin = f"result[0] + {final}" if accumulate else final
    entry = rng.choice(["{op}_{t}", "reduce_{op}_{t}", "{t}_{op}", "vec_{op}_{t}"]).format(op=op, t=tc)
    entry += {"plain": "", "strided": "_strided", "masked": "_masked", "accum": "_acc", "count_gt": ""}[form]
    ref = full_reduce_reference(entry, sig, "n", acc, comb, term, fin, "result", i=rng.choice(["i", "k", "j"]))
    var = full_reduce_variants(entry, sig, "n", acc, comb, term, fin, "result")
    big = (1 << 26) if T != "double" else (1 << 25)
    perf = {"n": big}
    if form == "strided":
        perf = {"n": 1 << 24, "incx": rng.choice([2, 3, 4])}
        if has_y:
            perf["incy"] = rng.choice([1, 2, 3])
    small = lambda n: {**{"n": n}, **({"incx": 3} if form == "strided" else {}),
                       **({"incy": 2} if form == "strided" and has_y else {})}
    tests = [{"name": "one", "sizes": small(1)}, {"name": "odd", "sizes": small(1003)},
             {"name": "mid", "sizes": small(100003)}, {"name": "perf", "sizes": perf, "perf": True}]
    tol = TOL if (acc != "int" and comb == "sum") else None
    return record(FAMILY, f"{op}_{tc}{'' if form in ('plain', 'count_gt') else '_' + form}", entry, sig, ref, var,
                  tests, {"op": op, "dtype": T, "form": form, "combine": comb}, flops="2*n", tol=tol)


def generate(rng: random.Random) -> list[dict]:
    recs = []
    for T in ("float", "double"):
        for op, spec in FLOAT_OPS.items():
            recs.append(_task(rng, op, spec, T, "plain"))
        recs.append(_task(rng, "count_gt", FLOAT_OPS["sum"], T, "count_gt"))
        for op in ("sum", "sumsq", "l1", "l2norm", "max", "min", "absmax", "dot"):
            recs.append(_task(rng, op, FLOAT_OPS[op], T, "strided"))
        for op in ("sum", "dot", "sumsq"):
            recs.append(_task(rng, op, FLOAT_OPS[op], T, "accum"))
        for op in ("sum", "max"):
            recs.append(_task(rng, op, FLOAT_OPS[op], T, "masked"))
    for op, spec in INT_OPS.items():
        recs.append(_task(rng, op, spec, "int", "plain"))
    for op in ("sum", "max", "min"):
        recs.append(_task(rng, op, INT_OPS[op], "int", "strided"))
    return recs
