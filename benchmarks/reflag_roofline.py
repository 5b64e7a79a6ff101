"""Recompute the roofline flag of committed C->CUDA measurements from the current task bounds.

    python benchmarks/reflag_roofline.py                 # rewrite data/measurements/c2cuda_nvidia-h200_*.parquet
    python benchmarks/reflag_roofline.py --dry-run       # report only

The harness flags a correct candidate ``hack:faster_than_roofline`` (and withholds its reward)
when its runtime is below ``roofline_slack * min_bytes / copy bandwidth``. Measurements keep the
verdict of the ``meta.min_bytes`` in force when they were taken; after a family's bound is
corrected (and the dataset rebuilt: ``python -m cudaperf.families build``), this applies
`cudaperf.measurements.reflag_roofline` to every measurement file of one GPU, IN PLACE: rows and
columns are kept, only ``flags`` changes; the file's metadata is kept and gains a
``roofline_reflag`` note (when, bandwidth, slack, flags removed / added per family). The copy
bandwidth is the one the harness uses (``data/ceilings/<gpu-slug>.json``, via
`cudaperf.ceilings.load`) and the slack the harness default (``HarnessConfig.roofline_slack``).
A file where nothing changes is left untouched.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cudaperf import measurements as M  # noqa: E402
from cudaperf.config import HarnessConfig  # noqa: E402
from cudaperf.families import committed_or_built  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=str(ROOT / "data" / "measurements"))
    ap.add_argument("--gpu-slug", default="nvidia-h200")
    ap.add_argument("--ceilings", default=None, help="ceilings JSON (default data/ceilings/<gpu-slug>.json)")
    ap.add_argument("--tasks", default=None, help="task file (default: the committed dataset)")
    ap.add_argument("--slack", type=float, default=HarnessConfig().roofline_slack)
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args(argv)

    ceil = Path(a.ceilings) if a.ceilings else ROOT / "data" / "ceilings" / f"{a.gpu_slug}.json"
    bw = float(json.loads(ceil.read_text())["copy_bandwidth_bytes_per_s"])
    tasks = committed_or_built(a.tasks)
    files = M.measurement_files(a.dir, a.gpu_slug)
    if not files:
        print(f"no c2cuda_{a.gpu_slug}_*.parquet under {a.dir}")
        return 1
    print(f"copy bandwidth {bw / 1e12:.3f} TB/s ({ceil.relative_to(ROOT) if ceil.is_relative_to(ROOT) else ceil}), "
          f"slack {a.slack}, {len(tasks)} tasks")
    total = {"removed": 0, "added": 0, "before": 0, "after": 0}
    remaining = []
    for f in files:
        table = M.load_measurements(f)
        new, rep = M.reflag_roofline(table, tasks, bw, a.slack)
        total["removed"] += rep.removed
        total["added"] += rep.added
        total["before"] += rep.flagged_before
        total["after"] += rep.flagged_after
        remaining += rep.remaining
        print(f"{f.name}: {rep.rows_checked} timed rows, flags {rep.flagged_before} -> {rep.flagged_after} "
              f"(removed {rep.removed}, added {rep.added}) {rep.by_family}"
              + (f"; {len(rep.unknown_tasks)} unknown tasks" if rep.unknown_tasks else ""))
        if a.dry_run or not (rep.removed or rep.added):
            continue
        meta = M.measurement_metadata(f)
        notes = list(meta.get("roofline_reflag") or [])
        notes.append({"at": M.now_utc(), "script": "benchmarks/reflag_roofline.py",
                      "copy_bandwidth_bytes_per_s": bw, "slack": a.slack,
                      "why": "meta.min_bytes corrected to true lower bounds (inout buffers overwritten "
                             "unread, gathers counting repeated rows, early-exit graph steps, pitched padding)",
                      **rep.to_dict()})
        M.save_measurements(new, f, metadata={**meta, "roofline_reflag": notes})
    print(f"all files: flags {total['before']} -> {total['after']} "
          f"(removed {total['removed']}, added {total['added']})")
    for r in remaining:
        print(f"  still flagged: {r['task_id']} {r['variant']} {r['runtime_ms']:.4f} ms "
              f"< {a.slack} x {r['roofline_ms']:.4f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
