"""Timing noise: the same variants timed twice, and how far the two runs agree.

Used by `benchmarks/bench_harness.py` (repeatability: two runs on an idle GPU) and
`benchmarks/timing_noise.py` (an idle run against one taken while other work, e.g. GRPO training,
runs on the machine). Guarantees: `measure` returns one row per item in item order, with NaN
runtimes for items that were not timed (never a guessed value); `compare` summarises only the
items timed in both runs and says how many that were.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from cudaperf.tasks import Task


def measure(items: Sequence[tuple[Task, str, str]], harness_cfg: Any, workers_per_gpu: int = 4,
            progress: bool = True) -> pd.DataFrame:
    """Time (task, variant name, source) items through a fresh Harness with its result store off
    (every item really runs). Columns: task_id, variant, status, runtime_ms, cv, cv_robust
    (harness.robust_cv), gpu."""
    from cudaperf.harness import Harness

    h = Harness(harness_cfg, use_store=False, workers_per_gpu=workers_per_gpu)
    try:
        res = h.evaluate_many([(t, s) for t, _, s in items], progress=progress, dedupe=False)
    finally:
        h.close()
    return pd.DataFrame([{"task_id": t.task_id, "variant": v, "status": r.status,
                          "runtime_ms": float(r.runtime_ms) if r.runtime_ms else np.nan,
                          "cv": float(r.cv) if r.cv is not None else np.nan,
                          "cv_robust": float(r.cv_robust) if r.cv_robust is not None else np.nan, "gpu": r.gpu}
                         for (t, v, _), r in zip(items, res)])


def compare(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, Any]:
    """How run `b` differs from run `a` (rows matched by task_id and variant): the median
    coefficient of variation of each run's repetitions (classic, and robust where the runs have a
    ``cv_robust`` column), the median and p90 relative shift of a
    variant's median runtime |b - a| / mean(a, b), the median ratio b / a (> 1: b slower) and the
    Spearman rank correlation of the runtimes. Only variants timed in both runs count."""
    from scipy.stats import spearmanr

    m = a.merge(b, on=["task_id", "variant"], suffixes=("_a", "_b"))
    ok = np.isfinite(m["runtime_ms_a"]) & np.isfinite(m["runtime_ms_b"])
    x, y = m.loc[ok, "runtime_ms_a"].to_numpy(float), m.loc[ok, "runtime_ms_b"].to_numpy(float)
    shift = np.abs(x - y) / ((x + y) / 2) if len(x) else np.array([])

    def med(s: pd.Series) -> float | None:
        s = s[np.isfinite(s)]
        return float(np.median(s)) if len(s) else None

    return {"variants": int(len(m)), "timed_both": int(ok.sum()),
            "median_cv_a": med(m["cv_a"]), "median_cv_b": med(m["cv_b"]),
            "p90_cv_a": float(np.nanpercentile(m["cv_a"], 90)) if m["cv_a"].notna().any() else None,
            "p90_cv_b": float(np.nanpercentile(m["cv_b"], 90)) if m["cv_b"].notna().any() else None,
            "median_cv_robust_a": med(m["cv_robust_a"]) if "cv_robust_a" in m else None,
            "median_cv_robust_b": med(m["cv_robust_b"]) if "cv_robust_b" in m else None,
            "median_rel_shift": float(np.median(shift)) if len(shift) else None,
            "p90_rel_shift": float(np.percentile(shift, 90)) if len(shift) else None,
            "median_ratio_b_over_a": float(np.median(y / x)) if len(x) else None,
            "spearman": float(spearmanr(x, y).statistic) if len(x) > 2 else None}
