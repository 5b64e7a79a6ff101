"""Loss functions reduced to one scalar: MSE, L1, smooth L1, Huber, hinge, BCE-with-logits,
soft margin, cosine embedding (1 - cos), cross-entropy with integer targets, KL divergence
between log-softmax distributions.

Guarantees: reductions are torch's defaults ("mean" over all elements, "batchmean" for KL,
mean over the batch for cross-entropy and cosine); targets use the ranges torch expects
(+-1 for hinge/soft margin, {0,1} for BCE, class indices in [0, C) as int64 for cross-entropy).
The output scalar is zeroed on the stream and accumulated with one atomicAdd per row.
"""
from __future__ import annotations

import random

from cudaperf.torchtasks._kit import module_source, record, sig_of, tests_from
from cudaperf.torchtasks._rowkit import PERF, SMALL, row_sources

FAMILY = "losses"
CATEGORY = "reduction"

D = "(xv - yv)"
ALL = "1.0f / ((float)batch_size * (float)dim)"
B = "1.0f / (float)batch_size"
LOSSES = {  # torch line, target init, target torch, steps, acc expr, scale
    "mse": ("torch.nn.functional.mse_loss(predictions, targets)", "uniform(-1, 1)", "torch.randn",
            [("red", "s", "sum", f"{D} * {D}")], "s", ALL),
    "l1": ("F.l1_loss(predictions, targets)", "uniform(-1, 1)", "torch.randn",
           [("red", "s", "sum", f"fabsf{D}")], "s", ALL),
    "smooth_l1": ("F.smooth_l1_loss(predictions, targets)", "uniform(-2, 2)", "torch.randn",
                  [("red", "s", "sum", f"(fabsf{D} < 1.0f ? 0.5f * {D} * {D} : fabsf{D} - 0.5f)")], "s", ALL),
    "huber": ("F.huber_loss(predictions, targets, delta=0.5)", "uniform(-2, 2)", "torch.randn",
              [("red", "s", "sum", f"(fabsf{D} < 0.5f ? 0.5f * {D} * {D} : 0.5f * (fabsf{D} - 0.25f))")], "s", ALL),
    "hinge": ("torch.mean(torch.clamp(1 - predictions * targets, min=0))", "choice(-1, 1)", "sign",
              [("red", "s", "sum", "fmaxf(1.0f - xv * yv, 0.0f)")], "s", ALL),
    "bce_logits": ("F.binary_cross_entropy_with_logits(predictions, targets)", "choice(0, 1)", "bit",
                   [("red", "s", "sum", "fmaxf(xv, 0.0f) - xv * yv + log1pf(expf(-fabsf(xv)))")], "s", ALL),
    "soft_margin": ("F.soft_margin_loss(predictions, targets)", "choice(-1, 1)", "sign",
                    [("red", "s", "sum", "log1pf(expf(-yv * xv))")], "s", ALL),
    "cosine": ("torch.mean(1 - F.cosine_similarity(predictions, targets, dim=1))", "uniform(-1, 1)", "torch.randn",
               [("red", "pp", "sum", "xv * xv"), ("red", "tt", "sum", "yv * yv"), ("red", "pt", "sum", "xv * yv")],
               "1.0f - pt / fmaxf(sqrtf(pp) * sqrtf(tt), 1e-8f)", B),
    "kl_div": ("F.kl_div(F.log_softmax(predictions, dim=1), F.log_softmax(targets, dim=1), "
               "reduction='batchmean', log_target=True)", "uniform(-3, 3)", "torch.randn",
               [("red", "mx", "max", "xv"), ("red", "sx", "sum", "expf(xv - mx)"), ("red", "my", "max", "yv"),
                ("red", "sy", "sum", "expf(yv - my)"), ("let", "lx", "mx + logf(sx)"), ("let", "ly", "my + logf(sy)"),
                ("red", "kl", "sum", "expf(yv - ly) * ((yv - ly) - (xv - lx))")], "kl", B),
}


