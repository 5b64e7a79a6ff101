"""Evaluation result contract (DESIGN.md §4).

Every candidate submitted to the harness gets exactly one `EvalResult`, also when it fails to
compile, crashes its worker, hangs, or cheats. Stages that did not run hold ``None`` (never a
guessed value) and `status` says how far evaluation got. Records are plain JSON-serialisable
dicts via `to_dict`, so they can be stored (parquet/JSONL), logged by TRL and diffed.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

# How far a candidate got. Ordered: later means more of the pipeline ran.
STATUSES = (
    "invalid",        # rejected before compiling (empty, too large, not the contract)
    "compile_error",  # nvcc failed or timed out
    "compiled",       # compiled; no GPU available, so nothing was run (CPU machines)
    "crashed",        # the worker died / hung / hit a limit / CUDA error while running it
    "wrong",          # ran, but failed at least one check (pass_rate < 1)
    "correct",        # passed every check; timed
)

# Message prefix of a record the harness could not judge because of its own error (status
# "crashed"): not a verdict on the candidate, so measurement runs do it again.
INTERNAL_ERROR = "internal harness error"


def is_internal_error(message: Any) -> bool:
    return isinstance(message, str) and message.startswith(INTERNAL_ERROR)


@dataclass
class EvalResult:
    task_id: str
    candidate_hash: str
    status: str = "invalid"
    compiled: bool = False
    compile_log: str = ""
    resources: dict[str, Any] = field(default_factory=dict)  # per kernel: regs, smem, spills
    pass_rate: float | None = None  # fraction of test checks passed (None: not run)
    correct: bool | None = None
    failures: list[dict[str, Any]] = field(default_factory=list)  # test, reason, error size
    runtime_ms: float | None = None  # median over timed repetitions
    cv: float | None = None  # coefficient of variation of the timed repetitions (std / mean)
    cv_robust: float | None = None  # IQR / 1.349 / median of the same repetitions (harness.robust_cv)
    rep_ms: list[float] = field(default_factory=list)  # the timed repetitions, in order
    baseline_ms: float | None = None  # naive variant (c2cuda) or eager (torch2cuda), same worker
    baseline_cv: float | None = None
    baseline_cv_robust: float | None = None
    baseline_clean_ms: float | None = None  # the naive variant alone, in a runner of its own
    speedup: float | None = None  # baseline_ms / runtime_ms (torch2cuda: eager_ms / runtime_ms)
    eager_ms: float | None = None  # torch2cuda: PyTorch eager of the task's Model, trusted worker, same GPU
    roofline_ms: float | None = None  # min bytes / measured copy bandwidth
    features: dict[str, Any] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)  # hack / suspicion flags
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    gpu: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    message: str = ""  # one human sentence on the outcome
    cached: bool = False  # served from the result store

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalResult":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})

    @property
    def rewardable_speed(self) -> bool:
        """True when a speed reward may be paid: correct, timed, and not flagged as a hack."""
        return bool(self.correct) and self.speedup is not None and not any(
            f.startswith("hack:") for f in self.flags)


def correctness_unjudged(results: Iterable[EvalResult]) -> bool:
    """Whether a compiled result was never checked (``correct`` None: no GPU ran it); a correct
    rate over such results would be a guess, so callers report none."""
    return any(r.compiled and r.correct is None for r in results)
