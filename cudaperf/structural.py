"""The structural reward R_str (DESIGN §1) as a TRL reward-function class, without a GPU.

Guarantees of `StructuralReward`:
- TRL's signature ``__call__(prompts, completions, completion_ids=None, task_id=None, **kw)
  -> list[float | None]``, one value per completion, task ids from the dataset column
  ``task_id``; unknown task ids raise KeyError naming them (a mis-wired dataset must not train
  silently on zeros).
- Each completion's code (`cudaperf.rewards.extract_code`) gets static features
  (`cudaperf.features.static_features`, which never raises on hostile input), normalised with
  `phi_hat` against the task's naive variant, and is scored by a ranker of `cudaperf.ranker`.
  Only the ranker's static columns (``x_<name>``) can be filled without a GPU; a ranker that
  needs profiled columns is rejected at construction.
- Scale: ``R_str = alpha_speed · clip((s(y) - s(naive)) / per_log2, s_min, s_max)`` where
  ``per_log2`` is the ranker's score gap per doubling of speed fitted on training pairs
  (`cudaperf.ranker.fit_scale`): the value is the ranker's estimate of log2 speedup over the
  naive variant, so it lives on R_speed's axis (alpha_speed · clip(log2 S, s_min, s_max)) and a
  median 2x pair is alpha_speed · 1 apart. RewardConfig.w_str is NOT applied here (as
  `cudaperf.rewards.VerifiableReward` does not apply w_ver): pass it in GRPOConfig.reward_weights.
  s(naive) comes from ``naive_features`` ({task_id: raw features}, e.g. the featurize table the
  ranker was trained on) where given, else from the task's naive source featurised here.
- Gate (RewardConfig.str_gate): 'always' pays every completion; 'compiled' pays when the
  result says it compiled, or, with no results, when the source parsed (parse_ok); 'correct'
  pays only when the aligned result (``results`` kwarg: EvalResult or its dict) is correct and
  not flagged as a hack; with no results, 'correct' falls back to the parse_ok gate (CPU smoke
  runs have no verdicts). A closed gate yields None (TRL: not applicable).
- Picklable (plain data plus the ranker; LightGBM boosters pickle their model text); the
  naive-variant scores are cached per task and rebuilt lazily in each process.
- Throughput: `score_features` scores pre-computed feature dicts in one vectorised call
  (benchmarks/bench_rstr.py measures >= 1,000 candidates/s; parsing sources is the slower part).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from cudaperf.config import RewardConfig
from cudaperf.features import FEATURE_NAMES, phi_hat, static_features
from cudaperf.result import EvalResult
from cudaperf.tasks import Task

GATES = ("correct", "compiled", "always")


def _as_result(r: Any) -> EvalResult | None:
    if r is None or isinstance(r, EvalResult):
        return r
    if isinstance(r, dict):
        return EvalResult.from_dict(r)
    raise TypeError(f"results must hold EvalResult or dict records, got {type(r).__name__}")


@dataclass
class StructuralReward:
    tasks: dict[str, Task]
    model: Any  # a cudaperf.ranker LinearRanker / GBMRanker, or a path to a saved one
    reward_config: RewardConfig = field(default_factory=RewardConfig)
    # {task_id: raw features of its naive variant}, e.g. from the cudaperf.featurize table the
    # ranker was trained on (compiler-informed occupancy); tasks not in it are featurised here.
    naive_features: dict[str, dict] | None = None
    _naive: dict[str, tuple] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.model, (str, Path)):
            from cudaperf.ranker import load

            self.model = load(self.model)
        if self.reward_config.str_gate not in GATES:
            raise ValueError(f"str_gate must be one of {GATES}, got {self.reward_config.str_gate!r}")
        want = [f"x_{n}" for n in FEATURE_NAMES]
        extra = [c for c in self.model.columns if c not in want]
        if extra:
            raise ValueError(f"R_str scores static features only; this ranker also needs {extra[:3]}")
        self._cols = [want.index(c) for c in self.model.columns]
        per = float(self.model.scale.get("per_log2", float("nan")))
        if not (math.isfinite(per) and per > 0):
            raise ValueError("ranker has no reward scale (train it with cudaperf.ranker, which "
                             "calls fit_scale)")
        self._per_log2 = per

    # ----------------------------------------------------------------- scoring
    def _naive_score(self, task_id: str) -> tuple[float, dict]:
        if task_id not in self._naive:
            t = self.tasks[task_id]
            nf = (self.naive_features or {}).get(task_id)
            if nf is None:
                nf = static_features(t.baseline_variant.source, sizes=self._sizes(t)).values()
            self._naive[task_id] = (float(self._raw([phi_hat(nf, nf)])[0]), nf)
        return self._naive[task_id]

    @staticmethod
    def _sizes(t: Task) -> dict:
        return dict(t.perf_test.sizes) if t.tests else {}

    def _raw(self, phis: Sequence[np.ndarray]) -> np.ndarray:
        X = np.asarray(phis, float).reshape(len(phis), -1)[:, self._cols]
        return np.asarray(self.model.score(X), float)

    def score_features(self, features: Sequence[Any], task_ids: Sequence[str]) -> list[float]:
        """Scaled R_str (ungated) of pre-computed features (StaticFeatures or dicts)."""
        cfg = self.reward_config
        phis, base = [], []
        for f, tid in zip(features, task_ids):
            s0, nf = self._naive_score(tid)
            phis.append(phi_hat(f, nf))
            base.append(s0)
        if not phis:
            return []
        est = (self._raw(phis) - np.asarray(base)) / self._per_log2
        vals = cfg.alpha_speed * np.clip(est, cfg.s_min, cfg.s_max)
        return [float(v) for v in vals]

    # ----------------------------------------------------------------- gate
    def _open(self, parse_ok: bool, res: EvalResult | None) -> bool:
        gate = self.reward_config.str_gate
        if gate == "always":
            return True
        if res is None:
            return parse_ok
        if gate == "compiled":
            return bool(res.compiled)
        return bool(res.correct) and not any(f.startswith("hack:") for f in res.flags)

    # ----------------------------------------------------------------- TRL entry point
    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], completion_ids=None,
                 task_id: Sequence[str] | None = None, results: Sequence[Any] | None = None,
                 log_metric: Callable | None = None, **_: Any) -> list[float | None]:
        from cudaperf.rewards import extract_code

        if task_id is None:
            raise KeyError("reward: the dataset needs a 'task_id' column")
        if len(task_id) != len(completions):
            raise ValueError(f"{len(completions)} completions but {len(task_id)} task ids")
        missing = sorted({t for t in task_id if t not in self.tasks})
        if missing:
            raise KeyError(f"R_str: unknown task ids {missing[:5]} (dataset column 'task_id')")
        if results is not None and len(results) != len(completions):
            raise ValueError(f"{len(completions)} completions but {len(results)} results")
        res = [_as_result(r) for r in results] if results is not None else [None] * len(completions)
        out: list[float | None] = [None] * len(completions)
        feats, tids, where = [], [], []
        for i, (c, tid) in enumerate(zip(completions, task_id)):
            r = res[i]
            f = static_features(extract_code(c), resources=(r.resources if r else None) or None,
                                sizes=self._sizes(self.tasks[tid]))
            if self._open(f.parse_ok, r):
                feats.append(f)
                tids.append(tid)
                where.append(i)
        for i, v in zip(where, self.score_features(feats, tids)):
            out[i] = v
        if log_metric is not None and completions:
            paid = [v for v in out if v is not None]
            log_metric("reward/r_str_gate_open", len(paid) / len(out))
            if paid:
                log_metric("reward/r_str", sum(paid) / len(paid))
        return out


__all__ = ["GATES", "StructuralReward"]
