"""Where a GRPO step's learning signal comes from: correctness, speed, or failure kinds.

GRPO's advantage is an attempt's reward minus its group's mean (divided by the group's spread
under TRL's default `scale_rewards="group"`), so a group whose attempts all earn the same reward
teaches nothing, and what a group teaches is whatever makes its rewards differ. Held-out
evaluations of the mini runs (sessions 21-30) found GRPO policies faster but not more often
correct; this module measures, per step, how much of the reward spread lay between correct and
not-correct attempts and how much among the correct ones (speed, timing stability, R_str).

Guarantees of `signal_split(attempts, scale)`:
- `attempts` are (group key, reward, cls) with cls one of CLASSES; the reward is the one the
  advantage is computed from (the weighted sum of the rollout's centred returns).
- Per group, the sum of squared deviations from the group mean splits exactly (one-way ANOVA
  over two cells, correct / not correct) into ``correct``: between the two cells' means,
  ``speed``: within the correct cell, ``failure``: within the not-correct cell (compile
  failures against wrong answers, partial pass rates, R_str of compiled attempts).
- ``scale="group"`` averages each group's shares over the groups with spread (each such group's
  advantages have unit spread after TRL's scaling, so each weighs the same); ``"batch"`` and
  ``"none"`` pool the sums of squares over groups. Shares sum to 1 when some group has spread,
  and are NaN when none has (no signal).
- Counts: groups, groups without spread (``zero_spread``), groups holding both correct and
  not-correct attempts (``mixed``), all correct, none correct, and ``inverted``: mixed groups
  whose correct attempts earned less on average than the others (the advantage there pushes
  away from correctness). Unjudged attempts (compiled, no GPU) count as not correct.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Hashable, Iterable

CLASSES = ("not_compiled", "unjudged", "wrong", "correct")
SCALES = ("group", "batch", "none")
# Spread below this (relative to the rewards' size) is float residue, not signal (cf. the
# rollout's per-turn centring, which sets equal returns to exactly 0).
_EPS = 1e-9


@dataclass
class SignalSplit:
    groups: int = 0
    zero_spread: int = 0
    mixed: int = 0
    all_correct: int = 0
    none_correct: int = 0
    inverted: int = 0
    correct: float = float("nan")
    speed: float = float("nan")
    failure: float = float("nan")

    def to_row(self, prefix: str = "signal_") -> dict[str, float]:
        return {prefix + k: float(v) for k, v in asdict(self).items()}


def _ss(xs: list[float]) -> float:
    if len(xs) < 2:
        return 0.0
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs)


def group_parts(rewards: list[float], correct: list[bool]) -> tuple[float, float, float]:
    """(between correct/not-correct, within correct, within not-correct) sums of squares."""
    if len(rewards) != len(correct):
        raise ValueError("rewards and correct flags differ in length")
    yes = [r for r, c in zip(rewards, correct) if c]
    no = [r for r, c in zip(rewards, correct) if not c]
    n = len(rewards)
    m = sum(rewards) / n if n else 0.0
    between = sum(len(cell) * (sum(cell) / len(cell) - m) ** 2 for cell in (yes, no) if cell)
    return between, _ss(yes), _ss(no)


def signal_split(attempts: Iterable[tuple[Hashable, float, str]], scale: str = "group") -> SignalSplit:
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, not {scale!r}")
    groups: dict[Hashable, list[tuple[float, bool]]] = {}
    for key, reward, cls in attempts:
        if cls not in CLASSES:
            raise ValueError(f"unknown attempt class {cls!r}; known: {CLASSES}")
        r = float(reward)
        if not math.isfinite(r):
            raise ValueError(f"reward {reward!r} of group {key!r} is not finite")
        groups.setdefault(key, []).append((r, cls == "correct"))
    out = SignalSplit(groups=len(groups))
    shares: list[tuple[float, float, float]] = []
    pooled = [0.0, 0.0, 0.0]
    for items in groups.values():
        rewards = [r for r, _ in items]
        flags = [c for _, c in items]
        n_ok = sum(flags)
        if 0 < n_ok < len(flags):
            out.mixed += 1
            yes = [r for r, c in items if c]
            no = [r for r, c in items if not c]
            out.inverted += sum(yes) / len(yes) < sum(no) / len(no)
        out.all_correct += n_ok == len(flags)
        out.none_correct += n_ok == 0
        parts = group_parts(rewards, flags)
        total = sum(parts)
        size = max(1.0, max(abs(r) for r in rewards))
        if total <= (_EPS * size) ** 2 * len(rewards):
            out.zero_spread += 1
            continue
        shares.append(tuple(p / total for p in parts))
        pooled = [a + b for a, b in zip(pooled, parts)]
    if shares:
        if scale == "group":
            out.correct, out.speed, out.failure = (sum(s[i] for s in shares) / len(shares) for i in range(3))
        else:
            tot = sum(pooled)
            out.correct, out.speed, out.failure = (p / tot for p in pooled)
    return out


def attempt_class(res: Any) -> str:
    """CLASSES entry of one EvalResult: hack-flagged correct answers are not correct (they are
    not paid as correct either)."""
    if not res.compiled:
        return "not_compiled"
    if res.status == "compiled":
        return "unjudged"
    ok = bool(res.correct) and not any(f.startswith("hack:") for f in res.flags)
    return "correct" if ok else "wrong"


def _num(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def sample_result(r: Any) -> Any:
    """The EvalResult a judged sample row stands for (an evaluation's ``*_samples.parquet`` row as
    a namedtuple: task_id, status, compiled, correct, pass_rate, speedup, cv, flags and, when the
    samples recorded it, cv_robust), with what the reward reads."""
    from cudaperf.result import EvalResult

    flags = [str(f) for f in (r.flags if r.flags is not None else [])]
    correct = r.correct
    return EvalResult(r.task_id, "", status=str(r.status), compiled=bool(r.compiled),
                      correct=None if correct is None else bool(correct), pass_rate=_num(r.pass_rate),
                      speedup=_num(r.speedup), cv=_num(r.cv), cv_robust=_num(getattr(r, "cv_robust", None)),
                      flags=flags)


def samples_signal(samples: Any, reward_config: Any, scale: str = "group", by: str = "policy") -> Any:
    """`signal_split` of judged samples (an evaluation's ``*_samples.parquet``: task_id, status,
    compiled, correct, pass_rate, speedup, cv, flags), one row per value of `by`, grouping each
    policy's samples of one task as GRPO groups a task's attempts. The reward is R_ver under
    `reward_config` (`rewards.reward_components`, as the rollout pays it); R_str is not included.
    It answers, from samples already judged on a GPU, what a GRPO step on such groups would
    learn from: correctness or speed."""
    import pandas as pd

    from cudaperf.rewards import reward_components

    rows = []
    for key, df in samples.groupby(by, sort=True):
        att = []
        for r in df.itertuples(index=False):
            res = sample_result(r)
            att.append((r.task_id, reward_components(res, reward_config)["r_ver"], attempt_class(res)))
        rows.append({by: key, "samples": len(df), **signal_split(att, scale).to_row()})
    return pd.DataFrame(rows)


__all__ = ["CLASSES", "SCALES", "SignalSplit", "attempt_class", "group_parts", "sample_result", "samples_signal", "signal_split"]
