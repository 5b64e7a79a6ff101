"""The committed torch2cuda GPU verification (``data/measurements/torch2cuda_<gpu>.jsonl``) as tables.

`python -m cudaperf.torchtasks.verify` writes one JSON row per task: every CUDA variant's
verdict and median time, PyTorch eager's and torch.compile's times on the same GPU, or an
``error`` when the task could not be measured. This module reads those rows for notebooks and
reports; it never measures anything itself.

Guarantees:
- `load_rows(paths)` returns the measured rows and the number of error rows; a later file's row
  for a task replaces an earlier one (files in the order given), malformed lines are counted as
  errors, never silently dropped.
- `variant_table(rows)` has one row per (task, variant) with its verdict and time and the
  speedup over eager recomputed from the times (``eager_ms / ms``), so it does not depend on a
  stored ratio.
- `family_summary(rows)` and `overall(rows)` aggregate only correct, timed variants; the
  geometric means are over tasks (a task's best correct variant), None when no task qualifies.
- `gpu_summary(rows)` is `overall` per GPU model (the row's ``gpu``): the dataset may be measured
  on two GPU models (H200 in sessions 7-14, H100 from session 15), each row with its own GPU's
  eager and torch.compile baselines, so a row's speedups are self-contained but the GPUs' figures
  are shown apart.
- `repeatability(first, second)` compares two measurements of the same tasks (two runs of the
  verifier): per timed quantity (CUDA variants, eager, torch.compile) the number of pairs, the
  median relative deviation |log(t2/t1)| (as a fraction) and the shares within 5 % and 10 %.
  Only tasks timed in both runs count; a pair with a missing or non-positive time is skipped.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd


def load_rows(paths: Path | str | Sequence[Path | str]) -> tuple[list[dict[str, Any]], int]:
    """(measured rows, error rows) from one or more JSONL files; a later row for a task wins."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    by_task: dict[str, dict[str, Any]] = {}
    errors: dict[str, int] = {}
    bad_lines = 0
    for p in paths:
        for line in Path(p).read_text().splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                tid = row["task_id"]
            except (ValueError, KeyError, TypeError):
                bad_lines += 1
                continue
            if "error" in row:
                errors[tid] = 1
                by_task.pop(tid, None)
            else:
                by_task[tid] = row
                errors.pop(tid, None)
    return list(by_task.values()), sum(errors.values()) + bad_lines


