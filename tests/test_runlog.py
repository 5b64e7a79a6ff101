"""cudaperf.runlog: loading step logs and the reward-trend verdict."""
from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

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


def test_pool_epochs_average_each_pass_over_the_pool():
    log = pd.DataFrame({"step": range(1, 11), "r_ver": [float(s) for s in range(1, 11)]})
    ep = runlog.pool_epochs(log, {"max_tasks": 64, "tasks_per_step": 16})
    assert ep["epoch"].tolist() == [0, 1, 2] and ep["steps"].tolist() == [4, 4, 2]
    assert ep["r_ver"].tolist() == [2.5, 6.5, 9.5] and ep["complete"].tolist() == [True, True, False]
    assert runlog.pool_epochs(log, {"max_tasks": 0, "tasks_per_step": 16}).empty
    # a whole split as the pool (infamily_rest: 173 programs, 10 whole steps of 16 a pass)
    ir = runlog.pool_epochs(pd.DataFrame({"step": range(1, 22), "r_ver": 0.0}), {"max_tasks": 0, "tasks": 173,
                                                                                  "tasks_per_step": 16})
    assert ir["steps"].tolist() == [10, 10, 1] and ir["complete"].tolist() == [True, True, False]
    # never back at a task (a big split, or a short run): nothing to compare
    assert runlog.pool_epochs(log, {"max_tasks": 0, "tasks": 3000, "tasks_per_step": 16}).empty
    assert runlog.pool_epochs(log.head(4), {"max_tasks": 64, "tasks_per_step": 16}).empty


def test_paired_eval_compares_speed_only_where_both_are_correct():
    rows = []
    # t1: both correct, b twice as fast; t2: only a correct (b's speed there must not count);
    # t3: only b correct, and fast.
    for pol, task, ok, sp in [("sft_start", "t1", True, 2.0), ("grpo", "t1", True, 4.0),
                              ("sft_start", "t2", True, 1.0), ("grpo", "t2", False, 50.0),
                              ("sft_start", "t3", False, None), ("grpo", "t3", True, 9.0)]:
        rows.append({"policy": pol, "task_id": task, "correct": ok, "speedup": sp})
    r = runlog.paired_eval(pd.DataFrame(rows))
    assert r["tasks"] == 3 and r["tasks_both_timed"] == 1 and r["b_faster_on"] == 1
    assert r["speedup_ratio_b_over_a"] == pytest.approx(2.0)
    assert (r["b_pass_higher"], r["b_pass_lower"], r["pass_equal"]) == (1, 1, 1)
    # A correct sample flagged as a hack counts as not correct, as in every metric.
    flagged = pd.DataFrame(rows).assign(flags=[[], ["hack:faster_than_roofline"], [], [], [], []])
    r = runlog.paired_eval(flagged)
    assert r["tasks_both_timed"] == 0 and r["pass@1_b"] == pytest.approx(1 / 3)


def test_sign_test_matches_the_binomial():
    assert runlog.sign_test_p(0, 0) == 1.0 and runlog.sign_test_p(3, 3) == 1.0
    assert runlog.sign_test_p(5, 0) == pytest.approx(2 / 32)  # 5 of 5 one way: 2 * 0.5^5
    assert runlog.sign_test_p(9, 13) == runlog.sign_test_p(13, 9) == pytest.approx(
        2 * sum(math.comb(22, i) for i in range(10)) / 2 ** 22)
    assert runlog.sign_test_p(20, 2) < 0.001


def test_paired_eval_intervals_separate_a_real_gap_from_the_task_draw():
    rng = np.random.default_rng(1)
    rows = []
    for t in range(40):  # b passes every task a passes, plus one more sample on each; and is 2x faster
        for k in range(5):
            rows.append({"policy": "sft_start", "task_id": f"t{t}", "correct": k < 2, "speedup": 1.0 if k < 2 else None})
            rows.append({"policy": "grpo", "task_id": f"t{t}", "correct": k < 3, "speedup": 2.0 if k < 3 else None})
    r = runlog.paired_eval(pd.DataFrame(rows))
    assert r["pass_diff"] == pytest.approx(0.2) and r["pass_diff_lo"] == pytest.approx(0.2)
    assert r["pass_sign_p"] < 1e-6 and r["speedup_ratio_lo"] == pytest.approx(2.0)
    # noise only: per-task pass rates drawn alike for both policies; the interval must cover 0
    rows = [{"policy": pol, "task_id": f"t{t}", "correct": bool(rng.random() < 0.5), "speedup": 1.0}
            for t in range(60) for pol in ("sft_start", "grpo") for _ in range(5)]
    r = runlog.paired_eval(pd.DataFrame(rows))
    assert r["pass_diff_lo"] < 0 < r["pass_diff_hi"] and r["pass_sign_p"] > 0.05
    assert r == runlog.paired_eval(pd.DataFrame(rows))  # deterministic


