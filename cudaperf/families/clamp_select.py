"""Clamp, select and threshold maps: clamp, where/select by a mask, threshold, sign, step,
masked fill, compare-to-mask, soft/hard shrinkage, on float, double and int arrays.

Guarantees: 72 tasks = 12 operations x {float, double, int} x 2 code styles (ternary
expressions vs if/else chains, the two ways such C is written). Masks are 0/1 bytes or ints
drawn with bernoulli/randint; every operation is exact in its type, so the default
tolerance applies. Perf size: 2^25 elements (>= 256 MB moved for every operation).
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import P, ewise_reference, ewise_variants, fmt, record, tests_1d

FAMILY = "clamp_select"
CATEGORY = "map"

DATA = {"float": "uniform(-2, 2)", "double": "uniform(-2, 2)", "int": "randint(-100, 100)"}
SCAL = {"lo": ("uniform(-1, -0.2)", "randint(-50, -5)"), "hi": ("uniform(0.2, 1)", "randint(5, 50)"),
        "th": ("uniform(-0.5, 0.5)", "randint(-20, 20)"), "val": ("uniform(-3, 3)", "randint(-9, 9)"),
        "lam": ("uniform(0.1, 1)", "randint(1, 40)")}

# op: (arrays [(name, kind, role)], scalars, ternary body, if/else body). kind: T (element
# type), u8 (unsigned char mask), i32 (int mask). Bodies use {T} for the element type.
OPS = {
    "clamp": ([("x", "T", "in"), ("y", "T", "out")], ["lo", "hi"],
              "{T} v = @x;\n@y = v < lo ? lo : (v > hi ? hi : v);",
              "{T} v = @x;\nif (v < lo) @y = lo;\nelse if (v > hi) @y = hi;\nelse @y = v;"),
    "clamp_inplace": ([("x", "T", "inout")], ["lo", "hi"],
                      "@x = @x < lo ? lo : (@x > hi ? hi : @x);",
                      "if (@x < lo) @x = lo;\nif (@x > hi) @x = hi;"),
    "where_u8": ([("mask", "u8", "in"), ("a", "T", "in"), ("b", "T", "in"), ("out", "T", "out")], [],
                 "@out = @mask ? @a : @b;",
                 "if (@mask != 0) @out = @a;\nelse @out = @b;"),
    "where_i32": ([("cond", "i32", "in"), ("a", "T", "in"), ("b", "T", "in"), ("out", "T", "out")], [],
                  "@out = (@cond != 0) ? @a : @b;",
                  "if (@cond) @out = @a;\nelse @out = @b;"),
    "threshold": ([("x", "T", "in"), ("y", "T", "out")], ["th", "val"],
                  "@y = @x > th ? @x : val;",
                  "if (@x > th) @y = @x;\nelse @y = val;"),
    "sign": ([("x", "T", "in"), ("y", "T", "out")], [],
             "@y = @x > ({T})0 ? ({T})1 : (@x < ({T})0 ? ({T})-1 : ({T})0);",
             "{T} v = @x;\nif (v > ({T})0) @y = ({T})1;\nelse if (v < ({T})0) @y = ({T})-1;\nelse @y = ({T})0;"),
    "step": ([("x", "T", "in"), ("y", "T", "out")], ["th"],
             "@y = @x >= th ? ({T})1 : ({T})0;",
             "if (@x < th) @y = ({T})0;\nelse @y = ({T})1;"),
    "masked_fill": ([("mask", "u8", "in"), ("x", "T", "inout")], ["val"],
                    "@x = @mask ? val : @x;",
                    "if (@mask) @x = val;"),
    "compare_gt": ([("a", "T", "in"), ("b", "T", "in"), ("flag", "u8", "out")], [],
                   "@flag = @a > @b ? 1 : 0;",
                   "if (@a > @b) @flag = 1;\nelse @flag = 0;"),
    "select_cmp": ([("a", "T", "in"), ("b", "T", "in"), ("x", "T", "in"), ("y", "T", "in"), ("out", "T", "out")], [],
                   "@out = @a > @b ? @x : @y;",
                   "if (@a > @b) @out = @x;\nelse @out = @y;"),
    "soft_threshold": ([("x", "T", "in"), ("y", "T", "out")], ["lam"],
                       "{T} v = @x;\n@y = v > lam ? v - lam : (v < -lam ? v + lam : ({T})0);",
                       "{T} v = @x;\nif (v > lam) @y = v - lam;\nelse if (v < -lam) @y = v + lam;\nelse @y = ({T})0;"),
    "hard_shrink": ([("x", "T", "in"), ("y", "T", "out")], ["lam"],
                    "{T} v = @x;\n@y = (v > lam || v < -lam) ? v : ({T})0;",
                    "{T} v = @x;\n@y = v;\nif (v <= lam && v >= -lam) @y = ({T})0;"),
}

# Lower bounds for the roofline check (meta.min_bytes) of the in-place operations, which
# rewrite only some elements; every other operation reads each input and writes each output
# once (the default count). Data-dependent traffic is counted at HALF its smallest expected
# share under this generator's inputs (2^25 elements at the perf size, so the realised share
# is within a fraction of a percent of its expectation):
# * clamp_inplace: x is read once; only elements outside [lo, hi] must be written back, at
#   least half of them (x ~ U(-2, 2) with lo <= -0.2 and hi >= 0.2 leaves >= 1/4 below lo and
#   >= 1/4 above hi; ints: randint(-100, 100) against lo <= -5, hi >= 5 likewise) -> n/4 writes.
# * masked_fill: the mask is read once; x is neither read nor written where the mask is 0, and
#   written (not read) where it is 1 (bernoulli(0.5): half of the elements) -> n/4 writes.
# * where_u8 / where_i32 / select_cmp: only ONE of the two candidate values of an element is
#   needed (not data-dependent in total: exactly one per element), so n values, not 2n, are read
#   besides the condition (mask, cond or a and b) and the output.
def _min_bytes(op: str, t: str) -> str | None:
    es = 8 if t == "double" else 4
    if op == "where_u8":
        return f"n*(1+{2 * es})"
    if op == "where_i32":
        return f"n*(4+{2 * es})"
    if op == "select_cmp":
        return f"n*{4 * es}"
    if op == "clamp_inplace":
        return f"n*{es}+(n//4)*{es}"
    if op == "masked_fill":
        return f"n+(n//4)*{es}"
    return None


ENTRY = ["{op}_{t}", "{op}_cpu_{t}", "elementwise_{op}_{t}", "{t}_{op}"]


def generate(rng: random.Random) -> list[dict]:
    recs = []
    for op, (arrs, scal, tern, branchy) in OPS.items():
        for t in ("float", "double", "int"):
            for style, body in (("ternary", tern), ("ifelse", branchy)):
                tc = {"float": "f32", "double": "f64", "int": "i32"}[t]
                entry = rng.choice(ENTRY).format(op=op, t=tc) + ("" if style == "ternary" else "_v2")
                sig = [P("n", "int", "size")]
                arrays = {}
                for nm, kind, role in arrs:
                    et = {"T": t, "u8": "unsigned char", "i32": "int"}[kind]
                    init = None
                    if role != "out":
                        init = DATA[t] if kind == "T" else ("bernoulli(0.5)" if kind == "u8" else "randint(0, 2)")
                    sig.append(P(nm, (f"const {et}*" if role == "in" else f"{et}*"), role, "n", init))
                    arrays[nm] = 1
                for s in scal:
                    sig.append(P(s, t, "scalar", init=SCAL[s][1 if t == "int" else 0]))
                b = fmt(body, t)
                ref = ewise_reference(entry, sig, "n", arrays, b, i=rng.choice(["i", "k", "idx"]))
                recs.append(record(FAMILY, f"{op}_{tc}_{style}", entry, sig, ref,
                                   ewise_variants(entry, sig, "n", arrays, b), tests_1d(1 << 25),
                                   {"op": op, "dtype": t, "style": style}, min_bytes=_min_bytes(op, t)))
    return recs