def _pos(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 and math.isfinite(x) else None


def variant_table(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """One row per (task, variant): family, correct, ms, cv, eager_ms, compile_ms, speedup_vs_eager."""
    out = []
    for r in rows:
        eager, comp = _pos(r.get("eager_ms")), _pos(r.get("compile_ms"))
        for name, v in (r.get("variants") or {}).items():
            ms = _pos(v.get("ms"))
            out.append({"task_id": r["task_id"], "family": r.get("family", r["task_id"].split("/")[1]),
                        "variant": name, "correct": bool(v.get("correct")), "ms": ms, "cv": v.get("cv"),
                        "eager_ms": eager, "compile_ms": comp,
                        "speedup_vs_eager": eager / ms if eager and ms else None})
    cols = ["task_id", "family", "variant", "correct", "ms", "cv", "eager_ms", "compile_ms", "speedup_vs_eager"]
    return pd.DataFrame(out, columns=cols)


def _geomean(xs: Iterable[float]) -> float | None:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def _task_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Per task: family, variants, correct variants, best correct variant vs eager, naive vs
    eager, torch.compile vs eager (eager_ms / compile_ms)."""
    vt = variant_table(rows)
    recs = []
    for tid, g in vt.groupby("task_id", sort=True):
        ok = g[g["correct"] & g["speedup_vs_eager"].notna()]
        naive = ok[ok["variant"] == "naive"]["speedup_vs_eager"]
        eager, comp = g["eager_ms"].iloc[0], g["compile_ms"].iloc[0]
        recs.append({"task_id": tid, "family": g["family"].iloc[0], "variants": len(g),
                     "correct": int(g["correct"].sum()),
                     "best_vs_eager": ok["speedup_vs_eager"].max() if len(ok) else None,
                     "naive_vs_eager": naive.iloc[0] if len(naive) else None,
                     "compile_vs_eager": eager / comp if eager and comp and not pd.isna(comp) else None})
    return pd.DataFrame(recs, columns=["task_id", "family", "variants", "correct", "best_vs_eager",
                                       "naive_vs_eager", "compile_vs_eager"])


def family_summary(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Per family: tasks, variants, correct variants, and geometric means over its tasks of the
    best correct variant's, the naive variant's and torch.compile's speedup over eager."""
    tf = _task_frame(rows)
    recs = []
    for fam, g in tf.groupby("family", sort=True):
        recs.append({"family": fam, "tasks": len(g), "variants": int(g["variants"].sum()),
                     "correct": int(g["correct"].sum()),
                     "best_vs_eager_geomean": _geomean(g["best_vs_eager"].dropna()),
                     "naive_vs_eager_geomean": _geomean(g["naive_vs_eager"].dropna()),
                     "compile_vs_eager_geomean": _geomean(g["compile_vs_eager"].dropna())})
    return pd.DataFrame(recs, columns=["family", "tasks", "variants", "correct", "best_vs_eager_geomean",
                                       "naive_vs_eager_geomean", "compile_vs_eager_geomean"])


def overall(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Totals over every measured task (the figures README quotes)."""
    tf = _task_frame(rows)
    return {"tasks": len(tf), "families": int(tf["family"].nunique()) if len(tf) else 0,
            "variants": int(tf["variants"].sum()), "correct": int(tf["correct"].sum()),
            "tasks_all_correct": int((tf["correct"] == tf["variants"]).sum()),
            "best_vs_eager_geomean": _geomean(tf["best_vs_eager"].dropna()),
            "best_beats_eager": int((tf["best_vs_eager"] > 1).sum()),
            "naive_vs_eager_geomean": _geomean(tf["naive_vs_eager"].dropna()),
            "compile_vs_eager_geomean": _geomean(tf["compile_vs_eager"].dropna())}


def gpu_summary(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per GPU model (``gpu`` of the rows, "unknown" where absent) with `overall`'s figures."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(str(r.get("gpu") or "unknown"), []).append(r)
    recs = [{"gpu": g, **overall(rs)} for g, rs in sorted(by.items())]
    cols = ["gpu", "tasks", "families", "variants", "correct", "tasks_all_correct", "best_vs_eager_geomean",
            "best_beats_eager", "naive_vs_eager_geomean", "compile_vs_eager_geomean"]
    return pd.DataFrame(recs, columns=cols)


def repeatability(first: Sequence[dict[str, Any]], second: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Run-to-run agreement of two measurements of the same tasks, one row per timed quantity:
    quantity, pairs, median_rel_dev (exp(median |log t2/t1|) - 1), within_5pct, within_10pct,
    min_ratio, max_ratio (t2/t1)."""
    by_task = {r["task_id"]: r for r in second}
    ratios: dict[str, list[float]] = {"cuda variant": [], "eager": [], "torch.compile": []}

    def add(key: str, a: Any, b: Any) -> None:
        a, b = _pos(a), _pos(b)
        if a and b:
            ratios[key].append(b / a)

    for r in first:
        other = by_task.get(r["task_id"])
        if other is None:
            continue
        for name, v in (r.get("variants") or {}).items():
            add("cuda variant", v.get("ms"), ((other.get("variants") or {}).get(name) or {}).get("ms"))
        add("eager", r.get("eager_ms"), other.get("eager_ms"))
        add("torch.compile", r.get("compile_ms"), other.get("compile_ms"))
    recs = []
    for key, rs in ratios.items():
        dev = sorted(abs(math.log(x)) for x in rs)
        med = (dev[(len(dev) - 1) // 2] + dev[len(dev) // 2]) / 2 if dev else None
        recs.append({"quantity": key, "pairs": len(rs),
                     "median_rel_dev": math.exp(med) - 1 if dev else None,
                     "within_5pct": sum(d < math.log(1.05) for d in dev) / len(dev) if dev else None,
                     "within_10pct": sum(d < math.log(1.10) for d in dev) / len(dev) if dev else None,
                     "min_ratio": min(rs) if rs else None, "max_ratio": max(rs) if rs else None})
    return pd.DataFrame(recs, columns=["quantity", "pairs", "median_rel_dev", "within_5pct", "within_10pct",
                                       "min_ratio", "max_ratio"])


__all__ = ["family_summary", "load_rows", "overall", "repeatability", "variant_table"]
