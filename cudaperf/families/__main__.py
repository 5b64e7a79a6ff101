"""`python -m cudaperf.families build|stats`: write the C->CUDA dataset and summarise it."""
from __future__ import annotations

import argparse
import collections
import sys

from cudaperf.families import build_dataset, family_modules, write_dataset


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cudaperf.families")
    ap.add_argument("action", choices=("build", "stats", "list"))
    ap.add_argument("--out", default="data/tasks/c2cuda.jsonl.gz")
    ap.add_argument("--families", nargs="*")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if a.action == "list":
        for name, mod in family_modules().items():
            print(f"{name:28s} {getattr(mod, 'CATEGORY', '')}")
        return 0
    tasks = build_dataset(a.families, seed=a.seed)
    per = collections.Counter(t.family for t in tasks)
    splits = collections.Counter(t.split for t in tasks)
    nvar = sum(len(t.variants) for t in tasks)
    for fam, n in sorted(per.items()):
        print(f"{fam:28s} {n:5d}")
    print(f"{len(tasks)} tasks, {len(per)} families, {nvar} variants; splits {dict(splits)}")
    if a.action == "build":
        print(f"wrote {write_dataset(tasks, a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
