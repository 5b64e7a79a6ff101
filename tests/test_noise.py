"""cudaperf.noise: comparing two timing runs of the same variants."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cudaperf import noise


def _run(ms, cv):
    return pd.DataFrame({"task_id": [f"t{i // 2}" for i in range(len(ms))],
                         "variant": ["naive" if i % 2 == 0 else "opt" for i in range(len(ms))],
                         "runtime_ms": ms, "cv": cv})


def test_identical_runs_agree_and_a_uniform_slowdown_keeps_the_order():
    ms = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    a = _run(ms, [0.01] * 6)
    same = noise.compare(a, _run(ms, [0.01] * 6))
    assert same["median_rel_shift"] == 0 and same["spearman"] == pytest.approx(1.0)
    slow = noise.compare(a, _run(ms * 1.2, [0.05] * 6))
    assert slow["median_ratio_b_over_a"] == pytest.approx(1.2)
    assert slow["median_rel_shift"] == pytest.approx(0.2 / 1.1)
    assert slow["spearman"] == pytest.approx(1.0)  # slower, same ranking
    assert (slow["median_cv_a"], slow["median_cv_b"]) == (pytest.approx(0.01), pytest.approx(0.05))


def test_only_variants_timed_in_both_runs_count():
    a = _run([1.0, 2.0, 3.0, 4.0], [0.01, 0.01, 0.01, 0.01])
    b = _run([1.0, np.nan, 3.3, 4.0], [0.01, np.nan, 0.02, 0.01])
    c = noise.compare(a, b)
    assert (c["variants"], c["timed_both"]) == (4, 3)
    assert c["median_ratio_b_over_a"] == pytest.approx(1.0)
    # the rows are matched by (task_id, variant), not by position
    assert noise.compare(a, b.iloc[::-1].reset_index(drop=True)) == c


def test_nothing_timed_gives_no_numbers():
    a = _run([np.nan, np.nan], [np.nan, np.nan])
    c = noise.compare(a, a)
    assert c["timed_both"] == 0 and c["spearman"] is None and c["median_rel_shift"] is None


def test_robust_cv_is_compared_where_the_runs_have_it():
    ms = np.array([1.0, 2.0, 3.0, 4.0])
    a = _run(ms, [2.0, 0.01, 0.02, 1.5]).assign(cv_robust=[0.01, 0.01, 0.02, 0.03])
    c = noise.compare(a, a)
    assert c["median_cv_a"] == pytest.approx(0.76) and c["median_cv_robust_a"] == pytest.approx(0.015)
    assert noise.compare(_run(ms, [0.01] * 4), _run(ms, [0.01] * 4))["median_cv_robust_a"] is None
