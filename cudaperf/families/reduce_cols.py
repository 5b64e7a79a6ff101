"""Per-column reductions of a row-major matrix (out[c] over all rows r): sum, mean, max, min,
sum of squares, L2 norm, L1 norm, max-abs (float, double) and sum, max, min (int).

Guarantees: 76 tasks = 19 (operation, type) pairs x {contiguous, padded lda} x {accumulator
variable, accumulate into out[c]}; same operation table and perf-shape rotation as
reduce_rows (shared code), but the reduced index is the row, so the naive thread-per-column
loop is coalesced and the optimised variants split rows (shared-memory tile, two-pass with
scratch partials) to fill the GPU when there are few columns.
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import col_reduce_variants, row_reduce_reference
from cudaperf.families.reduce_rows import build, cases

FAMILY = "reduce_cols"
CATEGORY = "reduction"

# (rows, cols) of the perf test: the naive loop runs `rows` dependent steps per column thread.
SHAPES = {"square": (4096, 8192), "tall": (32768, 1024), "wide": (512, 1 << 16)}


def generate(rng: random.Random) -> list[dict]:
    recs = []
    k = 0
    for op, T in cases():
        for layout in ("contig", "lda"):
            for style in ("local", "inplace"):
                shape = list(SHAPES)[(k + 1) % 3]
                k += 1
                recs.append(build(rng, FAMILY, "cols", op, T, layout, style, shape,
                                  row_reduce_reference, col_reduce_variants, SHAPES))
    return recs
