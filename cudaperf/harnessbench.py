"""The harness benchmarks' committed results as tables and one figure (notebook 00).

Reads what `benchmarks/bench_harness.py` and `benchmarks/bench_runner_start.py` wrote on a GPU
machine (``data/bench/harness_<gpu>*.json``, ``data/bench/runner_start_<gpu>.json``); computes
nothing new and guesses nothing: a missing file gives an empty table, and the figure says so.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

# Per-candidate seconds worth showing, in the order a candidate meets them.
STAGES = ("compile", "slot_wait", "runner_start", "clean_baseline", "check", "time", "recheck",
          "lock_wait_shared", "lock_wait_exclusive")


def throughput_table(bench_dir: str | Path = "data/bench") -> pd.DataFrame:
    """One row per cold-cache throughput run of every ``harness_*.json``: file, GPU, runner
    threads, runner mode, candidates/min, candidates, the CUDA contexts its runners created and the
    candidates judged in a runner kept from another task (NaN where a run did not record them), the
    machine's CPU busy share, mean seconds per candidate by stage, and the timing stability of its
    correct candidates (`cv_under_load`: median CV, share with a CV above 10 %, classic and robust)."""
    rows = []
    for f in sorted(Path(bench_dir).glob("harness_*.json")):
        d = json.loads(f.read_text())
        for key, r in (d.get("throughput_by_workers") or {}).items():
            n = max(1, int(r.get("candidates") or 0))
            row = {"file": f.name, "gpu": d.get("gpu"), "run": key, "workers_per_gpu": r.get("workers_per_gpu"),
                   "runners": "kept" if r.get("keep_runners") else "shared" if r.get("share_runner") else "own",
                   "per_minute": r.get("per_minute"), "candidates": r.get("candidates"),
                   # fewer contexts per candidate is what shared and kept runners are for
                   "contexts": ((r.get("runner_requests") or {}).get("init") or {}).get("count", float("nan")),
                   "in_kept_runners": r.get("in_kept_runners", float("nan")),
                   "cpu_busy": r.get("cpu_busy_share", float("nan"))}
            stages = r.get("stage_seconds_sum") or {}
            row.update({s: stages.get(s, 0.0) / n for s in STAGES})
            # timing stability of its correct candidates at full load (cv_under_load)
            c = cv_under_load(r.get("records") or [])
            row.update({"median_cv": c["median_cv"], "cv_above_10pct": c["share_cv_above_10pct"],
                        "cv_robust_above_10pct": c["share_cv_robust_above_10pct"]})
            rows.append(row)
    return pd.DataFrame(rows)


def cv_under_load(records: list[dict]) -> dict:
    """Timing stability of the correct candidates of one throughput run (the harness at full load):
    median classic CV (std / mean) and robust CV (harness.robust_cv), and the share of candidates
    above 10 % by each. Runs from before session 31 recorded no robust CV: NaN there."""
    import math
    import statistics

    ok = [r for r in records if r.get("status") == "correct" and r.get("cv") is not None]
    med = lambda xs: statistics.median(xs) if xs else math.nan  # noqa: E731
    classic = [float(r["cv"]) for r in ok]
    robust = [float(r["cv_robust"]) for r in ok if r.get("cv_robust") is not None]
    share = lambda xs: sum(x > 0.1 for x in xs) / len(xs) if xs else math.nan  # noqa: E731
    return {"correct": len(ok), "median_cv": med(classic), "median_cv_robust": med(robust),
            "share_cv_above_10pct": share(classic), "share_cv_robust_above_10pct": share(robust)}


def context_rate(bench_dir: str | Path = "data/bench") -> pd.DataFrame:
    """Rows of every ``runner_start_*.json``: concurrency, flush buffer, contexts/s, median init."""
    frames = []
    for f in sorted(Path(bench_dir).glob("runner_start_*.json")):
        d = json.loads(f.read_text())
        df = pd.DataFrame(d.get("rows") or [])
        if not df.empty:
            df.insert(0, "gpu", d.get("gpu"))
            frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def repeatability(bench_dir: str | Path = "data/bench") -> tuple[pd.DataFrame, dict]:
    """The two timing runs of ``harness_<gpu>.json`` (the newest main file) side by side, and
    the summary (median CV, Spearman)."""
    for f in sorted(Path(bench_dir).glob("harness_*.json")):
        d = json.loads(f.read_text())
        rep = d.get("repeatability")
        if rep and rep.get("pairs"):
            summary = {k: rep.get(k) for k in ("variants", "timed_both", "median_cv", "spearman")}
            return pd.DataFrame(rep["pairs"]), {"file": f.name, "gpu": d.get("gpu"), **summary}
    return pd.DataFrame(), {}


def _run_label(r) -> str:
    """One line per bar: GPU, session (from the file name) and runner threads, e.g. 'H200 s14 · 16'."""
    import re

    gpu = "H100" if "h100" in r.file else "H200" if "h200" in r.file else (r.gpu or "?")
    m = re.search(r"session(\d+)", r.file)
    tag = f" s{m.group(1)}" if m else ""
    tag += " (before)" if "before" in r.file else ""
    return f"{gpu}{tag} · {r.workers_per_gpu} threads"


def plot(bench_dir: str | Path = "data/bench", out: str | Path | None = None):
    """Three panels: candidates/min by run, contexts/s by concurrency, run 1 vs run 2 times."""
    import matplotlib.pyplot as plt

    thr, ctx = throughput_table(bench_dir), context_rate(bench_dir)
    pairs, summ = repeatability(bench_dir)
    fig, ax = plt.subplots(1, 3, figsize=(15, 3.8))
    if thr.empty:
        ax[0].text(0.5, 0.5, "no harness_*.json: not measured", ha="center")
    else:
        ax[0].barh([_run_label(r) for r in thr.itertuples()], thr["per_minute"],
                   color=[{"shared": "C1", "kept": "C2"}.get(m, "C0") for m in thr["runners"]])
        ax[0].axvline(300, color="k", ls="--", lw=1)
        ax[0].tick_params(axis="y", labelsize=8)
        ax[0].set_xlabel("candidates / min (cold cache); dashed: issue 3's target")
        ax[0].set_title("blue: a runner each, orange: shared, green: kept", fontsize=9)
    if ctx.empty:
        ax[1].text(0.5, 0.5, "no runner_start_*.json: not measured", ha="center")
    else:
        for flush, g in ctx.groupby("flush_bytes"):
            m = g.groupby("concurrency")["contexts_per_s"].mean()
            ax[1].plot(m.index, m.values, "o-", label=f"L2-flush buffer {'on' if flush else 'off'}")
        ax[1].set_xscale("log", base=2)
        ax[1].set_ylim(bottom=0)
        ax[1].set_xlabel("runners starting at once")
        ax[1].set_ylabel("CUDA contexts created / s")
        ax[1].legend()
    if pairs.empty:
        ax[2].text(0.5, 0.5, "no repeatability run", ha="center")
    else:
        ax[2].loglog(pairs["run1_ms"], pairs["run2_ms"], ".", alpha=0.6)
        lo, hi = pairs[["run1_ms", "run2_ms"]].min().min(), pairs[["run1_ms", "run2_ms"]].max().max()
        ax[2].plot([lo, hi], [lo, hi], "k--", lw=1)
        ax[2].set_xlabel("run 1 median (ms)")
        ax[2].set_ylabel("run 2 median (ms)")
        ax[2].set_title(f"{summ['timed_both']} variants: median CV {summ['median_cv']:.2%}, "
                        f"Spearman {summ['spearman']:.4f}", fontsize=9)
    gpus = sorted({g for g in (list(thr.get("gpu", [])) + list(ctx.get("gpu", []))) if g}) or ["no GPU data"]
    fig.suptitle(f"Harness throughput and timing repeatability ({', '.join(gpus)})")
    fig.tight_layout()
    if out is not None:
        fig.savefig(out, dpi=120)
    return fig
