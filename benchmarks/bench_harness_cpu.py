"""The harness's own CPU per candidate, measured without a GPU (host-emulated runner).

On the GPU machines the harness is CPU-bound (bench_harness.py: 75-84 % of 16 cores busy, about
3.6 CPU-seconds per candidate, of which the harness's Python process took about 1.1 and the
runners another 1.1). This benchmark drives the same Harness through the host emulator
(cudaperf.hostemu: the runner built against tests/hostemu, gcc on C candidates) over dataset
tasks at their real test and perf sizes, with each task's C reference as its candidates, and
reports the CPU seconds the harness process (all its threads, not its children) spends per
candidate: drawing inputs, references, staging files, checks, comparisons, bookkeeping. The
runners' CPU is not comparable here (they run the C reference instead of launching kernels), so
it is not reported as a harness cost. With --profile, yappi's per-function CPU over all threads.

    python benchmarks/bench_harness_cpu.py --n-tasks 6 --per-task 3 --out data/bench
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Families whose C reference streams its data once: at perf size a call takes milliseconds on a
# CPU, so the emulated runner's timing does not dominate the benchmark's wall time.
STREAMING = ("map_unary", "map_binary_broadcast", "axpby_strided", "clamp_select", "reduce_full",
             "reduce_rows", "scan", "gather", "scatter", "transpose_layout", "argminmax")


def pick_tasks(tasks: list, n: int, seed: int) -> list:
    """`n` tasks of the streaming families, one family after another, seeded."""
    rng = random.Random(seed)
    by_family: dict[str, list] = {}
    for t in tasks:
        if t.family in STREAMING and t.tests:
            by_family.setdefault(t.family, []).append(t)
    fams = sorted(by_family)
    rng.shuffle(fams)
    out = []
    while len(out) < n and any(by_family.values()):
        for f in fams:
            if by_family[f] and len(out) < n:
                out.append(by_family[f].pop(rng.randrange(len(by_family[f]))))
    return out


def top_functions(stats, n: int = 25) -> list[dict]:
    """yappi function stats as rows, by own CPU time (tsub), grouped by module:function."""
    agg: dict[str, list[float]] = {}
    for s in stats:
        key = f"{Path(s.module).name}:{s.name}"
        a = agg.setdefault(key, [0.0, 0.0, 0])
        a[0] += s.tsub
        a[1] += s.ttot
        a[2] += s.ncall
    rows = [{"function": k, "own_cpu_s": round(v[0], 3), "total_cpu_s": round(v[1], 3), "calls": int(v[2])}
            for k, v in agg.items()]
    return sorted(rows, key=lambda r: -r["own_cpu_s"])[:n]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", default="data/tasks/c2cuda.jsonl.gz")
    ap.add_argument("--n-tasks", type=int, default=6)
    ap.add_argument("--per-task", type=int, default=3, help="candidates per task (the bench on the GPU: 3)")
    ap.add_argument("--workers", type=int, default=2, help="runner threads (this machine's cores)")
    ap.add_argument("--runners", choices=["own", "kept"], default="kept")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", action="store_true", help="per-function CPU with yappi (slows the run)")
    ap.add_argument("--out", default="", help="directory for harness_cpu_<host>.json (nothing written if empty)")
    a = ap.parse_args(argv)

    from cudaperf import envinfo
    from cudaperf.config import get_profile
    from cudaperf.hostemu import emulated_harness
    from cudaperf.tasks import load_tasks

    tasks = pick_tasks(load_tasks(a.tasks), a.n_tasks, a.seed)
    items = [(t, t.reference + f"\n/* candidate {k} */\n") for t in tasks for k in range(a.per_task)]
    work = Path(tempfile.mkdtemp(prefix="bench-cpu-"))
    kept = a.runners == "kept"
    cfg = get_profile("mini", **{"harness.cache_dir": str(work / "cache"), "harness.share_runner": kept,
                                 "harness.keep_runners": 64 if kept else 0}).harness
    prof = None
    with emulated_harness(cfg, work / "libs", workers_per_gpu=a.workers) as h:
        t0, c0 = time.perf_counter(), time.process_time()
        errors = h.prepare(tasks, progress=False)
        prep_wall, prep_cpu = time.perf_counter() - t0, time.process_time() - c0
        if a.profile:
            import yappi

            yappi.set_clock_type("cpu")
            yappi.start()
        t0, c0 = time.perf_counter(), time.process_time()
        res = h.evaluate_many(items, progress=True, dedupe=False)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if a.profile:
            yappi.stop()
            prof = top_functions(yappi.get_func_stats())
    status: dict[str, int] = {}
    for r in res:
        status[r.status] = status.get(r.status, 0) + 1
    stages = sorted({k for r in res for k in r.timings})
    out = {"machine": envinfo.machine_manifest(with_torch=False), "command": envinfo.invocation(),
           "runner": "host-emulated", "runners": a.runners, "workers": a.workers,
           "tasks": [t.task_id for t in tasks], "candidates": len(res), "status_counts": status,
           "prepare_errors": errors, "prepare_wall_s": round(prep_wall, 2), "prepare_cpu_s": round(prep_cpu, 2),
           "wall_s": round(wall, 2), "harness_cpu_s": round(cpu, 2),
           "harness_cpu_s_per_candidate": round(cpu / max(1, len(res)), 3),
           "stage_seconds_sum": {k: round(sum(float(r.timings.get(k, 0.0)) for r in res), 3) for k in stages},
           "profiled": a.profile, "top_functions": prof}
    print(f"{len(res)} candidates of {len(tasks)} tasks {status}: harness process {cpu:.1f} CPU-s in {wall:.1f} s "
          f"({out['harness_cpu_s_per_candidate']:.3f} CPU-s a candidate; preparation {prep_cpu:.1f} CPU-s apart)"
          + (" [yappi on: slower]" if a.profile else ""))
    for row in prof or []:
        print(f"  {row['own_cpu_s']:8.3f} s own  {row['total_cpu_s']:8.3f} s total  {row['calls']:7d}  {row['function']}")
    if a.out:
        d = Path(a.out)
        d.mkdir(parents=True, exist_ok=True)
        f = d / f"harness_cpu_{envinfo.machine_tag(out['machine'])}.json"
        f.write_text(json.dumps(out, indent=1, default=str))
        print(f"wrote {f}")
    return 0 if status.get("correct", 0) == len(res) else 1


if __name__ == "__main__":
    sys.exit(main())
