"""Elementwise unary math (activations and special functions) on float and double arrays.

Guarantees: 80 tasks = 20 formulas x {float, double} x {out-of-place y = f(x), in-place x = f(x)};
each input is drawn inside the formula's domain (log1p, sqrt, rsqrt, reciprocal get positive
inputs), and the perf size moves >= 256 MB while its double-precision serial reference stays a
few seconds (transcendental-heavy formulas get a halved perf size).
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import P, ewise_reference, ewise_variants, fmt, record, tests_1d

FAMILY = "map_unary"
CATEGORY = "map"

# name: (expression of v with {s}/{c} type suffixes, input init, heavy?)
OPS = {
    "relu": ("v > 0.0{c} ? v : 0.0{c}", "uniform(-2, 2)", False),
    "leaky_relu": ("v > 0.0{c} ? v : 0.01{c} * v", "uniform(-2, 2)", False),
    "elu": ("v > 0.0{c} ? v : exp{s}(v) - 1.0{c}", "uniform(-3, 3)", False),
    "selu": ("1.0507009873{c} * (v > 0.0{c} ? v : 1.6732632423{c} * (exp{s}(v) - 1.0{c}))", "uniform(-3, 3)", False),
    "gelu_tanh": ("0.5{c} * v * (1.0{c} + tanh{s}(0.7978845608{c} * (v + 0.044715{c} * v * v * v)))", "uniform(-4, 4)", True),
    "gelu_erf": ("0.5{c} * v * (1.0{c} + erf{s}(v * 0.7071067812{c}))", "uniform(-4, 4)", True),
    "sigmoid": ("1.0{c} / (1.0{c} + exp{s}(-v))", "uniform(-6, 6)", False),
    "softplus": ("log1p{s}(exp{s}(v))", "uniform(-8, 8)", True),
    "silu": ("v / (1.0{c} + exp{s}(-v))", "uniform(-6, 6)", False),
    "mish": ("v * tanh{s}(log1p{s}(exp{s}(v)))", "uniform(-5, 5)", True),
    "tanh": ("tanh{s}(v)", "uniform(-3, 3)", False),
    "exp": ("exp{s}(v)", "uniform(-4, 4)", False),
    "log1p": ("log1p{s}(v)", "uniform(0, 10)", False),
    "sqrt": ("sqrt{s}(v)", "uniform(0, 100)", False),
    "rsqrt": ("1.0{c} / sqrt{s}(v)", "uniform(0.01, 100)", False),
    "reciprocal": ("1.0{c} / v", "uniform(0.5, 4)", False),
    "hardswish": ("v * fmin{s}(fmax{s}(v + 3.0{c}, 0.0{c}), 6.0{c}) / 6.0{c}", "uniform(-5, 5)", False),
    "softsign": ("v / (1.0{c} + fabs{s}(v))", "uniform(-4, 4)", False),
    "log_sigmoid": ("-log1p{s}(exp{s}(-v))", "uniform(-6, 6)", True),
    "cube": ("v * v * v", "uniform(-2, 2)", False),
}

# In-place formulas with fixed points inside the input range: an element the formula leaves
# unchanged is read but need not be written back (roofline lower bound, meta.min_bytes).
# Value: share of elements that DO change under the input draw (relu, leaky_relu, elu: the
# negative half; hardswish on U(-5, 5): all but x >= 3, i.e. 0.8). The writes are counted at
# half that share (data-dependent traffic at half its expected amount). Every other in-place
# formula changes (almost) every element: read + write, the default count.
INPLACE_WRITE_SHARE = {"relu": (1, 2), "leaky_relu": (1, 2), "elu": (1, 2), "hardswish": (4, 5)}


def _min_bytes(op: str, t: str, inplace: bool) -> str | None:
    if not inplace or op not in INPLACE_WRITE_SHARE:
        return None
    es = 4 if t == "float" else 8
    num, den = INPLACE_WRITE_SHARE[op]
    return f"n*{es}+((n*{num})//{2 * den})*{es}"


ENTRY_PATTERNS = ["{op}_{t}", "{op}_forward_{t}", "vec_{op}_{t}", "{op}_cpu_{t}", "apply_{op}_{t}"]
NAMES = [("x", "y"), ("in", "out"), ("src", "dst"), ("input", "output"), ("a", "b")]
LOOPV = ["i", "idx", "k", "j"]


def generate(rng: random.Random) -> list[dict]:
    recs = []
    for op, (expr, init, heavy) in OPS.items():
        for t in ("float", "double"):
            for inplace in (False, True):
                tc = "f32" if t == "float" else "f64"
                entry = rng.choice(ENTRY_PATTERNS).format(op=op, t=tc) + ("_inplace" if inplace else "")
                xn, yn = rng.choice(NAMES)
                e = fmt(expr, t)
                if inplace:
                    sig = [P("n", "int", "size"), P(xn, f"{t}*", "inout", "n", init)]
                    arrays = {xn: 1}
                    body = f"{t} v = @{xn};\n@{xn} = {e};"
                else:
                    sig = [P("n", "int", "size"), P(xn, f"const {t}*", "in", "n", init),
                           P(yn, f"{t}*", "out", "n")]
                    arrays = {xn: 1, yn: 1}
                    body = f"{t} v = @{xn};\n@{yn} = {e};"
                ref = ewise_reference(entry, sig, "n", arrays, body, i=rng.choice(LOOPV))
                perf = (1 << 26) if t == "float" else (1 << 25)
                if heavy:
                    perf //= 2
                recs.append(record(FAMILY, f"{op}_{tc}{'_inplace' if inplace else ''}", entry, sig,
                                   ref, ewise_variants(entry, sig, "n", arrays, body),
                                   tests_1d(perf), {"op": op, "dtype": t, "inplace": inplace},
                                   min_bytes=_min_bytes(op, t, inplace)))
    return recs
