"""Element-wise chains in the style of KernelBench level 2: 2-4 element-wise steps, optionally
with a second input tensor or a per-channel parameter broadcast over the spatial dimensions.

Guarantees: chains are drawn from the seeded rng without repeats; binary steps are same-shape
(x with y) and per-channel steps read parameter[c] for element (n, c, ...); perf inputs are
32M-64M floats per tensor.
"""
from __future__ import annotations

import random

from cudaperf.torchtasks._kit import SMOOTH, UNARY
from cudaperf.torchtasks._mapkit import map_task

FAMILY = "elementwise_chain"
CATEGORY = "elementwise"

BINARY = {  # torch line, CUDA statement
    "add": ("x = x + y", "v = v + yv;"),
    "mul": ("x = x * y", "v = v * yv;"),
    "sub": ("x = x - y", "v = v - yv;"),
    "max": ("x = torch.maximum(x, y)", "v = fmaxf(v, yv);"),
    "gate": ("x = x * torch.sigmoid(y)", "v = v * (1.0f / (1.0f + expf(-yv)));"),
}
CHAN = {  # per-channel parameter named `bias` or `scale`
    "bias_add": ("bias", "x = x + self.bias", "v = v + pc;"),
    "scale_mul": ("scale", "x = x * self.scale", "v = v * pc;"),
}
SHAPES4 = [(64, 64, 128, 128), (32, 128, 64, 128), (128, 32, 96, 96), (16, 256, 64, 64)]
SHAPES3 = [(128, 256, 1024), (64, 512, 2048), (256, 64, 2048)]


def generate(rng: random.Random) -> list[dict]:
    out, seen = [], set()
    while len(out) < 230:
        nun = rng.choice([2, 2, 3])
        ops = rng.sample(SMOOTH, nun)
        kind = rng.choice(["none", "bin", "bin", "chan", "chan"])
        extra = rng.choice(list(BINARY)) if kind == "bin" else rng.choice(list(CHAN)) if kind == "chan" else None
        pos = rng.randrange(nun + 1)
        shape = rng.choice(SHAPES4 + SHAPES3)
        key = (tuple(ops), kind, extra, pos, shape)
        if key in seen:
            continue
        seen.add(key)
        four = len(shape) == 4
        dims = ["batch_size", "channels", "height", "width"] if four else ["batch_size", "channels", "length"]
        consts = dict(zip(dims, shape))
        tl = [f"x = {UNARY[o][0]}" for o in ops]
        cb = [f"v = {UNARY[o][1]};" for o in ops]
        chan = chan_dims = None
        if kind == "bin":
            tl.insert(pos, BINARY[extra][0])
            cb.insert(pos, BINARY[extra][1])
        elif kind == "chan":
            chan, line, stmt = CHAN[extra]
            tl.insert(pos, line)
            cb.insert(pos, stmt)
            chan_dims = ["channels"] + ["1"] * (len(dims) - 2)
        steps = ops[:]
        if extra:
            steps.insert(pos, extra)
        name = "_".join(steps) + "_" + "x".join(map(str, shape))
        small = [dict(zip(dims, s)) for s in ([1] * len(dims), [2, 3, 5, 7][:len(dims)], [3, 5, 17, 19][:len(dims)])]
        out.append(map_task(
            family=FAMILY, name=name, entry="fused_elementwise", dims=dims, consts=consts, small=small,
            torch_lines=tl, cuda_body=" ".join(cb), second=kind == "bin", chan=chan, chan_dims=chan_dims,
            doc="Element-wise chain: " + " -> ".join(steps) + ".",
            init="uniform(-2, 2)", tol={"rtol": 1e-3, "atol": 1e-4, "l2": 1e-3},
            meta={"ops": steps, "difficulty": 2, "flops": f"{len(steps)}*" + "*".join(dims)}))
    return out
