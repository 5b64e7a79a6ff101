"""Evaluate every dev-task variant and print each record's outcome and where its time went.

    python benchmarks/diag_dev.py [--workers-per-gpu N] [--profile mini] [--grouped]

Diagnostics, not a test: one line per variant (status, speedup, CV, flags) and its harness stage
timings in seconds (slot_wait, clean_baseline, runner_start, check, time, recheck, GPU-lock waits
and exclusive holds, total). ``--grouped`` evaluates each task's variants in one runner
(`Harness.evaluate_groups`, as dataset verification does) instead of one runner per variant.
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cudaperf.config import get_profile  # noqa: E402
from cudaperf.devtasks import dev_tasks  # noqa: E402
from cudaperf.harness import Harness  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--workers-per-gpu", type=int, default=4)
ap.add_argument("--profile", default="mini")
ap.add_argument("--grouped", action="store_true", help="a task's variants share one runner")
a = ap.parse_args()
h = Harness(get_profile(a.profile, **{"harness.cache_dir": tempfile.mkdtemp()}).harness, use_store=False,
            workers_per_gpu=a.workers_per_gpu)
t0 = time.perf_counter()
h.prepare(dev_tasks())
print(f"prepare {time.perf_counter() - t0:.1f}s")
items = [(t, v.source) for t in dev_tasks() for v in t.variants]
names = [f"{t.task_id}:{v.name}" for t in dev_tasks() for v in t.variants]
t0 = time.perf_counter()
if a.grouped:
    res = [r for g in h.evaluate_groups([(t, [v.source for v in t.variants]) for t in dev_tasks()]) for r in g]
else:
    res = h.evaluate_many(items)
print(f"evaluate {len(items)} in {time.perf_counter() - t0:.1f}s (workers per GPU {a.workers_per_gpu}, "
      f"{'grouped' if a.grouped else 'one by one'})")
for n, r in zip(names, res):
    print(n, r.status, r.message, r.runtime_ms, r.baseline_ms, r.speedup, r.cv, r.flags)
    print("    timings", json.dumps(r.timings))
    if r.failures:
        print("   ", json.dumps(r.failures[0], default=str)[:600])
h.close()
