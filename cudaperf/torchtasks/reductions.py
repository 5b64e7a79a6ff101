"""Reductions over one dimension (sum, mean, max, min, L2 norm, logsumexp, var, std, mean|x|),
optionally followed by an element-wise op on the result, for 2-D and 3-D inputs.

Guarantees: the reduced dimension is the last one (block-per-row optimised variant) or the
middle one of a 3-D tensor (tile32x8 variant, coalesced along the innermost dimension); var/std
are unbiased (torch's default), so small tests keep the reduced length >= 2.
"""
from __future__ import annotations

import random

from cudaperf.torchtasks._kit import SMOOTH, UNARY, module_source, record, sig_of, tests_from
from cudaperf.torchtasks._rowkit import LAYOUTS, PERF, SMALL, post_fn, row_sources

FAMILY = "reductions"
CATEGORY = "reduction"

OPS = {  # torch expression (D = dim), steps, seg expression
    "sum": ("torch.sum(x, dim=D)", [("red", "s", "sum", "xv")], "s"),
    "mean": ("torch.mean(x, dim=D)", [("red", "s", "sum", "xv")], "s / (float)len"),
    "max": ("torch.amax(x, dim=D)", [("red", "m", "max", "xv")], "m"),
    "min": ("torch.min(x, dim=D)[0]", [("red", "m", "min", "xv")], "m"),
    "l2norm": ("torch.linalg.vector_norm(x, dim=D)", [("red", "q", "sum", "xv * xv")], "sqrtf(q)"),
    "logsumexp": ("torch.logsumexp(x, dim=D)",
                  [("red", "m", "max", "xv"), ("red", "s", "sum", "expf(xv - m)")], "m + logf(s)"),
    "var": ("torch.var(x, dim=D)", [("red", "s", "sum", "xv"), ("let", "mu", "s / (float)len"),
                                    ("red", "q", "sum", "(xv - mu) * (xv - mu)")], "q / (float)(len - 1)"),
    "std": ("torch.std(x, dim=D)", [("red", "s", "sum", "xv"), ("let", "mu", "s / (float)len"),
                                    ("red", "q", "sum", "(xv - mu) * (xv - mu)")], "sqrtf(q / (float)(len - 1))"),
    "mean_abs": ("torch.mean(torch.abs(x), dim=D)", [("red", "s", "sum", "fabsf(xv)")], "s / (float)len"),
}


def generate(rng: random.Random) -> list[dict]:
    out = []
    for op, (tex, steps, seg) in OPS.items():
        for lay, (dims, D, outer, length, inner) in LAYOUTS.items():
            posts = [[]] + [[p] for p in rng.sample(SMOOTH, 2)]
            for post in posts:
                shape = rng.choice(PERF[lay])
                consts = dict(zip(dims, shape))
                odims = [d for j, d in enumerate(dims) if j != D]
                inputs = [("x", dims, "uniform(-1, 1)")]
                outputs = [("out", odims)]
                sig = sig_of(dims, inputs, [], outputs)
                name = f"{op}_dim{D}{'_' + post[0] if post else ''}_{'x'.join(map(str, shape))}"
                variants = row_sources(entry="reduce_forward", sig=sig, outer=outer, length=length, inner=inner,
                                       steps=steps, final=("seg", f"post({seg})"), prelude=post_fn(post))
                body = [f"x = {tex.replace('D', 'self.dim')}"] + [f"x = {UNARY[p][0]}" for p in post] + ["return x"]
                module = module_source(init_args=["reduce_dim"], init_body=["self.dim = reduce_dim"],
                                       fwd_args=["x"], fwd_body=body, consts={**consts, "reduce_dim": D},
                                       get_inputs=[f"torch.randn({', '.join(dims)})"],
                                       doc=f"{op} over dimension {D}{' then ' + post[0] if post else ''}.")
                out.append(record(family=FAMILY, name=name, entry="reduce_forward", sizes=dims, inputs=inputs,
                                  params=[], outputs=outputs, module=module, variants=variants,
                                  tests=tests_from(SMALL[lay], consts),
                                  tolerance={"rtol": 1e-3, "atol": 1e-4, "l2": 1e-4},
                                  meta={"ops": [op] + post, "difficulty": 2, "flops": "*".join(dims)}))
    return out
