"""Complex arithmetic on arrays of complex numbers: multiply, conjugate multiply, divide, add,
magnitude, power, phase, phase rotation (scalar and per-element angle), complex scaling,
complex axpy, multiply-accumulate, normalisation, polar-to-cartesian.

Guarantees: 84 tasks = 14 operations x {float, double} x 3 layouts: interleaved re/im indexed
as z[2*i], z[2*i+1]; interleaved walked with a step-2 loop; split (separate re and im arrays).
Divisors and normalised values are drawn away from zero (|b|^2 >= 0.5), so every result is
well conditioned and the default tolerance applies.
"""
from __future__ import annotations

import random
import re

from cudaperf.families._kernelgen import P, ewise_reference, ewise_variants, fmt, record, tests_1d

FAMILY = "complex_arith"
CATEGORY = "misc"

# op: (complex inputs, real inputs, complex outputs, real outputs, inout complex, scalars, body)
# body tokens: $a.re / $a.im for complex arrays, $m for real arrays; {s}/{c}/{T} type suffixes.
OPS = {
    "mul": ("ab", "", "c", "", "", [],
            "{T} ar = $a.re, ai = $a.im, br = $b.re, bi = $b.im;\n$c.re = ar * br - ai * bi;\n$c.im = ar * bi + ai * br;"),
    "conj_mul": ("ab", "", "c", "", "", [],
                 "{T} ar = $a.re, ai = $a.im, br = $b.re, bi = $b.im;\n$c.re = ar * br + ai * bi;\n$c.im = ai * br - ar * bi;"),
    "div": ("ab", "", "c", "", "", [],
            "{T} ar = $a.re, ai = $a.im, br = $b.re, bi = $b.im;\n{T} den = br * br + bi * bi;\n"
            "$c.re = (ar * br + ai * bi) / den;\n$c.im = (ai * br - ar * bi) / den;"),
    "add": ("ab", "", "c", "", "", [], "$c.re = $a.re + $b.re;\n$c.im = $a.im + $b.im;"),
    "magnitude": ("a", "", "", "m", "", [], "{T} ar = $a.re, ai = $a.im;\n$m = sqrt{s}(ar * ar + ai * ai);"),
    "power": ("a", "", "", "m", "", [], "$m = $a.re * $a.re + $a.im * $a.im;"),
    "phase": ("a", "", "", "m", "", [], "$m = atan2{s}($a.im, $a.re);"),
    "rotate_scalar": ("a", "", "c", "", "", [("theta", "uniform(-3.14, 3.14)")],
                      "{T} cs = cos{s}(theta), sn = sin{s}(theta);\n{T} ar = $a.re, ai = $a.im;\n"
                      "$c.re = ar * cs - ai * sn;\n$c.im = ar * sn + ai * cs;"),
    "rotate_array": ("a", "ph", "c", "", "", [],
                     "{T} cs = cos{s}($ph), sn = sin{s}($ph);\n{T} ar = $a.re, ai = $a.im;\n"
                     "$c.re = ar * cs - ai * sn;\n$c.im = ar * sn + ai * cs;"),
    "scale": ("a", "", "c", "", "", [("alpha_re", "uniform(-2, 2)"), ("alpha_im", "uniform(-2, 2)")],
              "{T} ar = $a.re, ai = $a.im;\n$c.re = alpha_re * ar - alpha_im * ai;\n$c.im = alpha_re * ai + alpha_im * ar;"),
    "axpy": ("a", "", "", "", "c", [("alpha_re", "uniform(-2, 2)"), ("alpha_im", "uniform(-2, 2)")],
             "{T} ar = $a.re, ai = $a.im;\n$c.re += alpha_re * ar - alpha_im * ai;\n$c.im += alpha_re * ai + alpha_im * ar;"),
    "mac": ("ab", "", "", "", "c", [],
            "{T} ar = $a.re, ai = $a.im, br = $b.re, bi = $b.im;\n$c.re += ar * br - ai * bi;\n$c.im += ar * bi + ai * br;"),
    "normalize": ("a", "", "c", "", "", [],
                  "{T} ar = $a.re, ai = $a.im;\n{T} inv = 1.0{c} / sqrt{s}(ar * ar + ai * ai);\n$c.re = ar * inv;\n$c.im = ai * inv;"),
    "polar": ("", "rth", "c", "", "", [], "$c.re = $r * cos{s}($th);\n$c.im = $r * sin{s}($th);"),
}
REAL_INIT = {"ph": "uniform(-3.14, 3.14)", "th": "uniform(-3.14, 3.14)", "r": "uniform(0, 2)"}


def _real_names(s: str) -> list[str]:
    return ["r", "th"] if s == "rth" else ([s] if s else [])


def generate(rng: random.Random) -> list[dict]:
    recs = []
    for op, (cin, rin, cout, rout, cio, scal, body0) in OPS.items():
        for t in ("float", "double"):
            tc = "c64" if t == "float" else "c128"
            for layout in ("interleaved", "step", "split"):
                entry = rng.choice(["c{op}_{t}", "complex_{op}_{t}", "z{op}_{t}", "cplx_{op}_{t}"]).format(op=op, t=tc)
                entry += {"interleaved": "", "step": "_il", "split": "_soa"}[layout]
                sig = [P("n", "int", "size")]
                arrays: dict[str, int] = {}
                body = fmt(body0, t)

                def add_complex(nm, role):
                    init = None if role == "out" else ("uniform(0.5, 2)" if (op in ("div", "normalize") and nm in ("b", "a") and (op == "normalize" or nm == "b")) else "uniform(-1, 1)")
                    ct = f"const {t}*" if role == "in" else f"{t}*"
                    if layout == "split":
                        for part in ("re", "im"):
                            sig.append(P(f"{nm}_{part}", ct, role, "n", init))
                            arrays[f"{nm}_{part}"] = 1
                    else:
                        sig.append(P(nm, ct, role, "2*n", init))
                        arrays[nm] = 2
                for nm in cin:
                    add_complex(nm, "in")
                for nm in _real_names(rin):
                    sig.append(P(nm, f"const {t}*", "in", "n", REAL_INIT[nm]))
                    arrays[nm] = 1
                for nm in cio:
                    add_complex(nm, "inout")
                for nm in cout:
                    add_complex(nm, "out")
                for nm in _real_names(rout):
                    sig.append(P(nm, f"{t}*", "out", "n"))
                    arrays[nm] = 1
                for nm, init in scal:
                    sig.append(P(nm, t, "scalar", init=init))
                if layout == "split":
                    body = re.sub(r"\$(\w+)\.(re|im)", r"@\1_\2", body)
                else:
                    body = re.sub(r"\$(\w+)\.re", r"@\g<1>0", body)
                    body = re.sub(r"\$(\w+)\.im", r"@\g<1>1", body)
                body = re.sub(r"\$(\w+)", r"@\1", body)
                ref = ewise_reference(entry, sig, "n", arrays, body, i=rng.choice(["i", "k"]),
                                      style="step" if layout == "step" else "index")
                perf = (1 << 25) if t == "float" else (1 << 24)
                recs.append(record(FAMILY, f"{op}_{tc}_{layout}", entry, sig, ref,
                                   ewise_variants(entry, sig, "n", arrays, body), tests_1d(perf),
                                   {"op": op, "dtype": t, "layout": layout}))
    return recs
