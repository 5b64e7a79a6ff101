"""Normalisations: LayerNorm (affine, via nn.LayerNorm), layer_norm without affine, RMSNorm
with a weight, RMS normalisation without weight, L2 normalisation (F.normalize), each
optionally followed by an element-wise op (level-2 style).

Guarantees: mean/variance use the biased variance and eps inside the square root exactly as
torch does (1e-5 for LayerNorm, 1e-6 for RMSNorm, max(||x||, 1e-12) for F.normalize); the
affine parameters are module parameters and signature inputs named `<module>_weight` / `_bias`.
"""
from __future__ import annotations

import random

from cudaperf.torchtasks._kit import SMOOTH, UNARY, module_source, record, sig_of, tests_from
from cudaperf.torchtasks._rowkit import LAYOUTS, PERF, SMALL, post_fn, row_sources

FAMILY = "norms"
CATEGORY = "normalisation"

_MV = [("red", "s", "sum", "xv"), ("let", "mean", "s / (float)len"),
       ("red", "q", "sum", "(xv - mean) * (xv - mean)"), ("let", "rstd", "rsqrtf(q / (float)len + 1e-5f)")]
_RMS = [("red", "q", "sum", "xv * xv"), ("let", "rr", "rsqrtf(q / (float)len + 1e-6f)")]
OPS = {  # init lines, forward line, steps, map expr, params (c name, module name), layouts allowed
    "layernorm": (["self.ln = nn.LayerNorm(@N)"], "x = self.ln(x)", _MV,
                  "(xv - mean) * rstd * ln_weight[k] + ln_bias[k]",
                  [("ln_weight", "ln.weight"), ("ln_bias", "ln.bias")], ["2d_last", "3d_last"]),
    "layer_norm_plain": ([], "x = F.layer_norm(x, (x.shape[-1],))", _MV, "(xv - mean) * rstd", [],
                         ["2d_last", "3d_last"]),
    "rmsnorm": (["self.weight = nn.Parameter(torch.ones(@N))"],
                "x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight", _RMS,
                "xv * rr * weight[k]", [("weight", "weight")], ["2d_last", "3d_last"]),
    "rms_plain": ([], "x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)", _RMS, "xv * rr", [],
                  ["2d_last", "3d_last"]),
    "l2normalize": ([], "x = F.normalize(x, p=2.0, dim=D)",
                    [("red", "q", "sum", "xv * xv"), ("let", "inv", "1.0f / fmaxf(sqrtf(q), 1e-12f)")],
                    "xv * inv", [], ["2d_last", "3d_last", "3d_mid"]),
}


def generate(rng: random.Random) -> list[dict]:
    out = []
    for op, (init, line, steps, fin, params, lays) in OPS.items():
        for lay in lays:
            dims, D, outer, length, inner = LAYOUTS[lay]
            ndim = dims[D]
            for post in [[]] + [[p] for p in rng.sample(SMOOTH, 3)]:
                shape = rng.choice(PERF[lay])
                consts = dict(zip(dims, shape))
                inputs = [("x", dims, "uniform(-2, 2)")]
                pr = [(c, m, [ndim], "uniform(0.5, 1.5)" if c.endswith("weight") else "uniform(-0.5, 0.5)")
                      for c, m in params]
                outputs = [("out", dims)]
                sig = sig_of(dims, inputs, pr, outputs)
                variants = row_sources(entry="norm_forward", sig=sig, outer=outer, length=length, inner=inner,
                                       steps=steps, final=("map", f"post({fin})"), prelude=post_fn(post),
                                       extra_args=[("float", c) for c, _ in params])
                body = [line.replace("D", str(D))] + [f"x = {UNARY[p][0]}" for p in post] + ["return x"]
                init_args = [ndim] if init else []
                module = module_source(init_args=init_args, init_body=[i.replace("@N", ndim) for i in init],
                                       fwd_args=["x"], fwd_body=body, consts=consts,
                                       get_inputs=[f"torch.randn({', '.join(dims)})"],
                                       doc=f"{op} over dimension {D}{' then ' + post[0] if post else ''}.")
                name = f"{op}_dim{D}{'_' + post[0] if post else ''}_{'x'.join(map(str, shape))}"
                out.append(record(family=FAMILY, name=name, entry="norm_forward", sizes=dims, inputs=inputs,
                                  params=pr, outputs=outputs, module=module, variants=variants,
                                  tests=tests_from(SMALL[lay], consts),
                                  tolerance={"rtol": 1e-3, "atol": 1e-4, "l2": 1e-4},
                                  meta={"ops": [op] + post, "difficulty": 2, "flops": "8*" + "*".join(dims)}))
    return out
