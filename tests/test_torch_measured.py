"""cudaperf.torchtasks.measured: the committed torch2cuda verification rows as tables."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cudaperf.torchtasks import measured as M

ROOT = Path(__file__).resolve().parents[1]


def _row(tid, variants, eager=1.0, comp=0.5):
    return {"task_id": tid, "family": tid.split("/")[1], "eager_ms": eager, "compile_ms": comp,
            "variants": {n: {"correct": ok, "ms": ms, "cv": 0.01} for n, (ok, ms) in variants.items()}}


def _write(p, rows, extra=()):
    p.write_text("".join(json.dumps(r) + "\n" for r in rows) + "".join(extra))
    return p


def test_later_rows_win_and_errors_and_bad_lines_are_counted(tmp_path):
    a = _write(tmp_path / "a.jsonl", [_row("torch2cuda/x/t1", {"naive": (True, 2.0)}),
                                      {"task_id": "torch2cuda/x/t2", "error": "RuntimeError: boom"}],
               extra=["not json\n"])
    b = _write(tmp_path / "b.jsonl", [_row("torch2cuda/x/t1", {"naive": (True, 4.0)}),
                                      _row("torch2cuda/x/t2", {"naive": (True, 1.0)})])
    rows, errors = M.load_rows([a])
    assert [r["task_id"] for r in rows] == ["torch2cuda/x/t1"] and errors == 2  # the error row + the bad line
    rows, errors = M.load_rows([a, b])
    assert errors == 1  # t2 measured later; the bad line still counts
    assert {r["task_id"]: r["variants"]["naive"]["ms"] for r in rows} == {"torch2cuda/x/t1": 4.0, "torch2cuda/x/t2": 1.0}


def test_speedups_come_from_times_and_only_correct_variants_count():
    rows = [_row("torch2cuda/a/t1", {"naive": (True, 4.0), "fast": (True, 0.5)}, eager=1.0, comp=0.5),
            _row("torch2cuda/a/t2", {"naive": (True, 2.0), "fast": (False, 0.1)}, eager=1.0, comp=2.0),
            _row("torch2cuda/b/t3", {"naive": (False, 1.0)}, eager=1.0, comp=None)]
    vt = M.variant_table(rows)
    assert vt.set_index(["task_id", "variant"]).loc[("torch2cuda/a/t1", "fast"), "speedup_vs_eager"] == pytest.approx(2.0)
    fam = M.family_summary(rows).set_index("family")
    # a: best correct per task is 2.0 (t1 fast) and 0.5 (t2 naive; its wrong 10x variant ignored)
    assert fam.loc["a", "best_vs_eager_geomean"] == pytest.approx(1.0)
    assert fam.loc["a", "naive_vs_eager_geomean"] == pytest.approx(math.sqrt(0.25 * 0.5))
    assert fam.loc["a", "compile_vs_eager_geomean"] == pytest.approx(1.0)  # sqrt(2 * 0.5)
    assert fam.loc["b", "best_vs_eager_geomean"] is None or math.isnan(fam.loc["b", "best_vs_eager_geomean"])
    o = M.overall(rows)
    assert (o["tasks"], o["variants"], o["correct"], o["tasks_all_correct"], o["best_beats_eager"]) == (3, 5, 3, 1, 1)


def test_gpu_summary_keeps_each_gpu_apart():
    rows = [{**_row("torch2cuda/a/t1", {"naive": (True, 0.5)}, eager=1.0), "gpu": "H200"},
            {**_row("torch2cuda/a/t2", {"naive": (True, 4.0)}, eager=1.0), "gpu": "H100"},
            {**_row("torch2cuda/a/t3", {"naive": (True, 1.0)}, eager=1.0), "gpu": "H100"},
            _row("torch2cuda/a/t4", {"naive": (False, 1.0)})]
    g = M.gpu_summary(rows).set_index("gpu")
    assert list(g.index) == ["H100", "H200", "unknown"]
    assert g.loc["H100", "tasks"] == 2 and g.loc["H100", "best_vs_eager_geomean"] == pytest.approx(math.sqrt(0.25))
    assert g.loc["H200", "best_vs_eager_geomean"] == pytest.approx(2.0) and g.loc["H200", "best_beats_eager"] == 1
    assert g.loc["unknown", "correct"] == 0
    assert g["tasks"].sum() == M.overall(rows)["tasks"]


def test_committed_rows_are_all_measured():
    files = sorted((ROOT / "data" / "measurements").glob("torch2cuda_*.jsonl"))
    if not files:
        pytest.skip("no torch2cuda measurements committed")
    rows, errors = M.load_rows(files)
    o = M.overall(rows)
    assert o["tasks"] == len(rows) and o["variants"] >= 2 * o["tasks"]  # naive + optimised per task
    assert o["best_vs_eager_geomean"] is not None and o["compile_vs_eager_geomean"] is not None


def test_repeatability_pairs_only_tasks_timed_in_both_runs():
    first = [_row("torch2cuda/a/t1", {"naive": (True, 1.0), "fast": (True, 2.0)}, eager=1.0, comp=1.0),
             _row("torch2cuda/a/t2", {"naive": (True, 1.0)}, eager=2.0, comp=None),
             _row("torch2cuda/a/only_first", {"naive": (True, 9.0)})]
    second = [_row("torch2cuda/a/t1", {"naive": (True, 1.04), "fast": (True, 2.4)}, eager=1.0, comp=1.5),
              _row("torch2cuda/a/t2", {"naive": (True, 0.92)}, eager=2.2, comp=1.0)]
    rep = M.repeatability(first, second).set_index("quantity")
    cuda = rep.loc["cuda variant"]
    assert cuda["pairs"] == 3  # only_first has no partner
    # ratios 1.04, 1.2, 0.92 -> |log| sorted 0.039, 0.083, 0.182: median 0.083 -> 8.7 %
    assert cuda["median_rel_dev"] == pytest.approx(math.exp(abs(math.log(0.92))) - 1)
    assert cuda["within_5pct"] == pytest.approx(1 / 3) and cuda["within_10pct"] == pytest.approx(2 / 3)
    assert (cuda["min_ratio"], cuda["max_ratio"]) == (pytest.approx(0.92), pytest.approx(1.2))
    assert rep.loc["eager", "pairs"] == 2 and rep.loc["eager", "within_10pct"] == pytest.approx(0.5)
    assert rep.loc["torch.compile", "pairs"] == 1  # t2's first run has no compile time
    empty = M.repeatability(first, []).set_index("quantity")
    assert (empty["pairs"] == 0).all() and empty["median_rel_dev"].isna().all()
