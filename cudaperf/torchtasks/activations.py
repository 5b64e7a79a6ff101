"""Activation functions on 2-D activations (nn.functional / torch forms), one task per (op, shape).

Guarantees: 22 activations x 5 shapes; every perf input is 64M floats (256 MB), small tests
include a single element and ragged sizes that are not multiples of 4 or of the block size.
"""
from __future__ import annotations

import random

from cudaperf.torchtasks._kit import ACTIVATIONS, UNARY
from cudaperf.torchtasks._mapkit import map_task

FAMILY = "activations"
CATEGORY = "elementwise"
SHAPES = [(4096, 16384), (2048, 32768), (16384, 4096), (8192, 8192), (1024, 65536)]
SMALL = [{"batch_size": 1, "dim": 1}, {"batch_size": 3, "dim": 1001}, {"batch_size": 7, "dim": 257}]


def generate(rng: random.Random) -> list[dict]:
    out = []
    for op in ACTIVATIONS:
        for b, d in SHAPES:
            out.append(map_task(
                family=FAMILY, name=f"{op}_{b}x{d}", entry=f"{op}_forward", dims=["batch_size", "dim"],
                consts={"batch_size": b, "dim": d}, small=SMALL,
                torch_lines=[f"x = {UNARY[op][0]}"], cuda_body=f"v = {UNARY[op][1]};",
                doc=f"Applies {op} element-wise.", meta={"ops": [op], "difficulty": 1,
                                                          "flops": f"batch_size*dim"}))
    return out
