"""KernelBench's evaluation metrics over plain result rows.

Guarantees (definitions as in KernelBench, Ouyang et al. 2025):

* `fast_p(rows, ps)`: for each threshold p, the fraction of *tasks* whose sample is correct
  and has speedup > p (strictly). A task with no row, an incorrect row, or a missing speedup
  counts as not fast; the denominator is the number of distinct tasks given (or `n_tasks`).
  fast_0 is therefore the correctness rate. With several samples per task, a task counts when
  its chosen sample qualifies (`per_task="best"`: the fastest correct sample, `"first"`:
  the first sample in row order).
* `geomean_speedup(rows)`: geometric mean of speedup over correct rows with a positive, finite
  speedup; NaN when there are none.
* `pass_at_k(n, c, k)`: the unbiased estimator 1 - C(n-c, k)/C(n, k) (Chen et al. 2021),
  computed as a stable product; `pass_at_k_rows` averages it over tasks.

Rows are mappings (dicts, DataFrame rows) with at least `task_id`, `correct` and, for speed
metrics, `speedup`; a pandas DataFrame is accepted wherever a list of rows is.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

Row = Mapping[str, Any]


def _rows(rows: Any) -> list[Row]:
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        return rows.to_dict(orient="records")
    return list(rows)


def is_correct(r: Row) -> bool:
    """Correct and not flagged as a hack by the harness (a flagged row never counts)."""
    flags = r.get("flags")
    flags = [] if flags is None else list(flags)
    return bool(r.get("correct", False)) and not any(str(f).startswith("hack:") for f in flags)


def qualifying_speedup(r: Row) -> float | None:
    """The speedup of a correct row, or None when the row does not qualify."""
    if not is_correct(r):
        return None
    s = r.get("speedup")
    if s is None:
        return None
    try:
        s = float(s)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(s) or s <= 0:
        return None
    return s


def _per_task(rows: list[Row], per_task: str) -> dict[str, Row | None]:
    if per_task not in ("best", "first"):
        raise ValueError(f"per_task must be 'best' or 'first', got {per_task!r}")
    out: dict[str, Row | None] = {}
    for r in rows:
        tid = str(r["task_id"])
        if tid not in out:
            out[tid] = r
        elif per_task == "best":
            cur = out[tid]
            a, b = qualifying_speedup(r), qualifying_speedup(cur) if cur is not None else None
            # a correct row beats an incorrect one; among correct ones the faster wins
            if (a is not None and (b is None or a > b)) or (
                    b is None and a is None and bool(r.get("correct")) and not bool(cur.get("correct"))):
                out[tid] = r
    return out


def fast_p(rows: Any, ps: Sequence[float] = (0.0, 1.0, 1.5, 2.0), *, per_task: str = "best",
           n_tasks: int | None = None) -> dict[float, float]:
    """{p: fraction of tasks correct with speedup > p}."""
    chosen = _per_task(_rows(rows), per_task)
    denom = n_tasks if n_tasks is not None else len(chosen)
    if n_tasks is not None and n_tasks < len(chosen):
        raise ValueError(f"n_tasks={n_tasks} is smaller than the {len(chosen)} tasks in the rows")
    out: dict[float, float] = {}
    for p in ps:
        if denom == 0:
            out[float(p)] = float("nan")
            continue
        hits = 0
        for r in chosen.values():
            if r is None:
                continue
            s = qualifying_speedup(r)
            # fast_0 is the correctness rate: a correct row with an unmeasured speedup counts
            if p == 0 and is_correct(r) and s is None and r.get("speedup") is None:
                hits += 1
            elif s is not None and s > p:
                hits += 1
        out[float(p)] = hits / denom
    return out


def geomean_speedup(rows: Any) -> float:
    """Geometric mean of the speedups of correct rows (NaN when none qualifies)."""
    vals = [s for s in (qualifying_speedup(r) for r in _rows(rows)) if s is not None]
    if not vals:
        return float("nan")
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct."""
    if not (0 <= c <= n) or k < 1:
        raise ValueError(f"need 0 <= c <= n and k >= 1, got n={n}, c={c}, k={k}")
    if k > n:
        raise ValueError(f"k={k} exceeds the number of samples n={n}")
    if n - c < k:
        return 1.0
    # 1 - prod_{i=n-c+1}^{n} (1 - k/i): no huge binomials
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def pass_at_k_rows(rows: Any, ks: Iterable[int] = (1,)) -> dict[int, float]:
    """Mean over tasks of pass@k, from rows with several samples per task.

    A k larger than a task's sample count is an error (the estimator is undefined there).
    """
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in _rows(rows):
        c = counts[str(r["task_id"])]
        c[0] += 1
        c[1] += int(is_correct(r))
    out = {}
    for k in ks:
        if not counts:
            out[int(k)] = float("nan")
            continue
        out[int(k)] = sum(pass_at_k(n, c, k) for n, c in counts.values()) / len(counts)
    return out


def summary(rows: Any, ps: Sequence[float] = (0.0, 1.0, 1.5, 2.0), ks: Iterable[int] = (1,)) -> dict[str, float]:
    """One flat dict for a results table: fast_p per p, geomean speedup, pass@k per k."""
    rows = _rows(rows)
    out: dict[str, float] = {f"fast_{p:g}": v for p, v in fast_p(rows, ps).items()}
    out["geomean_speedup"] = geomean_speedup(rows)
    out["n_tasks"] = float(len({str(r['task_id']) for r in rows}))
    n_min = min((sum(1 for r in rows if str(r["task_id"]) == t) for t in {str(r['task_id']) for r in rows}),
                default=0)
    for k, v in pass_at_k_rows(rows, [k for k in ks if k <= n_min] or []).items():
        out[f"pass@{k}"] = v
    return out
