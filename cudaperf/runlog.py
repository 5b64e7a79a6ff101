"""Reading GRPO step logs (data/grpo/<run>/steps.parquet) and judging whether a reward rose.

Guarantees:
* `load_runs` returns every run's step log under a directory, keyed by run name, in name order;
  `load_settings` a run's settings.json ({} when it has none).
* `reward_trend` answers "did the mean reward rise over the run?" with a number and its
  uncertainty, not a glance at a noisy curve. Each step trains on a fresh draw of tasks, so the
  per-step mean moves with the task mix as much as with the policy; the trend is therefore the
  least-squares slope of the per-step mean over the step number, with a percentile bootstrap
  interval over steps (resampling (step, reward) pairs), plus the means of the first and last
  thirds. `rising` is True only when the whole interval lies above zero; with fewer than
  `min_steps` steps there is no verdict (None), whatever the slope.
* `pool_epochs` gives, for a run that revisited its task pool (GRPOSettings.max_tasks, or a whole
  split small enough, such as infamily_rest's 173 programs), the mean of each column per pass over
  the pool: every pass sees (nearly) the same tasks, so pass means compare the policy, not the
  task mix.
* `paired_eval` compares two policies' held-out samples task by task (pass rate on every task;
  speedup only on tasks where both have a correct, timed sample), so a policy that solves fewer,
  easier-to-speed-up tasks cannot look faster by its choice of tasks.
* `judging_table` gives one row per run on how its rewards were judged (internal harness errors,
  GPU memory handed back, repeats, store hits, judging time); a column a run never logged is NaN.
* `call_changes` lists where a resumed run changed its settings (settings.json `calls`), and
  `plot_step_split` draws a run's step time by part with those changes marked and the 30 s target
  drawn, so a drop in step time can be read against what changed.
* `fresh_step_parts` / `plot_fresh_step_parts` set runs side by side on their fresh steps (every
  task new to the run's store): median step time and the median of each part.
* `signal_table` / `plot_signal_split` show, for runs that logged it (session 31 on;
  `cudaperf.signalsplit`), where each step's reward spread lay: between correct and not-correct
  attempts (what teaches correctness), among correct ones (speed), among failures; runs without
  those columns are left out, never shown as zeros.
* `targets_table` sets each run against issue 9's targets: step time on fresh tasks (steps with no
  stored result) against 30 s, whether R_ver rose, and per held-out evaluation whether the GRPO
  policy beats its SFT start on pass@1 and speed beyond the task draw (`paired_eval`'s intervals).
"""
from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any, Sequence


def load_runs(data_dir: str | Path = "data/grpo") -> dict[str, Any]:
    """{run name: its steps.parquet as a DataFrame} for every run under data_dir."""
    import pandas as pd

    return {f.parent.name: pd.read_parquet(f) for f in sorted(Path(data_dir).glob("*/steps.parquet"))}


def load_settings(run: str, data_dir: str | Path = "data/grpo") -> dict[str, Any]:
    """The run's settings.json (the settings of its latest call, and `calls`); {} when it has none."""
    f = Path(data_dir, run, "settings.json")
    return json.loads(f.read_text()) if f.is_file() else {}


