"""Rewards of DESIGN.md §1 as pure functions and as TRL reward-function classes.

Verifiable reward R_ver, gated:
  * does not compile:             R_comp = -alpha_comp                     (and nothing else)
  * compiles, pass rate p < 1:    R_corr = -alpha_wrong * (1 - p)
  * p = 1:                        R_speed = alpha_speed * clip(log2 S, s_min, s_max)
                                  R_cv    = -alpha_cv * cv
  (cv: RewardConfig.cv_statistic, by default the robust CV of the timed runs; see `timing_cv`)
A crash while running counts as p = 0 for the configurations not passed (it is "compiled, wrong");
so does a record the harness could not judge even on retry (an internal error), which a hostile
candidate could otherwise provoke to escape a wrong answer's penalty.
A correct candidate flagged as a hack (faster than the roofline bound, stateful across calls) is
paid no speed reward: it gets R_speed = 0 and keeps R_cv. A candidate that compiled but could not
be run (no GPU) gets `compile_only_reward` (smoke profile), never a guessed speed.

The classes follow TRL's reward-function signature
``__call__(prompts, completions, completion_ids=None, **dataset_columns) -> list[float | None]``,
take the task id from the dataset column ``task_id``, and hand every result record to TRL's
``log_extra`` (a column ``eval_result`` in the completions table) and the reward components to
``log_metric``. They are small and picklable: the harness is created lazily in each process.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from cudaperf.config import HarnessConfig, RewardConfig
from cudaperf.result import EvalResult, correctness_unjudged
from cudaperf.tasks import Task


CV_STATISTICS = ("robust", "classic")


def timing_cv(res: EvalResult, statistic: str = "robust") -> float | None:
    """The CV R_cv reads: the robust one (`harness.robust_cv`) when asked for and recorded (records
    from before session 31 have none: their classic CV), else the classic std / mean."""
    if statistic not in CV_STATISTICS:
        raise ValueError(f"cv_statistic must be one of {CV_STATISTICS}, not {statistic!r}")
    if statistic == "robust" and res.cv_robust is not None:
        return res.cv_robust
    return res.cv


def reward_components(res: EvalResult, cfg: RewardConfig) -> dict[str, float]:
    """R_comp / R_corr / R_speed / R_cv for one result, and their sum `r_ver`.

    Components that do not apply are 0.0 (so they average cleanly in logs); `r_ver` is the gated
    total of DESIGN §1.
    """
    out = {"r_comp": 0.0, "r_corr": 0.0, "r_speed": 0.0, "r_cv": 0.0}
    if not res.compiled:
        out["r_comp"] = -cfg.alpha_comp
    elif res.status == "compiled":
        # Compiled but never run (no GPU): the smoke profile's compile-only reward.
        out["r_corr"] = cfg.compile_only_reward
    elif res.pass_rate is None:
        # Ran but never reached a verdict on any test: a crash, or a record the harness could not
        # judge even on retry. Both pay as a crash: paying the compile-only 0 here let a
        # candidate that broke the harness (tests/adversarial/reply_fd_close.cu, H100 session 24)
        # earn more than a wrong answer.
        out["r_corr"] = -cfg.alpha_wrong
    elif res.pass_rate < 1.0 or not res.correct:
        # A candidate that passed every configuration but failed the recheck is still wrong.
        p = min(res.pass_rate, 1.0 - 1.0 / 1024) if not res.correct else res.pass_rate
        out["r_corr"] = -cfg.alpha_wrong * (1.0 - p)
    else:
        if res.rewardable_speed and res.speedup and res.speedup > 0:
            out["r_speed"] = cfg.alpha_speed * min(max(math.log2(res.speedup), cfg.s_min), cfg.s_max)
        out["r_cv"] = -cfg.alpha_cv * float(timing_cv(res, cfg.cv_statistic) or 0.0)
    out["r_ver"] = sum(out.values())
    return out


def r_ver(res: EvalResult, cfg: RewardConfig) -> float:
    return reward_components(res, cfg)["r_ver"]


def extract_code(completion: Any) -> str:
    """The CUDA translation unit in a completion; tolerant of chatter around the code.

    Accepts a string or TRL's conversational form (list of messages). Prefers the last fenced
    block tagged cuda/cpp/c++/c, else the longest fenced block, else the text itself.
    """
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        completion = "\n".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    text = str(completion or "")
    blocks: list[tuple[str, str]] = []
    pos = 0
    while True:
        start = text.find("```", pos)
        if start < 0:
            break
        nl = text.find("\n", start)
        if nl < 0:
            break
        lang = text[start + 3:nl].strip().lower()
        end = text.find("```", nl + 1)
        body = text[nl + 1:end if end >= 0 else len(text)]
        blocks.append((lang, body))
        if end < 0:
            break
        pos = end + 3
    tagged = [b for lang, b in blocks if lang in ("cuda", "cu", "cpp", "c++", "c")]
    if tagged:
        return tagged[-1].strip() + "\n"
    if blocks:
        return max((b for _, b in blocks), key=len).strip() + "\n"
    return text.strip() + "\n"


@dataclass
class _HarnessReward:
    """Shared plumbing: task lookup, lazy harness, batch evaluation, logging."""

    tasks: dict[str, Task]
    harness_config: HarnessConfig
    reward_config: RewardConfig = field(default_factory=RewardConfig)
    _harness: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict:
        d = dict(self.__dict__)
        d["_harness"] = None  # processes rebuild their own harness (sockets, threads, sqlite)
        return d

    @property
    def harness(self):
        if self._harness is None:
            from cudaperf.harness import Harness

            self._harness = Harness(self.harness_config)
        return self._harness

    def evaluate(self, completions: Sequence[Any], task_ids: Sequence[str]) -> list[EvalResult]:
        missing = sorted({t for t in task_ids if t not in self.tasks})
        if missing:
            raise KeyError(f"reward: unknown task ids {missing[:5]} (dataset column 'task_id')")
        items = [(self.tasks[t], extract_code(c)) for t, c in zip(task_ids, completions)]
        return self.harness.evaluate_many(items)


@dataclass
class VerifiableReward(_HarnessReward):
    """R_ver as a TRL reward function (weight it with GRPOConfig.reward_weights)."""

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], completion_ids=None,
                 task_id: Sequence[str] | None = None, log_extra: Callable | None = None,
                 log_metric: Callable | None = None, **_: Any) -> list[float | None]:
        if task_id is None:
            raise KeyError("reward: the dataset needs a 'task_id' column")
        results = self.evaluate(completions, task_id)
        comps = [reward_components(r, self.reward_config) for r in results]
        if log_extra is not None:
            log_extra("eval_result", [json.dumps(_brief(r)) for r in results])
        if log_metric is not None and comps:
            for k in ("r_comp", "r_corr", "r_speed", "r_cv"):
                log_metric(f"reward/{k}", sum(c[k] for c in comps) / len(comps))
            log_metric("harness/compile_rate", sum(r.compiled for r in results) / len(results))
            if not correctness_unjudged(results):
                log_metric("harness/correct_rate", sum(bool(r.correct) for r in results) / len(results))
        return [c["r_ver"] for c in comps]


def _brief(r: EvalResult) -> dict[str, Any]:
    """The result record without bulky fields, for the completions table."""
    d = r.to_dict()
    d["compile_log"] = d["compile_log"][-800:]
    return d