def test_judging_table_sums_internal_errors_and_leaves_unlogged_columns_nan():
    import pandas as pd

    new = pd.DataFrame({"step": [1, 2], "internal_errors": [3, 0], "released_gb": [16.4, 37.5],
                        "batch_repeats": [1, 2], "cache_hit_rate": [float("nan"), 0.5], "t_eval_wall": [20.0, 10.0],
                        "t_step": [40.0, 20.0]})
    old = pd.DataFrame({"step": [1], "batch_repeats": [4], "t_step": [30.0]})
    t = runlog.judging_table({"new": new, "old": old})
    assert t.loc["new", "internal_errors (sum)"] == 3 and t.loc["new", "released_gb (max)"] == 37.5
    assert t.loc["new", "cache_hit_rate (mean)"] == 0.5 and t.loc["new", "t_step (median)"] == 30.0
    assert math.isnan(t.loc["old", "internal_errors (sum)"]) and t.loc["old", "batch_repeats (sum)"] == 4
    assert t.loc["old", "steps"] == 1


def test_targets_table_reads_fresh_steps_of_the_latest_call_and_the_evaluations(tmp_path):
    import json

    steps = pd.DataFrame({"step": range(1, 11), "rows": 128, "r_ver": [0.1 * i for i in range(10)],
                          "correct_rate": [0.5] * 9 + [0.0],
                          "cache_hit_rate": [0, 0, 0.3, 0, 0, 0, 0.5, 0, 0.2, 0],
                          "t_step": [40, 42, 20, 44, 28, 26, 15, 29, 18, 5]})
    run = tmp_path / "r1"
    run.mkdir()
    (run / "settings.json").write_text(json.dumps({"turns": 1, "calls": [{"first_step": 1, "changed": {}},
                                                             {"first_step": 5, "changed": {"keep_runners": [0, 64]}}]}))
    rows = []
    for t in range(30):  # GRPO always 2x faster and as often correct
        for pol, sp in (("sft_start", 1.0), ("grpo", 2.0)):
            rows += [{"policy": pol, "task_id": f"t{t}", "correct": k < 3, "speedup": sp} for k in range(5)]
    pd.DataFrame(rows).to_parquet(run / "eval_infamily_samples.parquet")
    bare = steps.drop(columns=["cache_hit_rate"])
    t = runlog.targets_table({"r1": steps, "r2": bare}, data_dir=tmp_path)
    r1 = t[t.run == "r1"].iloc[0]
    # fresh: no store hit and something correct -> steps 1, 2, 4, 5, 6, 8 (step 10 judged nothing correct)
    assert r1["fresh_steps"] == 6 and r1["fresh_step_s"] == pytest.approx(34.5)
    assert r1["latest_call_from_step"] == 5 and r1["fresh_steps_latest"] == 3
    # (pandas may hand verdicts back as numpy booleans: compare by value)
    assert r1["fresh_step_s_latest"] == pytest.approx(28.0) and bool(r1["fresh_step_within_target"])
    assert bool(r1["r_ver_rising"]) and r1["attempts_per_step"] == 128
    assert r1["eval"] == "eval_infamily" and bool(r1["beats_speed"]) and pd.isna(r1["beats_pass"])
    assert r1["speedup_ratio"] == pytest.approx(2.0) and r1["pass_diff"] == 0
    multi = tmp_path / "r3"
    multi.mkdir()
    (multi / "settings.json").write_text(json.dumps({"turns": 3}))
    r3 = runlog.targets_table({"r3": steps}, data_dir=tmp_path).iloc[0]
    assert r3["turns"] == 3 and r3["fresh_step_within_target"] is None  # the target is for one turn
    r2 = t[t.run == "r2"].iloc[0]  # no store hits logged, no settings, no evaluation
    assert r2["fresh_steps"] == 0 and pd.isna(r2["fresh_step_within_target"]) and pd.isna(r2.get("eval"))



