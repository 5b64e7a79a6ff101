"""Build the torch2cuda dataset: python -m cudaperf.torchtasks [--out PATH] [--kernelbench SRC].

Writes the tasks (gzip JSONL, byte-identical on rebuild), `<stem>_stats.json` (counts) and,
when KernelBench problems are given, `<stem>_decontam.json` (drops and nearest overlaps, names
and ids only). KernelBench itself is never written.
"""
from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from cudaperf.families import write_dataset
from cudaperf.torchtasks import build

DEFAULT_KB = "/work/shared/data/kernelbench/kernelbench_l1_l3.jsonl"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cudaperf.torchtasks")
    ap.add_argument("--out", default="data/tasks/torch2cuda.jsonl.gz")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kernelbench", default=DEFAULT_KB,
                    help="KernelBench JSONL / checkout / saved dataset / hub name; 'none' skips decontamination")
    ap.add_argument("--families", nargs="*", default=None)
    a = ap.parse_args(argv)
    problems = None
    if a.kernelbench.lower() != "none":
        from cudaperf.kernelbench import load_problems

        problems = load_problems(a.kernelbench)
    tasks, rep = build(a.families, a.seed, kernelbench=problems)
    out = Path(a.out)
    write_dataset(tasks, out)
    stem = out.name.split(".")[0]
    stats = {**rep.to_dict(), "n_tasks": len(tasks),
             "by_split": dict(sorted(collections.Counter(t.split for t in tasks).items())),
             "by_category": {}, "variants_per_task_min": min((len(t.variants) for t in tasks), default=0),
             "tests_per_task_min": min((len(t.tests) for t in tasks), default=0),
             "decontaminated_against": (f"KernelBench L1-L3 ({len(problems)} problems)" if problems else None)}
    from cudaperf.torchtasks import family_modules

    cats = {m.FAMILY: m.CATEGORY for m in family_modules().values()}
    stats["by_category"] = dict(sorted(collections.Counter(cats[t.family] for t in tasks).items()))
    (out.parent / f"{stem}_stats.json").write_text(json.dumps(stats, indent=1, sort_keys=True) + "\n")
    if rep.decontam is not None:
        (out.parent / f"{stem}_decontam.json").write_text(json.dumps(rep.decontam, indent=1) + "\n")
    print(json.dumps({k: stats[k] for k in ("n_tasks", "generated", "decontam_dropped", "by_split")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
