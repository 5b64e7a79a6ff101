"""Static features of every variant of the C->CUDA dataset -> data/features/static_c2cuda.parquet.

Without --resources (what a 2-core CPU machine can afford: about a minute) occupancy uses the
feature extractor's defaults (32 registers per thread, declared static shared memory) and the
parquet metadata says so. With --resources every task's variants are compiled in one nvcc call
(cudaperf.compile.compile_batch, one-by-one fallback) and registers, shared memory and spills come
from ptxas: about 3,300 nvcc runs, roughly 5 minutes on a 16-core machine, free on a rerun (the
compile cache).

    python benchmarks/featurize_dataset.py                          # no compiler report
    python benchmarks/featurize_dataset.py --resources --jobs 16    # 16-core machine
    python benchmarks/featurize_dataset.py --max-tasks 50 --out /tmp/s.parquet
"""
from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cudaperf import featurize  # noqa: E402
from cudaperf.families import build_dataset  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resources", action="store_true", help="compile every variant for ptxas figures")
    ap.add_argument("--jobs", type=int, default=0, help="worker processes (0 = all cores)")
    ap.add_argument("--max-tasks", type=int, default=0, help="stratified slice of this many tasks (0 = all)")
    ap.add_argument("--seed", type=int, default=0, help="dataset seed")
    ap.add_argument("--cc", default="9.0", help="compute capability for occupancy")
    ap.add_argument("--arch", default="sm_90", help="nvcc -arch with --resources")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache/cudaperf"), help="compile cache")
    ap.add_argument("--out", default=str(featurize.default_path(root=ROOT)), help="parquet to write")
    args = ap.parse_args(argv)

    tasks = build_dataset(seed=args.seed)
    tasks = featurize.stratified_tasks(tasks, args.max_tasks, seed=args.seed)
    t0 = time.monotonic()
    df = featurize.static_table(tasks, resources=args.resources, jobs=args.jobs, progress=True,
                                cc=args.cc, arch=args.arch, cache_dir=args.cache_dir)
    secs = time.monotonic() - t0
    cmd = "python benchmarks/featurize_dataset.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    meta = featurize.table_meta(resources=args.resources, cc=args.cc, arch=args.arch,
                                n_tasks=len(tasks), seed=args.seed, command=cmd.strip())
    meta["seconds"] = round(secs, 1)
    if args.resources:
        meta["variants_without_resources"] = int((~df["resources_ok"]).sum())
    path = featurize.save(df, args.out, meta=meta)
    print(f"{len(df)} variants of {len(tasks)} tasks in {secs:.1f} s; parse_ok "
          f"{df['parse_ok'].mean():.1%}; resources_ok {df['resources_ok'].mean():.1%} -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