def _targets(kind: str) -> str:
    if kind == "sign":
        return "torch.randint(0, 2, (batch_size, dim)).float() * 2 - 1"
    if kind == "bit":
        return "torch.randint(0, 2, (batch_size, dim)).float()"
    return "torch.randn(batch_size, dim)"


def generate(rng: random.Random) -> list[dict]:
    dims = ["batch_size", "dim"]
    shapes = PERF["2d_last"] + [(8192, 8192), (2048, 16384)]
    out = []
    for loss, (line, tinit, tkind, steps, acc, scale) in LOSSES.items():
        for shape in shapes:
            consts = dict(zip(dims, shape))
            inputs = [("predictions", dims, "uniform(-2, 2)"), ("targets", dims, tinit)]
            outputs = [("out", ["1"])]
            sig = sig_of(dims, inputs, [], outputs)
            src = row_sources(entry="loss_forward", sig=[dict(s) for s in sig], outer="batch_size", length="dim",
                              inner="1", steps=steps, final=("acc", acc, scale), two=True)
            # the kit names its tensors x / y: alias the signature's names
            src = [(n, st, s.replace("row_naive<<<", "const float *x = predictions, *y = targets;\n    row_naive<<<")
                    .replace("row_block<<<", "const float *x = predictions, *y = targets;\n    row_block<<<"))
                   for n, st, s in src]
            module = module_source(init_args=[], init_body=[], fwd_args=["predictions", "targets"],
                                   fwd_body=[f"return {line}"], consts=consts,
                                   get_inputs=["torch.randn(batch_size, dim)", _targets(tkind)],
                                   doc=f"{loss} loss.")
            out.append(record(family=FAMILY, name=f"{loss}_{shape[0]}x{shape[1]}", entry="loss_forward", sizes=dims,
                              inputs=inputs, params=[], outputs=outputs, module=module, variants=src,
                              tests=tests_from(SMALL["2d_last"], consts),
                              tolerance={"rtol": 1e-3, "atol": 1e-5, "l2": 1e-3},
                              meta={"ops": [loss], "difficulty": 2, "flops": "4*batch_size*dim"}))
    # cross-entropy: integer class targets (int64, as torch wants them)
    for shape in shapes:
        consts = {"batch_size": shape[0], "num_classes": shape[1]}
        cd = ["batch_size", "num_classes"]
        inputs = [("predictions", cd, "uniform(-4, 4)"), ("targets", ["batch_size"], "randint(0, num_classes)", "long long")]
        outputs = [("out", ["1"])]
        sig = sig_of(cd, inputs, [], outputs)
        steps = [("red", "m", "max", "xv"), ("red", "s", "sum", "expf(xv - m)"),
                 ("red", "xt", "sum", "(k == (int)targets[r] ? xv : 0.0f)")]
        src = row_sources(entry="cross_entropy_forward", sig=sig, outer="batch_size", length="num_classes", inner="1",
                          steps=steps, final=("acc", "m + logf(s) - xt", B), extra_args=[("long long", "targets")])
        src = [(n, st, s.replace("row_naive<<<", "const float *x = predictions;\n    row_naive<<<")
                .replace("row_block<<<", "const float *x = predictions;\n    row_block<<<")) for n, st, s in src]
        module = module_source(init_args=[], init_body=[], fwd_args=["predictions", "targets"],
                               fwd_body=["return F.cross_entropy(predictions, targets)"], consts=consts,
                               get_inputs=["torch.randn(batch_size, num_classes)",
                                           "torch.randint(0, num_classes, (batch_size,))"], doc="Cross-entropy loss.")
        small = [{"batch_size": s["batch_size"], "num_classes": s["dim"]} for s in SMALL["2d_last"]]
        out.append(record(family=FAMILY, name=f"cross_entropy_{shape[0]}x{shape[1]}", entry="cross_entropy_forward",
                          sizes=cd, inputs=inputs, params=[], outputs=outputs, module=module, variants=src,
                          tests=tests_from(small, consts), tolerance={"rtol": 1e-3, "atol": 1e-5, "l2": 1e-3},
                          meta={"ops": ["cross_entropy"], "difficulty": 2, "flops": "4*batch_size*num_classes"}))
    return out