def _slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return float("nan")
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def reward_trend(steps: Sequence[float], rewards: Sequence[float], *, per: int = 10, boot: int = 2000,
                 level: float = 0.9, min_steps: int = 8, seed: int = 0) -> dict[str, Any]:
    """Slope of the mean reward per `per` steps with a `level` bootstrap interval (see module doc).

    NaN rewards (a step with no attempt scored) are left out. Deterministic for a given seed."""
    pts = [(float(s), float(r)) for s, r in zip(steps, rewards) if r is not None and not math.isnan(float(r))]
    n = len(pts)
    out: dict[str, Any] = {"steps": n, "slope_per": per, "slope": float("nan"), "lo": float("nan"),
                           "hi": float("nan"), "first_third": float("nan"), "last_third": float("nan"),
                           "rising": None}
    if n < 2:
        return out
    pts.sort()
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    out["slope"] = _slope(xs, ys) * per
    k = max(1, n // 3)
    out["first_third"] = sum(ys[:k]) / k
    out["last_third"] = sum(ys[-k:]) / k
    rng = random.Random(seed)
    draws = []
    for _ in range(boot):
        sample = [pts[rng.randrange(n)] for _ in range(n)]
        b = _slope([p[0] for p in sample], [p[1] for p in sample])
        if not math.isnan(b):
            draws.append(b * per)
    if draws:
        draws.sort()
        tail = (1.0 - level) / 2.0
        out["lo"] = draws[int(tail * (len(draws) - 1))]
        out["hi"] = draws[int(math.ceil((1.0 - tail) * (len(draws) - 1)))]
    if n >= min_steps and draws:
        out["rising"] = bool(out["lo"] > 0)
    return out


def trend_table(runs: dict[str, Any], columns: Sequence[str] = ("r_ver", "r_str", "correct_rate"), **kw):
    """One row per (run, column): `reward_trend` of that column over the run's steps."""
    import pandas as pd

    rows = []
    for name, df in runs.items():
        for c in columns:
            if c in df and df[c].notna().any():
                rows.append({"run": name, "column": c, **reward_trend(df["step"].tolist(), df[c].tolist(), **kw)})
    return pd.DataFrame(rows)


def pool_epochs(log: Any, settings: dict, columns: Sequence[str] = ("r_ver", "r_str", "correct_rate",
                                                                   "geomean_speedup")):
    """Mean of `columns` per pass over the task pool: the pool is `max_tasks` or, when the run
    drew from its whole split (max_tasks 0), the split's `tasks`; a pass is pool // tasks_per_step
    steps (TRL's sampler and `cudaperf.schedule` both cut a pass to whole steps, so up to
    tasks_per_step - 1 tasks sit out each pass, different ones each time); a last, partial pass
    is labelled as such. Empty when the log never reaches a second pass: nothing was revisited."""
    import pandas as pd

    pool = int(settings.get("max_tasks") or settings.get("tasks") or 0)
    per = int(settings.get("tasks_per_step") or 0)
    if pool <= 0 or per <= 0 or not len(log):
        return pd.DataFrame()
    k = max(1, pool // per)
    if int(log["step"].max()) <= k:
        return pd.DataFrame()
    df = log.assign(epoch=(log["step"] - 1) // k)
    out = df.groupby("epoch").agg(steps=("step", "size"), first_step=("step", "min"),
                                  **{c: (c, "mean") for c in columns if c in df})
    out["complete"] = out["steps"] == k
    return out.reset_index()


def paired_eval(samples: Any, a: str = "sft_start", b: str = "grpo", *, level: float = 0.9, boot: int = 2000,
                seed: int = 0) -> dict[str, Any]:
    """Policy `b` against `a` on one evaluation's samples (columns policy, task_id, correct,
    speedup, optionally flags): tasks where b's pass rate is higher / lower / equal, and over the tasks where both
    have a correct, timed sample, the geometric mean of b's per-task geomean speedup over a's and
    on how many of them b is faster. Both come with a `level` bootstrap interval over tasks
    (`pass_diff_lo/hi`, `speedup_ratio_lo/hi`), and the pass rates with a sign test
    (`pass_sign_p`): whether b beats a, or only drew easier luck, is read from those."""
    import numpy as np

    from cudaperf import metrics

    s = samples[samples["policy"].isin([a, b])].copy()
    # Correct and timed as every metric counts them: a sample flagged hack: never is.
    rows = s.to_dict("records")
    s["correct"] = [metrics.is_correct(r) for r in rows]
    s["logsp"] = [np.log(q) if (q := metrics.qualifying_speedup(r)) is not None else np.nan for r in rows]
    g = s.groupby(["task_id", "policy"]).agg(p=("correct", "mean"), ls=("logsp", "mean")).unstack("policy")
    both = g["ls"].dropna()
    dp = (g["p"][b] - g["p"][a]).dropna()  # per-task pass-rate difference
    dl = both[b] - both[a]  # per-task log speedup ratio, where both are timed
    higher, lower = int((dp > 0).sum()), int((dp < 0).sum())
    pass_lo, pass_hi = _paired_interval(dp.to_numpy(), level, boot, seed)
    log_lo, log_hi = _paired_interval(dl.to_numpy(), level, boot, seed)
    return {"tasks": int(len(g)), "b_pass_higher": higher, "b_pass_lower": lower,
            "pass_equal": int((dp == 0).sum()),
            "pass@1_a": float(s[s.policy == a]["correct"].mean()), "pass@1_b": float(s[s.policy == b]["correct"].mean()),
            # b - a in per-task pass rate, with a bootstrap interval over tasks, and the two-sided sign
            # test of higher against lower: is a pass@1 gap more than the task draw?
            "pass_diff": float(dp.mean()), "pass_diff_lo": pass_lo, "pass_diff_hi": pass_hi,
            "pass_sign_p": sign_test_p(higher, lower),
            "tasks_both_timed": int(len(both)),
            "speedup_ratio_b_over_a": float(np.exp(dl.mean())) if len(dl) else float("nan"),
            "speedup_ratio_lo": float(np.exp(log_lo)), "speedup_ratio_hi": float(np.exp(log_hi)),
            "b_faster_on": int((dl > 0).sum())}


def _paired_interval(diffs: Any, level: float, boot: int, seed: int) -> tuple[float, float]:
    """`level` bootstrap interval of the mean of per-task differences (tasks resampled); NaN for
    fewer than two tasks. Deterministic for a given seed."""
    import numpy as np

    d = np.asarray(diffs, dtype=float)
    if len(d) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(boot, len(d)))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    return float(np.quantile(means, tail)), float(np.quantile(means, 1.0 - tail))


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven between `wins` and
    `losses` if either were equally likely (ties left out); 1.0 with no untied task."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


# Step-log columns that say whether the rewards of a run can be trusted and how the judging went;
# older runs lack the newer ones (released_gb and internal_errors came in session 22).
JUDGING_COLUMNS = {"internal_errors": "sum", "released_gb": "max", "batch_repeats": "sum",
                   "cache_hit_rate": "mean", "t_eval_wall": "median", "t_step": "median"}


EVAL_KINDS = ("summary", "samples", "turns")


def eval_files(data_dir: str | Path = "data/grpo", kind: str = "summary") -> list[Path]:
    """The held-out evaluation files `benchmarks/grpo_gpu.py eval` wrote under data_dir/<run>/, sorted:
    "summary" (eval*.parquet: one row per policy), "samples" (*_samples.parquet: every judged first
    attempt) or "turns" (*_turns.parquet: every attempt of a multi-turn evaluation, `eval --turns`)."""
    if kind not in EVAL_KINDS:
        raise ValueError(f"kind must be one of {EVAL_KINDS}, got {kind!r}")
    every = sorted(Path(data_dir).glob("*/eval*.parquet"))
    if kind == "summary":
        return [f for f in every if not f.stem.endswith(("_samples", "_turns"))]
    return [f for f in every if f.stem.endswith(f"_{kind}")]


def eval_signal_table(reward_config: Any, data_dir: str | Path = "data/grpo") -> Any:
    """What GRPO would learn from each committed held-out evaluation's judged samples, read as
    groups (`signalsplit.samples_signal`, R_ver only): one row per (run, eval, policy, R_cv on/off),
    the ``signal_*`` columns, and over the correct samples the mean R_speed and R_cv and the share
    whose R_ver falls below -1 (a wrong answer passing half the tests). "R_cv off" stands in for a
    robust CV (harness.robust_cv) where the samples recorded only the classic one."""
    import pandas as pd
    from dataclasses import replace

    from cudaperf.rewards import reward_components
    from cudaperf.signalsplit import sample_result, samples_signal

    rows = []
    for f in eval_files(data_dir, "samples"):
        df = pd.read_parquet(f)
        for cv_on in (True, False):
            rc = reward_config if cv_on else replace(reward_config, alpha_cv=0.0)
            sig = samples_signal(df, rc)
            for _, r in sig.iterrows():
                ok = df[(df["policy"] == r["policy"]) & (df["status"] == "correct")]
                comps = [reward_components(sample_result(x), rc) for x in ok.itertuples(index=False)]
                n = max(1, len(comps))
                rows.append({"run": f.parent.name, "eval": f.stem.removesuffix("_samples"), **r.to_dict(),
                             "r_cv_on": cv_on, "correct_samples": len(comps),
                             "mean_r_speed": sum(c["r_speed"] for c in comps) / n,
                             "mean_r_cv": sum(c["r_cv"] for c in comps) / n,
                             "correct_below_half_wrong": sum(c["r_ver"] < -1.0 for c in comps) / n})
    return pd.DataFrame(rows)


def turn_curves(data_dir: str | Path = "data/grpo") -> Any:
    """One row per (run, eval, policy, turn) of every multi-turn evaluation: the share of chains correct
    by that turn, averaged over tasks (`refine_eval.pass_by_turn`). Empty frame when there is none."""
    import pandas as pd

    from cudaperf.refine_eval import pass_by_turn

    rows = []
    for f in eval_files(data_dir, "turns"):
        df = pd.read_parquet(f)
        turns = int(df["turn"].max())
        for pol, g in df.groupby("policy", sort=False):
            for t, v in pass_by_turn(g.to_dict("records"), turns).items():
                rows.append({"run": f.parent.name, "eval": f.stem.removesuffix("_turns"), "policy": pol,
                             "turn": t, "pass_by_turn": v})
    return pd.DataFrame(rows, columns=["run", "eval", "policy", "turn", "pass_by_turn"])


def judging_table(runs: dict[str, Any]) -> Any:
    """One row per run: attempts the harness could not judge (`internal_errors`, paid as crashes
    unless a retry judged them), the largest policy cache handed back before judging
    (`released_gb`), in-batch repeats, store hit rate, and median judging and step seconds. A
    column a run did not log is NaN for it, not 0."""
    import pandas as pd

    rows = []
    for name, df in runs.items():
        row = {"run": name, "steps": len(df)}
        for col, how in JUDGING_COLUMNS.items():
            row[f"{col} ({how})"] = getattr(df[col].dropna(), how)() if col in df and df[col].notna().any() \
                else float("nan")
        rows.append(row)
    return pd.DataFrame(rows).set_index("run") if rows else pd.DataFrame()


__all__ = ["EVAL_KINDS", "eval_files", "turn_curves", "JUDGING_COLUMNS", "STEP_PARTS", "call_changes", "fresh_step_parts", "fresh_steps", "judging_table", "load_runs", "load_settings", "paired_eval",
           "SIGNAL_PARTS", "eval_signal_table", "plot_fresh_step_parts", "plot_signal_split", "plot_step_split", "signal_table", "pool_epochs", "reward_trend", "targets_table", "trend_table"]


STEP_TARGET_S = 30.0  # issue 9: a mini step (16 tasks x 8 attempts, one turn) within 30 s


def targets_table(runs: dict[str, Any], data_dir: str | Path = "data/grpo", level: float = 0.9) -> Any:
    """One row per (run, held-out evaluation); a run without any evaluation gets one row with the
    evaluation columns empty. Per run: the median step time over fresh steps (no result-store hit
    and some attempt correct; NaN when the run logged no hits or had no such step), over the fresh
    steps of its latest call (settings.json `calls`: a resumed run may have changed how it judges;
    this one is set against `STEP_TARGET_S`, for one-turn runs only) and over all steps; R_ver's
    trend verdict (`reward_trend`). Per evaluation, from `paired_eval`: the pass@1 difference and
    the speedup ratio of the GRPO policy over its SFT start with their `level` intervals.
    `beats_pass` / `beats_speed` are True only when the whole interval lies above 0 / 1, False when
    it lies below, None otherwise."""
    import pandas as pd

    def verdict(lo: float, hi: float, line: float) -> bool | None:
        if math.isnan(lo) or math.isnan(hi):
            return None
        return True if lo > line else False if hi < line else None

    rows = []
    for name, df in runs.items():
        fresh = fresh_steps(df)
        trend = reward_trend(df["step"], df["r_ver"])
        base = {"run": name, "steps": len(df),
                "attempts_per_step": float(df["rows"].median()) if "rows" in df and len(df) else math.nan,
                "fresh_steps": len(fresh), "fresh_step_s": float(fresh["t_step"].median()) if len(fresh) else math.nan,
                "median_step_s": float(df["t_step"].median()) if len(df) else math.nan,
                "r_ver_slope": trend["slope"], "r_ver_rising": trend["rising"]}
        # A resumed run may have changed its judging settings (settings.json `calls`): the fresh
        # steps of its latest call show what the current settings reach.
        settings = load_settings(name, data_dir)
        calls = settings.get("calls", [])
        since = int(calls[-1]["first_step"]) if calls else 1
        latest = fresh[fresh["step"] >= since]
        turns = settings.get("turns")
        base.update({"turns": turns, "latest_call_from_step": since, "fresh_steps_latest": len(latest),
                     "fresh_step_s_latest": float(latest["t_step"].median()) if len(latest) else math.nan})
        # The 30 s target is for a one-turn step; a multi-turn step generates and judges T times.
        base["fresh_step_within_target"] = (None if math.isnan(base["fresh_step_s_latest"]) or turns not in (1, None)
                                            else bool(base["fresh_step_s_latest"] <= STEP_TARGET_S))
        evals = [f for f in eval_files(data_dir, "samples") if f.parent.name == name]
        if not evals:
            rows.append(base)
        for f in evals:
            pe = paired_eval(pd.read_parquet(f), level=level)
            rows.append({**base, "eval": f.stem.replace("_samples", ""), "tasks": pe["tasks"],
                         "pass@1_start": pe["pass@1_a"], "pass@1_grpo": pe["pass@1_b"],
                         "pass_diff": pe["pass_diff"], "pass_diff_lo": pe["pass_diff_lo"],
                         "pass_diff_hi": pe["pass_diff_hi"],
                         "beats_pass": verdict(pe["pass_diff_lo"], pe["pass_diff_hi"], 0.0),
                         "speedup_ratio": pe["speedup_ratio_b_over_a"], "speedup_ratio_lo": pe["speedup_ratio_lo"],
                         "speedup_ratio_hi": pe["speedup_ratio_hi"],
                         "beats_speed": verdict(pe["speedup_ratio_lo"], pe["speedup_ratio_hi"], 1.0)})
    return pd.DataFrame(rows)


STEP_PARTS = ("t_generation", "t_compile", "t_execution", "t_update")  # a step's wall time by part


def fresh_steps(df: Any) -> Any:
    """The steps of a step log that judged fresh work: nothing answered from the result store, and
    some attempt ran correct (a step in which nothing compiled is fast for want of work: session
    14's). Empty for a log without those columns."""
    if not {"cache_hit_rate", "correct_rate"} <= set(df.columns):
        return df.iloc[0:0]
    return df[(df["cache_hit_rate"] == 0) & (df["correct_rate"] > 0)]


def fresh_step_parts(runs: dict[str, Any], *, skip_first: bool = True) -> Any:
    """One row per run with fresh steps (`fresh_steps`): attempts per step, how many fresh steps,
    the median step time, and the median of each part (`STEP_PARTS`; the parts' medians need not
    add up to the step's).
    `skip_first` leaves out each run's step 1, which also warms the machine up (CUDA graphs, the
    first runners, the first references), so runs compare on their steady fresh steps."""
    import pandas as pd

    rows = []
    for name, df in runs.items():
        fresh = fresh_steps(df)
        if skip_first and "step" in fresh.columns:
            fresh = fresh[fresh["step"] > 1]
        if not len(fresh):
            continue
        row = {"run": name, "attempts": float(fresh["rows"].median()) if "rows" in fresh.columns else math.nan,
               "fresh_steps": len(fresh), "t_step": float(fresh["t_step"].median()),
               "within_target": int((fresh["t_step"] <= STEP_TARGET_S).sum())}
        row.update({c: float(fresh[c].median()) for c in STEP_PARTS if c in fresh.columns})
        rows.append(row)
    return pd.DataFrame(rows, columns=["run", "attempts", "fresh_steps", "t_step", "within_target", *STEP_PARTS])


def plot_fresh_step_parts(ax: Any, table: Any, target: float | None = STEP_TARGET_S) -> None:
    """Horizontal stacked bars, one per run of `fresh_step_parts`: the median of each part, the
    median step time as a tick, the target as a dashed line."""
    y = list(range(len(table)))
    left = [0.0] * len(table)
    for col in STEP_PARTS:
        if col in table.columns:
            vals = table[col].fillna(0.0).tolist()
            ax.barh(y, vals, left=left, height=0.6, label=f"{col} (median)")
            left = [a + b for a, b in zip(left, vals)]
    ax.scatter(table["t_step"], y, marker="|", s=300, color="k", zorder=3, label="step (median)")
    if target is not None:
        ax.axvline(target, color="k", ls="--", lw=1, label=f"target {target:g} s")

    def label(r, a, n, w):  # attempts per step first: runs of 8 x 8 and 16 x 8 sit side by side
        size = "" if math.isnan(a) else f"{a:.0f} attempts, "
        return f"{r} ({size}{n} step{'s' * (n != 1)}, {w} ≤ {target or 0:g} s)"

    ax.set_yticks(y, [label(*v) for v in zip(table["run"], table["attempts"], table["fresh_steps"],
                                             table["within_target"])], fontsize=7)
    ax.set(xlabel="s")
    ax.legend(fontsize=6, loc="lower right")


SIGNAL_PARTS = ("signal_correct", "signal_speed", "signal_failure")


def signal_table(runs: dict[str, Any]) -> Any:
    """One row per run with signal columns: steps, the mean share of the reward spread by part
    over steps that had any, groups per step, and the mean fraction of groups that were mixed
    (correct and not-correct attempts), all correct, or had no spread."""
    import pandas as pd

    rows = []
    for name, df in runs.items():
        if not set(SIGNAL_PARTS) <= set(df.columns):
            continue
        g = df["signal_groups"].where(df["signal_groups"] > 0)
        rows.append({"run": name, "steps": len(df),
                     **{c.replace("signal_", "share_"): float(df[c].mean()) for c in SIGNAL_PARTS},
                     "groups": float(df["signal_groups"].mean()),
                     "mixed": float((df["signal_mixed"] / g).mean()),
                     "all_correct": float((df["signal_all_correct"] / g).mean()),
                     "zero_spread": float((df["signal_zero_spread"] / g).mean())})
    return pd.DataFrame(rows, columns=["run", "steps", "share_correct", "share_speed", "share_failure",
                                       "groups", "mixed", "all_correct", "zero_spread"])


def plot_signal_split(ax: Any, df: Any, title: str = "") -> None:
    """Stacked bars per step: the share of the step's reward spread between correct and
    not-correct attempts, among correct ones (speed) and among failures; a step without spread
    has no bar. The fraction of mixed groups is drawn as a line."""
    steps = df["step"].to_numpy()
    bottom = None
    for col, colour in zip(SIGNAL_PARTS, ("tab:green", "tab:blue", "tab:grey")):
        vals = df[col].fillna(0.0).to_numpy()
        ax.bar(steps, vals, bottom=bottom, width=0.8, color=colour, label=col.replace("signal_", ""))
        bottom = vals if bottom is None else bottom + vals
    g = df["signal_groups"].where(df["signal_groups"] > 0)
    ax.plot(steps, (df["signal_mixed"] / g).to_numpy(), color="k", marker=".", lw=1,
            label="mixed groups (fraction)")
    ax.set(xlabel="step", ylabel="share of reward spread", ylim=(0, 1.05), title=title)
    if len(steps) <= 20:
        ax.set_xticks(steps)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def call_changes(settings: dict) -> list[tuple[int, str]]:
    """[(first step, 'name old→new, ...')] for every call of a run after its first that changed a
    setting (settings.json `calls`, written by `grpo.settings_record`; an option off before and after,
    None -> 0, is no change); [] for a run of one call or one logged before calls were recorded."""
    out = []
    for call in settings.get("calls", [])[1:]:
        # None -> 0 (or 0 -> None) is an option that stayed off: a settings file written before the
        # option existed holds None for it
        changed = {k: v for k, v in (call.get("changed") or {}).items() if v[0] or v[1]}
        if changed:
            text = ", ".join(f"{k} {old}→{new}" for k, (old, new) in sorted(changed.items()))
            out.append((int(call["first_step"]), text))
    return out


def plot_step_split(ax: Any, df: Any, settings: dict | None = None, target: float | None = STEP_TARGET_S) -> list[str]:
    """Stacked bars of each step's time by part (`STEP_PARTS` the log has), at x = step; a dashed
    line at `target` seconds; a dotted line before each step where a later call changed settings
    (`call_changes`), labelled with the change. Returns the labels drawn, in step order."""
    parts = [c for c in STEP_PARTS if c in df.columns]
    bottom = None
    for col in parts:
        vals = df[col].fillna(0.0).to_numpy()
        ax.bar(df["step"], vals, bottom=bottom, width=0.8, label=col)
        bottom = vals if bottom is None else bottom + vals
    if target is not None:
        ax.axhline(target, color="k", ls="--", lw=1, label=f"target {target:g} s")
    labels = []
    top = float(max(bottom.max() if bottom is not None else 0.0, target or 0.0))
    changes = call_changes(settings or {})
    if changes:  # headroom above the bars for the labels, so no bar hides them
        ax.set_ylim(0, top * 1.6)
    for first, text in changes:
        ax.axvline(first - 0.5, color="grey", ls=":", lw=1.2)
        ax.text(first - 0.4, top * 1.58, text.replace(", ", "\n"), va="top", ha="left", fontsize=6,
                color="dimgrey", bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})
        labels.append(text)
    ax.set(xlabel="step", ylabel="s")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return labels
