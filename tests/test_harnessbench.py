"""cudaperf.harnessbench: the committed harness benchmarks as tables and a figure."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cudaperf import harnessbench


def test_tables_from_bench_files_and_nothing_from_none(tmp_path):
    assert harnessbench.throughput_table(tmp_path).empty and harnessbench.context_rate(tmp_path).empty
    assert harnessbench.repeatability(tmp_path)[0].empty
    harnessbench.plot(tmp_path, out=tmp_path / "empty.png")  # says "not measured" instead of failing
    run = {"candidates": 4, "per_minute": 120.0, "workers_per_gpu": 16, "share_runner": True,
           "stage_seconds_sum": {"check": 8.0, "runner_start": 2.0}}
    (tmp_path / "harness_gpu.json").write_text(json.dumps({
        "gpu": "G", "throughput_by_workers": {"16@shared": run},
        "repeatability": {"variants": 2, "timed_both": 2, "median_cv": 0.01, "spearman": 1.0,
                          "pairs": [{"task_id": "t", "variant": "a", "run1_ms": 1.0, "run2_ms": 1.1},
                                    {"task_id": "t", "variant": "b", "run1_ms": 2.0, "run2_ms": 2.1}]}}))
    (tmp_path / "runner_start_gpu.json").write_text(json.dumps({
        "gpu": "G", "rows": [{"concurrency": c, "flush_bytes": 0, "contexts_per_s": 4.5, "round": 0}
                             for c in (1, 4)]}))
    t = harnessbench.throughput_table(tmp_path)
    assert t.loc[0, "runners"] == "shared" and t.loc[0, "check"] == 2.0 and t.loc[0, "runner_start"] == 0.5
    assert t.loc[0, "time"] == 0.0  # a stage the run did not record counts as none
    assert t["contexts"].isna().all() and t["in_kept_runners"].isna().all()  # not recorded: NaN, not 0
    run.update(runner_requests={"init": {"count": 3, "seconds": 2.0}}, in_kept_runners=1, cpu_busy_share=0.5)
    (tmp_path / "harness_gpu2.json").write_text(json.dumps({"gpu": "G", "throughput_by_workers": {"16@kept": run}}))
    t2 = harnessbench.throughput_table(tmp_path).set_index("file")
    assert t2.loc["harness_gpu2.json", ["contexts", "in_kept_runners", "cpu_busy"]].tolist() == [3, 1, 0.5]
    assert list(harnessbench.context_rate(tmp_path)["concurrency"]) == [1, 4]
    pairs, summary = harnessbench.repeatability(tmp_path)
    assert len(pairs) == 2 and summary["spearman"] == 1.0 and summary["gpu"] == "G"
    harnessbench.plot(tmp_path, out=tmp_path / "h.png")
    assert (tmp_path / "h.png").stat().st_size > 0


def test_cv_under_load_sets_the_classic_cv_against_the_robust_one():
    from cudaperf.harnessbench import cv_under_load

    recs = [{"status": "correct", "cv": 2.5, "cv_robust": 0.01}, {"status": "correct", "cv": 0.02, "cv_robust": 0.02},
            {"status": "correct", "cv": 0.3, "cv_robust": 0.2}, {"status": "wrong", "cv": None}]
    c = cv_under_load(recs)
    assert c["correct"] == 3 and c["median_cv"] == 0.3 and c["median_cv_robust"] == 0.02
    assert c["share_cv_above_10pct"] == pytest.approx(2 / 3) and c["share_cv_robust_above_10pct"] == pytest.approx(1 / 3)
    # a committed run from before the robust CV: the classic figures, NaN for the robust ones
    old = json.loads(Path("data/bench/harness_kept16_nvidia-h100-80gb-hbm3_session25.json").read_text())
    c = cv_under_load(old["throughput"]["records"])
    assert c["correct"] == 240 and 0.005 < c["median_cv"] < 0.02 and 0.2 < c["share_cv_above_10pct"] < 0.3
    assert math.isnan(c["median_cv_robust"])
