"""Horner evaluation of polynomials of degree 3..16 at every element of an array.

Guarantees: 84 tasks = 14 degrees x {float, double} x 3 forms (coefficients as literals in the
code, coefficients in an array with the degree as a parameter, value plus derivative). Inputs
lie in [-1, 1] and coefficients in [-1, 1], so values stay O(deg) and the float default
tolerance (relative to max |ref|) holds. Work per element grows with the degree (2*deg flops,
4*deg for the derivative form), so high degrees are compute-heavier than a plain map.
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import P, ewise_reference, ewise_variants, record, tests_1d

FAMILY = "polynomial"
CATEGORY = "map"

ENTRY = ["poly{d}_{t}", "horner{d}_{t}", "eval_poly_deg{d}_{t}", "polyval{d}_{t}"]


def _lit(x: float, t: str) -> str:
    s = f"{x:.7g}"
    if "e" not in s and "." not in s:
        s += ".0"
    return s + ("f" if t == "float" else "")


def generate(rng: random.Random) -> list[dict]:
    recs = []
    for d in range(3, 17):
        for t in ("float", "double"):
            tc = "f32" if t == "float" else "f64"
            for form in ("literal", "array", "derivative"):
                entry = rng.choice(ENTRY).format(d=d, t=tc) + {"literal": "", "array": "_c", "derivative": "_grad"}[form]
                xn, yn = rng.choice([("x", "y"), ("in", "out"), ("s", "p"), ("u", "f")])
                extra = {}
                if form == "literal":
                    cs = [round(rng.uniform(-1, 1), 6) for _ in range(d + 1)]
                    sig = [P("n", "int", "size"), P(xn, f"const {t}*", "in", "n", "uniform(-1, 1)"),
                           P(yn, f"{t}*", "out", "n")]
                    lines = [f"{t} v = @{xn};", f"{t} acc = {_lit(cs[d], t)};"]
                    lines += [f"acc = acc * v + {_lit(cs[k], t)};" for k in range(d - 1, -1, -1)]
                    lines.append(f"@{yn} = acc;")
                    arrays = {xn: 1, yn: 1}
                    knobs = {"degree": d, "dtype": t, "form": form, "coeffs": cs}
                else:
                    extra = {"deg": d}
                    sig = [P("n", "int", "size"), P("deg", "int", "size"),
                           P("c", f"const {t}*", "in", "deg + 1", "uniform(-1, 1)"),
                           P(xn, f"const {t}*", "in", "n", "uniform(-1, 1)"), P(yn, f"{t}*", "out", "n")]
                    arrays = {xn: 1, yn: 1}
                    if form == "array":
                        lines = [f"{t} v = @{xn};", f"{t} acc = c[deg];",
                                 "for (int m = deg - 1; m >= 0; m--)", "    acc = acc * v + c[m];",
                                 f"@{yn} = acc;"]
                    else:
                        sig.append(P("dy", f"{t}*", "out", "n"))
                        arrays["dy"] = 1
                        lines = [f"{t} v = @{xn};", f"{t} acc = c[deg];", f"{t} dacc = 0;",
                                 "for (int m = deg - 1; m >= 0; m--) {", "    dacc = dacc * v + acc;",
                                 "    acc = acc * v + c[m];", "}", f"@{yn} = acc;", "@dy = dacc;"]
                    knobs = {"degree": d, "dtype": t, "form": form}
                body = "\n".join(lines)
                ref = ewise_reference(entry, sig, "n", arrays, body, i=rng.choice(["i", "j", "idx"]))
                perf = (1 << 26) if t == "float" else (1 << 25)
                flops = f"{4 * d if form == 'derivative' else 2 * d}*n"
                recs.append(record(FAMILY, f"deg{d}_{tc}_{form}", entry, sig, ref,
                                   ewise_variants(entry, sig, "n", arrays, body),
                                   tests_1d(perf, extra=extra), knobs, flops=flops))
    return recs
