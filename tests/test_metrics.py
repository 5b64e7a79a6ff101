"""KernelBench metrics on hand-computed cases."""
import math

import pandas as pd
import pytest

from cudaperf.metrics import fast_p, geomean_speedup, pass_at_k, pass_at_k_rows, summary

ROWS = [
    {"task_id": "a", "correct": True, "speedup": 2.0},
    {"task_id": "b", "correct": True, "speedup": 0.5},
    {"task_id": "c", "correct": False, "speedup": 10.0},  # fast but wrong: never counts
    {"task_id": "d", "correct": True, "speedup": 1.0},
]


def test_fast_p_hand_computed():
    got = fast_p(ROWS, [0.0, 0.5, 1.0, 1.5, 2.0])
    # correct: a, b, d -> fast_0 = 3/4; > 0.5 strictly: a, d; > 1.0: a; > 2.0: none
    assert got == {0.0: 0.75, 0.5: 0.5, 1.0: 0.25, 1.5: 0.25, 2.0: 0.0}


def test_fast_p_denominator_counts_missing_tasks():
    assert fast_p(ROWS, [1.0], n_tasks=10)[1.0] == pytest.approx(0.1)
    with pytest.raises(ValueError):
        fast_p(ROWS, [1.0], n_tasks=3)


def test_fast_p_best_vs_first_sample():
    rows = [{"task_id": "a", "correct": False, "speedup": None},
            {"task_id": "a", "correct": True, "speedup": 3.0},
            {"task_id": "b", "correct": True, "speedup": 1.2},
            {"task_id": "b", "correct": True, "speedup": 0.8}]
    assert fast_p(rows, [1.0], per_task="best")[1.0] == 1.0
    assert fast_p(rows, [1.0], per_task="first")[1.0] == 0.5
    assert fast_p(rows, [0.0], per_task="first")[0.0] == 0.5


def test_geomean_only_correct_rows():
    assert geomean_speedup(ROWS) == pytest.approx((2.0 * 0.5 * 1.0) ** (1 / 3))
    assert math.isnan(geomean_speedup([{"task_id": "x", "correct": False, "speedup": 4.0}]))
    # non-finite or non-positive speedups are not averaged in
    assert geomean_speedup([{"task_id": "x", "correct": True, "speedup": float("inf")},
                            {"task_id": "y", "correct": True, "speedup": 4.0}]) == pytest.approx(4.0)


def test_pass_at_k_matches_binomial_formula():
    assert pass_at_k(10, 0, 1) == 0.0
    assert pass_at_k(10, 10, 5) == 1.0
    assert pass_at_k(5, 1, 1) == pytest.approx(0.2)
    # 1 - C(n-c, k) / C(n, k)
    for n, c, k in [(10, 3, 2), (20, 5, 4), (7, 2, 7), (100, 1, 10)]:
        want = 1 - math.comb(n - c, k) / math.comb(n, k)
        assert pass_at_k(n, c, k) == pytest.approx(want, abs=1e-12)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_pass_at_k_rows_and_dataframe():
    rows = [{"task_id": "a", "correct": c} for c in (True, False, False, False)] + \
           [{"task_id": "b", "correct": c} for c in (True, True, False, False)]
    got = pass_at_k_rows(pd.DataFrame(rows), [1, 2])
    assert got[1] == pytest.approx((0.25 + 0.5) / 2)
    assert got[2] == pytest.approx(((1 - 3 / 6) + (1 - 1 / 6)) / 2)


def test_summary_is_flat_and_uses_all_metrics():
    s = summary(pd.DataFrame(ROWS), ps=[0.0, 1.0], ks=[1])
    assert s["fast_0"] == 0.75 and s["fast_1"] == 0.25
    assert s["pass@1"] == pytest.approx(0.75)
    assert s["n_tasks"] == 4.0


def test_hack_flagged_rows_never_count():
    from cudaperf.metrics import fast_p, geomean_speedup, pass_at_k_rows

    rows = [{"task_id": "a", "correct": True, "speedup": 50.0, "flags": ["hack:faster_than_roofline"]},
            {"task_id": "b", "correct": True, "speedup": 2.0, "flags": ["suspicious:printf"]}]
    assert fast_p(rows, [1.0])[1.0] == 0.5
    assert geomean_speedup(rows) == 2.0
    assert pass_at_k_rows(rows, [1])[1] == 0.5
