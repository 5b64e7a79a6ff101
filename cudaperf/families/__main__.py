"""`python -m cudaperf.families build|stats|list`: write the C->CUDA dataset and summarise it.

build  writes the task file (default data/tasks/c2cuda.jsonl.gz, deterministic bytes) and the
       statistics next to it (<stem>_stats.json: counts by family, category, dtype, split and
       in-family split, and de-duplication counts);
stats  prints the same summary without writing anything;
list   prints every family with its category.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cudaperf.families import build, dataset_stats, family_modules, write_dataset, write_stats


def stats_path(out: str | Path) -> Path:
    out = Path(out)
    stem = out.name.split(".")[0]
    return out.with_name(f"{stem}_stats.json")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cudaperf.families")
    ap.add_argument("action", choices=("build", "stats", "list"))
    ap.add_argument("--out", default="data/tasks/c2cuda.jsonl.gz")
    ap.add_argument("--families", nargs="*")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-dedup", action="store_true", help="keep tasks whose normalised references coincide")
    a = ap.parse_args(argv)
    if a.action == "list":
        for name, mod in family_modules().items():
            print(f"{name:28s} {getattr(mod, 'CATEGORY', '')}")
        return 0
    tasks, report = build(a.families, seed=a.seed, dedup=not a.no_dedup)
    st = dataset_stats(tasks, report)
    for fam, n in st["by_family"].items():
        dup = st["dedup"]["duplicates_by_family"].get(fam, 0)
        print(f"{fam:28s} {st['family_split'][fam]:5s} {n:5d}" + (f"  ({dup} duplicates dropped)" if dup else ""))
    print(f"{st['tasks']} tasks, {st['families']} families, {st['variants']} variants; "
          f"splits {st['by_split']}; in-family {st['by_in_family_split']}")
    print(f"de-duplication: {report.generated} generated, {len(report.duplicates)} duplicates dropped, "
          f"{report.kept} kept")
    if a.action == "build":
        print(f"wrote {write_dataset(tasks, a.out)}")
        print(f"wrote {write_stats(st, stats_path(a.out))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
