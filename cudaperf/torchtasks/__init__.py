"""The PyTorch->CUDA (torch2cuda) dataset: one module per op family, and the builder.

Every family module here defines ``FAMILY``, ``CATEGORY`` and ``generate(rng) -> list[dict]``
returning task records (`cudaperf.tasks` contract, track "torch2cuda"): a KernelBench-format
module (`Model`, `get_inputs`, `get_init_inputs`, sizes as module-level names), a signature of
device pointers (sizes, then forward inputs, then module parameters in `named_parameters`
order, then outputs), >= 3 small tests plus one perf test, and >= 2 CUDA variants ("naive"
first, then an optimised one) in the candidate contract. `runtime` runs a reference module on
the harness's buffers.

Guarantees of `build(seed)`: the same seed and modules give the same tasks (family modules
draw only from the `random.Random` they are given); task ids are unique; splits are assigned
by family with `cudaperf.families.assign_splits` (held-out families) and
`in_family_split` inside train families; when KernelBench problems are given, every task whose
operator sequence AND input shapes equal a KernelBench problem's is dropped (`cudaperf.decontam`)
and the report lists the drops and the nearest overlaps.
"""
from __future__ import annotations

import importlib
import pkgutil
import random
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Iterable

from cudaperf.tasks import Task, TaskError, task_from_dict


def family_modules() -> dict[str, ModuleType]:
    mods: dict[str, ModuleType] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name == "runtime":
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, "FAMILY") and hasattr(mod, "generate"):
            if mod.FAMILY in mods:
                raise TaskError(f"family {mod.FAMILY!r} defined twice")
            mods[mod.FAMILY] = mod
    return mods


@dataclass
class BuildReport:
    seed: int
    generated: int = 0
    kept: int = 0
    by_family: dict[str, int] = field(default_factory=dict)
    decontam: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "generated": self.generated, "kept": self.kept,
                "by_family": self.by_family,
                "decontam_dropped": len(self.decontam["dropped"]) if self.decontam else None}


def generate_family(mod: ModuleType, seed: int = 0) -> list[Task]:
    rng = random.Random(f"{seed}:{mod.FAMILY}")
    return [task_from_dict(r) for r in mod.generate(rng)]


def build(families: Iterable[str] | None = None, seed: int = 0, *,
          kernelbench: list | None = None) -> tuple[list[Task], BuildReport]:
    """(tasks, report). `kernelbench`: problems (cudaperf.kernelbench.Problem) to decontaminate
    against; None skips decontamination (the report then says so)."""
    from cudaperf.families import assign_splits, in_family_split

    mods = family_modules()
    names = sorted(families) if families else sorted(mods)
    unknown = [n for n in names if n not in mods]
    if unknown:
        raise TaskError(f"unknown torch2cuda families {unknown}; known: {sorted(mods)}")
    splits = assign_splits(mods)
    report = BuildReport(seed=seed)
    tasks: list[Task] = []
    seen: set[str] = set()
    for n in names:
        for t in generate_family(mods[n], seed):
            report.generated += 1
            if t.task_id in seen:
                raise TaskError(f"duplicate task id {t.task_id!r}")
            seen.add(t.task_id)
            t.split = splits[n]
            tasks.append(t)
    if kernelbench is not None:
        from cudaperf.decontam import decontaminate

        tasks, report.decontam = decontaminate(tasks, kernelbench)
    for n in names:
        fam = [t for t in tasks if t.family == n]
        report.by_family[n] = len(fam)
        if splits[n] == "train":
            inner = in_family_split([t.task_id for t in fam], seed)
            for t in fam:
                t.meta["in_family_split"] = inner[t.task_id]
    report.kept = len(tasks)
    return tasks, report
