"""Softmax variants over one dimension: softmax, log-softmax, softmin, temperature softmax,
scaled softmax, and softmax followed by an element-wise op.

Guarantees: every variant subtracts the segment maximum before exponentiating (as torch
does), so large inputs do not overflow; last-dimension and middle-dimension layouts.
"""
from __future__ import annotations

import random

from cudaperf.torchtasks._kit import SMOOTH, UNARY, module_source, record, sig_of, tests_from
from cudaperf.torchtasks._rowkit import LAYOUTS, PERF, SMALL, post_fn, row_sources

FAMILY = "softmax"
CATEGORY = "normalisation"

_SM = [("red", "m", "max", "(A)"), ("red", "s", "sum", "expf((A) - m)"), ("let", "inv", "1.0f / s")]
OPS = {  # torch line, element expression A of xv, final map expression
    "softmax": ("x = torch.softmax(x, dim=D)", "xv", "expf((A) - m) * inv"),
    "log_softmax": ("x = torch.log_softmax(x, dim=D)", "xv", "(A) - m - logf(s)"),
    "softmin": ("x = F.softmin(x, dim=D)", "-xv", "expf((A) - m) * inv"),
    "softmax_temp": ("x = torch.softmax(x / 0.7, dim=D)", "xv / 0.7f", "expf((A) - m) * inv"),
    "softmax_scaled": ("x = torch.softmax(x * 4.0, dim=D)", "xv * 4.0f", "expf((A) - m) * inv"),
}


def generate(rng: random.Random) -> list[dict]:
    out = []
    for op, (line, A, fin) in OPS.items():
        for lay, (dims, D, outer, length, inner) in LAYOUTS.items():
            for post in [[]] + [[p] for p in rng.sample(SMOOTH, 2)]:
                for shape in rng.sample(PERF[lay], 1):
                    consts = dict(zip(dims, shape))
                    inputs = [("x", dims, "uniform(-4, 4)")]
                    outputs = [("out", dims)]
                    sig = sig_of(dims, inputs, [], outputs)
                    steps = [(s[0], s[1], s[2], s[3].replace("A", A)) if s[0] == "red" else s for s in _SM]
                    variants = row_sources(entry="softmax_forward", sig=sig, outer=outer, length=length,
                                           inner=inner, steps=steps,
                                           final=("map", f"post({fin.replace('A', A)})"), prelude=post_fn(post))
                    body = [line.replace("D", str(D))] + [f"x = {UNARY[p][0]}" for p in post] + ["return x"]
                    module = module_source(init_args=[], init_body=[], fwd_args=["x"], fwd_body=body, consts=consts,
                                           get_inputs=[f"torch.randn({', '.join(dims)})"],
                                           doc=f"{op} over dimension {D}{' then ' + post[0] if post else ''}.")
                    name = f"{op}_dim{D}{'_' + post[0] if post else ''}_{'x'.join(map(str, shape))}"
                    out.append(record(family=FAMILY, name=name, entry="softmax_forward", sizes=dims, inputs=inputs,
                                      params=[], outputs=outputs, module=module, variants=variants,
                                      tests=tests_from(SMALL[lay], consts),
                                      tolerance={"rtol": 1e-3, "atol": 1e-5, "l2": 1e-4},
                                      meta={"ops": [op] + post, "difficulty": 2, "flops": "5*" + "*".join(dims)}))
    return out
