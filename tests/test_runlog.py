"""cudaperf.runlog: loading step logs and the reward-trend verdict."""
from __future__ import annotations

import math
import random

import pandas as pd

from cudaperf import runlog


def test_clear_rise_is_rising_and_flat_noise_is_not():
    rng = random.Random(1)
    steps = list(range(1, 31))
    up = [0.05 * s + rng.gauss(0, 0.1) for s in steps]
    t = runlog.reward_trend(steps, up)
    assert t["rising"] is True and 0.3 < t["slope"] < 0.7 and t["lo"] > 0 and t["last_third"] > t["first_third"]
    flat = [rng.gauss(0, 1.0) for _ in steps]
    f = runlog.reward_trend(steps, flat)
    assert f["rising"] is False and f["lo"] < 0 < f["hi"]
    down = [-v for v in up]
    assert runlog.reward_trend(steps, down)["rising"] is False


def test_too_few_steps_gives_no_verdict_and_nans_are_dropped():
    t = runlog.reward_trend([1, 2, 3], [0.0, 1.0, 2.0])
    assert t["rising"] is None and t["steps"] == 3 and math.isclose(t["slope"], 10.0)
    t = runlog.reward_trend([1, 2, 3, 4], [0.0, float("nan"), 2.0, None])
    assert t["steps"] == 2
    assert runlog.reward_trend([1], [0.5])["rising"] is None


def test_deterministic_for_a_seed():
    steps = list(range(12))
    ys = [math.sin(s) + 0.02 * s for s in steps]
    assert runlog.reward_trend(steps, ys, seed=3) == runlog.reward_trend(steps, ys, seed=3)


def test_load_runs_and_trend_table(tmp_path):
    for name, slope in (("a", 0.1), ("b", -0.1)):
        d = tmp_path / name
        d.mkdir()
        pd.DataFrame({"step": range(1, 13), "r_ver": [slope * s for s in range(1, 13)],
                      "r_str": [float("nan")] * 12}).to_parquet(d / "steps.parquet")
    runs = runlog.load_runs(tmp_path)
    assert list(runs) == ["a", "b"]
    tab = runlog.trend_table(runs)
    assert list(tab["column"]) == ["r_ver", "r_ver"]  # r_str all NaN: no row
    assert tab.set_index("run")["rising"].to_dict() == {"a": True, "b": False}
