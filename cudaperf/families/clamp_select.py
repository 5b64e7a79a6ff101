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
                                   {"op": op, "dtype": t, "style": style}))
    return recs
