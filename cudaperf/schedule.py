"""The order in which a GRPO run meets its tasks, fixed before step 1.

Guarantees:
- `task_order(ids, per_step, steps, seed)` is the whole run's sequence of task ids: one seeded
  permutation of the pool per pass, each cut to a whole number of steps (as TRL's own sampler
  drops an incomplete batch), concatenated until `steps` steps are covered. The same pool, step
  size and seed give the same sequence, and a longer run (more steps) extends it without changing
  its beginning, so a resumed run meets the tasks it would have met.
- `StepSchedule.tasks_at(step, rank)` is the slice of that sequence a training step takes on one
  process. The trainer is given the rows in this order with TRL's shuffling off, so the rollout of
  step k knows step k+1's tasks and can prepare them (naive builds, perf-size references) while
  step k is judged and updated: the preparation no longer sits in front of a step's judging
  (sessions 24-28 measured 12-15 s of preparation a fresh step, of which judging waited 5-9 s).
  The rollout checks each step's tasks against the schedule and prepares ahead only when they
  match, so a sampler that orders rows otherwise costs nothing but the lookahead.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence


def task_order(ids: Sequence[str], per_step: int, steps: int, seed: int = 0) -> list[str]:
    """Task ids in the order a run of `steps` steps of `per_step` prompts takes them.

    A pool smaller than one step is repeated to fill the step (every step then takes the same
    tasks); `steps` <= 0 gives the pool once, in its own order."""
    if per_step < 1:
        raise ValueError("per_step must be >= 1")
    ids = list(ids)
    if not ids:
        return []
    if len(ids) < per_step:
        out = list(ids)
        while len(out) < per_step:
            out += ids[:per_step - len(out)]
        return out
    if steps <= 0:
        return ids
    rng = random.Random(seed)
    whole = len(ids) // per_step * per_step  # a pass ends on a step boundary
    out: list[str] = []
    while len(out) < steps * per_step:
        out += rng.sample(ids, len(ids))[:whole]
    return out[:steps * per_step]


@dataclass(frozen=True)
class StepSchedule:
    """Which tasks each training step takes: `order` (from `task_order`) cut into global steps of
    `tasks_per_step * world_size` prompts, each process taking its own consecutive `tasks_per_step`
    (the way TRL's sampler and accelerate's dataloader split a global batch). A pool smaller than
    one step repeats: every step then takes the whole of `order`."""
    order: tuple[str, ...]
    tasks_per_step: int
    world_size: int = 1

    def tasks_at(self, step: int, rank: int = 0) -> list[str]:
        """Task ids of 0-based `step` on process `rank`; [] past the end of the run."""
        g = self.tasks_per_step * self.world_size
        if step < 0 or not self.order:
            return []
        if len(self.order) <= g:  # a small pool: the same rows every step
            start = 0
        else:
            start = step * g
            if start + g > len(self.order):
                return []
        lo = start + rank * self.tasks_per_step
        return list(self.order[lo:lo + self.tasks_per_step])


__all__ = ["StepSchedule", "task_order"]
