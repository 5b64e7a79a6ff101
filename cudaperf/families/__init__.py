"""The C->CUDA dataset: one module per family of serial programs, and the builder.

Every family module in this package defines

    FAMILY: str          # unique family name (also the unit of held-out splits)
    CATEGORY: str        # coarse group: map, reduction, scan, stencil, linalg, sparse, ...
    def generate(rng: random.Random) -> list[dict]

where `generate` returns task records satisfying the contract of `cudaperf.tasks`
(task_from_dict must accept each): a serial C reference written the way scientific C is
written, a signature with roles and shapes, >= 3 test configurations (an edge size such as 1,
a size that is not a multiple of the block size, and one `perf` size at which the naive
variant runs well above launch overhead on an H200), and >= 3 CUDA variants in the candidate
contract with "naive" (one thread per iteration, the direct translation) first.

Guarantees of `build_dataset`: task ids are unique, every record validates, generation is
deterministic for a seed, and the split is assigned by FAMILY (whole families are held out for
val/test), so accuracy on val/test speaks of programs never seen in training.
"""
from __future__ import annotations

import gzip
import hashlib
import importlib
import json
import pkgutil
import random
from pathlib import Path
from types import ModuleType
from typing import Iterable

from cudaperf.tasks import Task, TaskError, task_from_dict

# Fraction of families held out; assignment is by a stable hash of the family name so adding a
# family never moves existing ones between splits.
SPLIT_FRACTIONS = {"test": 0.15, "val": 0.10}


def family_modules() -> dict[str, ModuleType]:
    """Every family module in this package, by FAMILY name."""
    mods: dict[str, ModuleType] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if not hasattr(mod, "FAMILY") or not hasattr(mod, "generate"):
            continue
        if mod.FAMILY in mods:
            raise TaskError(f"family {mod.FAMILY!r} defined twice ({info.name})")
        mods[mod.FAMILY] = mod
    return mods


def split_of(family: str) -> str:
    h = int(hashlib.sha256(family.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    if h < SPLIT_FRACTIONS["test"]:
        return "test"
    if h < SPLIT_FRACTIONS["test"] + SPLIT_FRACTIONS["val"]:
        return "val"
    return "train"


def generate_family(mod: ModuleType, seed: int = 0) -> list[Task]:
    rng = random.Random(f"{seed}:{mod.FAMILY}")
    tasks = []
    for rec in mod.generate(rng):
        rec = dict(rec)
        rec.setdefault("family", mod.FAMILY)
        rec["split"] = split_of(mod.FAMILY)
        rec.setdefault("meta", {})
        rec["meta"] = {**rec["meta"], "category": getattr(mod, "CATEGORY", "")}
        tasks.append(task_from_dict(rec))
    return tasks


def build_dataset(families: Iterable[str] | None = None, seed: int = 0) -> list[Task]:
    mods = family_modules()
    names = list(families) if families else sorted(mods)
    unknown = [n for n in names if n not in mods]
    if unknown:
        raise TaskError(f"unknown families {unknown}; known: {sorted(mods)}")
    tasks: list[Task] = []
    seen: set[str] = set()
    for n in names:
        for t in generate_family(mods[n], seed):
            if t.task_id in seen:
                raise TaskError(f"duplicate task id {t.task_id!r} (family {n})")
            seen.add(t.task_id)
            tasks.append(t)
    return tasks


def write_dataset(tasks: Iterable[Task], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt") as fh:
        for t in tasks:
            fh.write(json.dumps(t.to_dict()) + "\n")
    return path
