"""cudaperf.signalsplit: where a step's reward spread lies."""
from __future__ import annotations

import math

import pytest

from cudaperf.result import EvalResult
from cudaperf.signalsplit import attempt_class, group_parts, signal_split


def test_parts_add_up_to_the_groups_sum_of_squares():
    rewards = [3.0, 1.0, -1.0, -1.9, -2.0, 0.5]
    correct = [True, True, False, False, False, True]
    between, yes, no = group_parts(rewards, correct)
    m = sum(rewards) / len(rewards)
    assert between + yes + no == pytest.approx(sum((r - m) ** 2 for r in rewards))
    assert yes > 0 and no > 0 and between > 0


def test_a_group_split_only_by_correctness_is_all_correctness_signal():
    # two correct attempts paid the same, two wrong ones charged the same: only correctness varies
    out = signal_split([("t", 1.0, "correct"), ("t", 1.0, "correct"), ("t", -2.0, "wrong"),
                        ("t", -2.0, "not_compiled")])
    assert (out.groups, out.mixed, out.zero_spread) == (1, 1, 0)
    assert out.correct == pytest.approx(1.0) and out.speed == 0.0 and out.failure == 0.0
    assert out.inverted == 0


def test_a_mixed_group_paying_correct_attempts_less_is_inverted():
    # a correct kernel with a large timing-variation penalty earns less than a half-right one
    out = signal_split([("t", -2.6, "correct"), ("t", -1.0, "wrong"), ("t", -1.0, "wrong")])
    assert out.mixed == 1 and out.inverted == 1 and out.correct > 0.9


def test_all_correct_groups_teach_speed_and_equal_groups_nothing():
    out = signal_split([("a", 0.5, "correct"), ("a", 2.0, "correct"), ("a", 1.0, "correct"),
                        ("b", -3.0, "not_compiled"), ("b", -3.0, "not_compiled")])
    assert (out.groups, out.all_correct, out.none_correct, out.zero_spread, out.mixed) == (2, 1, 1, 1, 0)
    assert out.speed == pytest.approx(1.0) and out.correct == 0.0 and out.failure == 0.0


def test_group_scaling_weighs_groups_alike_and_batch_scaling_pools_them():
    att = [("a", 0.0, "correct"), ("a", 10.0, "correct"),  # large spread, all speed
           ("b", 1.0, "correct"), ("b", 0.0, "wrong")]  # small spread, all correctness
    g = signal_split(att, "group")
    assert g.speed == pytest.approx(0.5) and g.correct == pytest.approx(0.5)
    b = signal_split(att, "batch")
    assert b.speed == pytest.approx(50 / 50.5) and b.correct == pytest.approx(0.5 / 50.5)
    assert b.speed + b.correct + b.failure == pytest.approx(1.0)


def test_no_spread_anywhere_gives_nan_shares_and_float_residue_is_not_spread():
    out = signal_split([("a", 1.0, "wrong"), ("a", 1.0 + 1e-15, "wrong"), ("b", -2.0, "unjudged")])
    assert out.zero_spread == 2 and all(math.isnan(x) for x in (out.correct, out.speed, out.failure))
    row = out.to_row()
    assert row["signal_groups"] == 2.0 and math.isnan(row["signal_speed"])


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="class"):
        signal_split([("a", 1.0, "fast")])
    with pytest.raises(ValueError, match="scale"):
        signal_split([], "rank")
    with pytest.raises(ValueError, match="finite"):
        signal_split([("a", float("nan"), "wrong")])


def test_attempt_class_follows_the_verdict_and_hack_flags():
    mk = lambda **k: EvalResult("t", "h", **k)  # noqa: E731
    assert attempt_class(mk(status="compile_error", compiled=False)) == "not_compiled"
    assert attempt_class(mk(status="compiled", compiled=True)) == "unjudged"
    assert attempt_class(mk(status="wrong", compiled=True, correct=False)) == "wrong"
    assert attempt_class(mk(status="correct", compiled=True, correct=True)) == "correct"
    assert attempt_class(mk(status="correct", compiled=True, correct=True,
                            flags=["hack:faster_than_roofline"])) == "wrong"
