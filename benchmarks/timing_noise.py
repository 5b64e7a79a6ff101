"""Timing noise of the evaluation GPU while other work runs (issue 10's layout evidence). Not a test.

Times a fixed set of reference variants (the first `--n` variants of the dataset's stratified
order, every variant of each task) three times through the harness on `--eval-gpus`: on an idle
machine, while `--during` (e.g. a GRPO training run on another GPU) is running, and idle again
after it ends (so drift over time is told apart from the load's effect). Each run is compared with
the first by `cudaperf.noise.compare`: median CV of the repetitions, median / p90 relative shift of
a variant's median runtime, median slow-down ratio, Spearman rank correlation.

    # two GPUs: policy training on GPU 0, evaluation on GPU 1 (the paper's layout)
    python benchmarks/timing_noise.py --eval-gpus 1 --settle-s 90 \
        --during "python benchmarks/grpo_gpu.py train --run mini-M-both --budget-s 420"
    # one GPU: the same load on the evaluation GPU itself (what the layout avoids)
    python benchmarks/timing_noise.py --eval-gpus 0 --during "..."

Writes <out>/timing_noise_<gpu>.json (summary, settings, manifest, command) and
<out>/timing_noise_<gpu>.parquet (one row per variant and run). The load's own output goes to
<out>/timing_noise_load.log. A load that ends before the loaded run finishes is reported
(`load_running_throughout: false`): that run then mixes loaded and idle time.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaperf import envinfo, noise  # noqa: E402
from cudaperf.config import get_profile  # noqa: E402
from cudaperf.tasks import load_tasks, stratified_prefix  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", default="data/tasks/c2cuda.jsonl.gz")
    ap.add_argument("--n", type=int, default=100, help="reference variants to time")
    ap.add_argument("--eval-gpus", default="all", help="harness GPUs ('all' or a comma list, e.g. '1')")
    ap.add_argument("--workers-per-gpu", type=int, default=8)
    ap.add_argument("--during", default="", help="shell command of the load; empty: two idle runs only")
    ap.add_argument("--settle-s", type=float, default=60.0, help="seconds between starting the load and timing")
    ap.add_argument("--out", default="data/bench")
    a = ap.parse_args(argv)
    if not envinfo.gpu_available():
        print("timing_noise: no GPU visible; this benchmark measures GPU timings and cannot run here.")
        return 2
    tasks = stratified_prefix(load_tasks(a.tasks), a.n)
    items = [(t, v.name, v.source) for t in tasks for v in t.variants][: a.n]
    cfg = get_profile("mini", **{"harness.gpus": a.eval_gpus}).harness
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    slug = envinfo.gpu_slug(envinfo.gpus()[0]["name"])
    runs: dict[str, pd.DataFrame] = {}
    t0 = time.monotonic()
    print(f"{len(items)} variants of {len(tasks)} tasks on GPUs {a.eval_gpus}: idle run", flush=True)
    runs["idle"] = noise.measure(items, cfg, a.workers_per_gpu)
    load_info: dict = {}
    if a.during:
        with open(out_dir / "timing_noise_load.log", "w") as log:
            load = subprocess.Popen(a.during, shell=True, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            print(f"load started (pid {load.pid}): {a.during}; timing after {a.settle_s:.0f} s", flush=True)
            time.sleep(a.settle_s)
            started_running = load.poll() is None
            t1 = time.monotonic()
            runs["loaded"] = noise.measure(items, cfg, a.workers_per_gpu)
            load_info = {"command": a.during, "settle_s": a.settle_s,
                         "loaded_run_s": round(time.monotonic() - t1, 1),
                         "load_running_throughout": bool(started_running and load.poll() is None),
                         "load_exit_code_before_stop": load.poll()}
            if load.poll() is None:  # the load has served its purpose; SIGINT lets it checkpoint
                os.killpg(load.pid, signal.SIGINT)
                try:
                    load.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    os.killpg(load.pid, signal.SIGKILL)
                    load.wait()
        print("idle run after the load", flush=True)
    runs["idle_after"] = noise.measure(items, cfg, a.workers_per_gpu)
    summary = {name: noise.compare(runs["idle"], df) for name, df in runs.items() if name != "idle"}
    rows = pd.concat([df.assign(run=name) for name, df in runs.items()], ignore_index=True)
    rows.to_parquet(out_dir / f"timing_noise_{slug}.parquet", index=False)
    res = {"gpu": envinfo.gpus()[0]["name"], "eval_gpus": a.eval_gpus, "variants": len(items),
           "tasks": len(tasks), "workers_per_gpu": a.workers_per_gpu, "load": load_info,
           "against_idle": summary, "seconds": round(time.monotonic() - t0, 1),
           "command": envinfo.invocation(),
           "manifest": envinfo.machine_manifest(with_torch=False)}
    (out_dir / f"timing_noise_{slug}.json").write_text(json.dumps(res, indent=1, default=str))
    for name, c in summary.items():
        print(f"{name} vs idle: median CV {c['median_cv_a']} -> {c['median_cv_b']}, median shift "
              f"{c['median_rel_shift']}, median ratio {c['median_ratio_b_over_a']}, Spearman {c['spearman']} "
              f"({c['timed_both']} of {c['variants']} timed both times)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