def test_call_changes_and_step_split_plot_mark_where_settings_changed():
    """A resumed run's later calls that changed settings are marked on the step-time plot, labelled
    with what changed; the first call and calls that changed nothing are not."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    settings = {"calls": [{"first_step": 1, "changed": {}},
                          {"first_step": 4, "changed": {"keep_runners": [0, 64], "runners_per_gpu": [12, 16]}},
                          {"first_step": 6, "changed": {}},
                          {"first_step": 7, "changed": {"compile_ahead": [None, 8], "gen_pad_multiple": [None, 0]}}]}
    assert runlog.call_changes(settings) == [(4, "keep_runners 0→64, runners_per_gpu 12→16"),
                                             (7, "compile_ahead None→8")]
    assert runlog.call_changes({}) == []
    df = pd.DataFrame({"step": range(1, 9), "t_generation": [10.0] * 8, "t_compile": [5.0] * 6 + [0.2] * 2,
                       "t_execution": [8.0] * 8})  # no t_update column: drawn without it
    fig, ax = plt.subplots()
    labels = runlog.plot_step_split(ax, df, settings)
    assert labels == ["keep_runners 0→64, runners_per_gpu 12→16", "compile_ahead None→8"]
    assert sorted(line.get_xdata()[0] for line in ax.lines if line.get_linestyle() == ":") == [3.5, 6.5]
    heights = [p.get_height() for p in ax.patches]
    assert len(heights) == 3 * 8 and heights[-1] == 8.0  # three parts stacked per step
    assert any(line.get_ydata()[0] == runlog.STEP_TARGET_S for line in ax.lines if line.get_linestyle() == "--")
    plt.close(fig)


def test_load_settings_reads_a_runs_settings_or_gives_an_empty_dict(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "settings.json").write_text('{"max_tasks": 128, "calls": []}')
    assert runlog.load_settings("r", tmp_path) == {"max_tasks": 128, "calls": []}
    assert runlog.load_settings("absent", tmp_path) == {}


def test_eval_files_by_kind_and_turn_curves(tmp_path):
    import pandas as pd

    run = tmp_path / "r"
    run.mkdir()
    for stem in ("eval_infamily", "eval_infamily_samples", "eval_infamily_turns", "eval_infamily_step9",
                 "eval_infamily_step9_samples"):
        pd.DataFrame({"x": [1]}).to_parquet(run / f"{stem}.parquet")
    names = {k: [f.stem for f in runlog.eval_files(tmp_path, k)] for k in runlog.EVAL_KINDS}
    assert names == {"summary": ["eval_infamily", "eval_infamily_step9"],
                     "samples": ["eval_infamily_samples", "eval_infamily_step9_samples"],
                     "turns": ["eval_infamily_turns"]}
    with pytest.raises(ValueError, match="kind"):
        runlog.eval_files(tmp_path, "logs")
    # chains: start a/0 correct at turn 2, a/1 never; grpo a/0 at turn 1, a/1 at turn 3
    rows = [("sft_start", 0, 1, False), ("sft_start", 1, 1, False), ("sft_start", 0, 2, True),
            ("sft_start", 1, 2, False), ("sft_start", 1, 3, False),
            ("grpo", 0, 1, True), ("grpo", 1, 1, False), ("grpo", 1, 2, False), ("grpo", 1, 3, True)]
    pd.DataFrame([{"policy": p, "task_id": "a", "sample": s, "turn": t, "correct": c, "flags": []}
                  for p, s, t, c in rows]).to_parquet(run / "eval_infamily_turns.parquet")
    cur = runlog.turn_curves(tmp_path)
    got = {(r.policy, r.turn): r.pass_by_turn for r in cur.itertuples()}
    assert got == {("sft_start", 1): 0.0, ("sft_start", 2): 0.5, ("sft_start", 3): 0.5,
                   ("grpo", 1): 0.5, ("grpo", 2): 0.5, ("grpo", 3): 1.0}
    assert set(cur["eval"]) == {"eval_infamily"} and set(cur["run"]) == {"r"}
    assert runlog.turn_curves(tmp_path / "none").empty


def test_fresh_step_parts_compare_runs_on_their_fresh_steps():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def log(steps, hits, correct):
        n = len(steps)
        return pd.DataFrame({"step": steps, "t_step": [40.0, 20.0, 24.0, 35.0, 10.0][:n],
                             "t_generation": [5.0] * n, "t_compile": [7.0] * n, "t_execution": [10.0] * n,
                             "t_update": [1.0] * n, "cache_hit_rate": hits, "correct_rate": correct})

    runs = {"a": log([1, 2, 3, 4, 5], [0, 0, 0, 0, 0.5], [0.5, 0.5, 0.5, 0.0, 0.5]),  # step 4: nothing correct
            "b": log([1], [0], [0.5]),  # only its first step: nothing left once it is skipped
            "c": pd.DataFrame({"step": [1], "t_step": [3.0]})}  # an old log without the columns
    t = runlog.fresh_step_parts(runs)
    assert list(t["run"]) == ["a"]
    row = t.iloc[0]
    assert row["fresh_steps"] == 2 and row["t_step"] == 22.0 and row["within_target"] == 2
    assert row["t_compile"] == 7.0 and math.isnan(row["attempts"])
    assert list(runlog.fresh_step_parts(runs, skip_first=False)["run"]) == ["a", "b"]
    assert runlog.fresh_step_parts({"c": runs["c"]}).empty
    fig, ax = plt.subplots()
    runlog.plot_fresh_step_parts(ax, runlog.fresh_step_parts(runs, skip_first=False))
    labels = [x.get_text() for x in ax.get_yticklabels()]
    assert labels == ["a (3 steps, 2 ≤ 30 s)", "b (1 step, 0 ≤ 30 s)"]  # no rows column: no attempts
    plt.close(fig)


def test_signal_table_and_plot_cover_runs_that_logged_the_split():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    new = pd.DataFrame({"step": [1, 2], "signal_groups": [16.0, 16.0], "signal_mixed": [8.0, 4.0],
                        "signal_all_correct": [4.0, 8.0], "signal_zero_spread": [2.0, 4.0],
                        "signal_correct": [0.6, 0.2], "signal_speed": [0.3, 0.7], "signal_failure": [0.1, 0.1]})
    old = pd.DataFrame({"step": [1], "t_step": [3.0]})  # logged before session 31: left out
    t = runlog.signal_table({"new": new, "old": old})
    assert list(t["run"]) == ["new"]
    row = t.iloc[0]
    assert row["share_correct"] == pytest.approx(0.4) and row["share_speed"] == pytest.approx(0.5)
    assert row["mixed"] == pytest.approx(0.375) and row["zero_spread"] == pytest.approx(0.1875)
    assert runlog.signal_table({"old": old}).empty
    fig, ax = plt.subplots()
    runlog.plot_signal_split(ax, new, "new")
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([0.6, 0.2, 0.3, 0.7, 0.1, 0.1])
    plt.close(fig)


def test_eval_signal_table_reads_samples_as_groups_with_and_without_r_cv(tmp_path):
    from cudaperf.config import RewardConfig

    d = tmp_path / "run"
    d.mkdir()
    rows = []
    for pol in ("sft_start", "grpo"):
        # task a: one correct sample with a spiked classic CV, one wrong sample passing half the tests
        rows += [{"policy": pol, "task_id": "a", "status": "correct", "compiled": True, "correct": True,
                  "pass_rate": 1.0, "speedup": 2.0, "cv": 2.5, "flags": []},
                 {"policy": pol, "task_id": "a", "status": "wrong", "compiled": True, "correct": False,
                  "pass_rate": 0.5, "speedup": None, "cv": None, "flags": []}]
    pd.DataFrame(rows).to_parquet(d / "eval_infamily_samples.parquet")
    t = runlog.eval_signal_table(RewardConfig(), tmp_path)
    assert len(t) == 4 and set(t["r_cv_on"]) == {True, False}
    on = t[(t["policy"] == "grpo") & t["r_cv_on"]].iloc[0]
    # R_ver: correct 1 - 2.5 = -1.5 against the wrong one's -1: the group is inverted
    assert on["signal_inverted"] == 1 and on["correct_below_half_wrong"] == 1.0
    assert on["mean_r_cv"] == pytest.approx(-2.5) and on["eval"] == "eval_infamily"
    off = t[(t["policy"] == "grpo") & ~t["r_cv_on"]].iloc[0]
    assert off["signal_inverted"] == 0 and off["correct_below_half_wrong"] == 0.0
