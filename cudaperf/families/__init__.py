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

# Fraction of families held out. Families are ordered by a stable hash of their name and the
# first 15% (rounded, at least one) go to test, the next 10% to val: exact proportions, and
# the order does not depend on which other families exist.
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


def _family_hash(family: str) -> int:
    return int(hashlib.sha256(family.encode()).hexdigest()[:12], 16)


def assign_splits(families: Iterable[str]) -> dict[str, str]:
    """{family: split} with exact held-out proportions (see SPLIT_FRACTIONS)."""
    ordered = sorted(set(families), key=_family_hash)
    n = len(ordered)
    n_test = max(1, round(SPLIT_FRACTIONS["test"] * n)) if n >= 3 else 0
    n_val = max(1, round(SPLIT_FRACTIONS["val"] * n)) if n >= 3 else 0
    out = {}
    for i, fam in enumerate(ordered):
        out[fam] = "test" if i < n_test else "val" if i < n_test + n_val else "train"
    return out


def generate_family(mod: ModuleType, seed: int = 0, split: str = "train") -> list[Task]:
    rng = random.Random(f"{seed}:{mod.FAMILY}")
    tasks = []
    for rec in mod.generate(rng):
        rec = dict(rec)
        rec.setdefault("family", mod.FAMILY)
        rec["split"] = split
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
    splits = assign_splits(mods)  # over ALL families, so a subset build keeps the same splits
    tasks: list[Task] = []
    seen: set[str] = set()
    for n in names:
        for t in generate_family(mods[n], seed, splits[n]):
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
