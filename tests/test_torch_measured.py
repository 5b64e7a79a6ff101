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


def test_committed_rows_are_all_measured():
    files = sorted((ROOT / "data" / "measurements").glob("torch2cuda_*.jsonl"))
    if not files:
        pytest.skip("no torch2cuda measurements committed")
    rows, errors = M.load_rows(files)
    o = M.overall(rows)
    assert o["tasks"] == len(rows) and o["variants"] >= 2 * o["tasks"]  # naive + optimised per task
    assert o["best_vs_eager_geomean"] is not None and o["compile_vs_eager_geomean"] is not None
