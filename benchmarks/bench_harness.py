"""Harness benchmark (issue 3's targets). Not a test: it prints figures and writes them to JSON.

On a GPU machine it measures
  1. throughput: candidates evaluated per minute at full fidelity (compile, every check, timing
     against the naive variant, recheck) with a COLD cache (fresh compile cache, reference cache
     and result store), over dataset variants;
  2. the KernelBench-style path on the same machine: the same kernels built with
     torch.utils.cpp_extension.load_inline (one extension per candidate, as KernelBench does),
     in parallel processes, then run once; candidates per minute;
  3. repeatability: two independent timing runs over the same variants (result store off,
     compile cache warm): median CV of the timed repetitions, and the Spearman rank correlation
     of the two runs' runtimes.

    python benchmarks/bench_harness.py --tasks data/tasks/c2cuda.jsonl.gz --out data/bench/
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaperf import envinfo, gpuworker, harnessbench, noise  # noqa: E402
from cudaperf.config import get_profile  # noqa: E402
from cudaperf.harness import Harness  # noqa: E402
from cudaperf.cpuacct import ProcCpu  # noqa: E402
from cudaperf.stacksample import StackSampler  # noqa: E402
from cudaperf.tasks import Task, load_tasks  # noqa: E402


def pick_variants(tasks: list[Task], n: int, seed: int) -> list[tuple[Task, str, str]]:
    """n (task, variant name, source) triples spread over families, every variant of each task."""
    rng = random.Random(seed)
    by_fam: dict[str, list[Task]] = {}
    for t in tasks:
        by_fam.setdefault(t.family, []).append(t)
    for v in by_fam.values():
        rng.shuffle(v)
    out: list[tuple[Task, str, str]] = []
    fams = sorted(by_fam)
    i = 0
    while len(out) < n and any(by_fam.values()):
        fam = fams[i % len(fams)]
        i += 1
        if by_fam[fam]:
            t = by_fam[fam].pop()
            out += [(t, v.name, v.source) for v in t.variants]
    return out[:n]


def throughput(items: list[tuple[Task, str, str]], cache: str, workers_per_gpu: int, gpus: str = "all",
               share_runner: bool = False, keep_runners: int = 0, init_lock: bool = False) -> dict:
    h = Harness(get_profile("mini", **{"harness.cache_dir": cache, "harness.gpus": gpus,
                                       "harness.share_runner": share_runner or keep_runners > 0,
                                       "harness.keep_runners": keep_runners,
                                       "harness.init_lock": init_lock}).harness,
                workers_per_gpu=workers_per_gpu)
    # Per-task one-off work (references on the CPU, the naive build) is measured apart: it is
    # paid once per task, not per candidate. Then the compile cache is emptied again, so every
    # candidate (and each task's naive baseline) is compiled cold.
    tasks_used = list({t.task_id: t for t, _, _ in items}.values())
    t0 = time.perf_counter()
    prep_errors = h.prepare(tasks_used, progress=True)
    prep_s = time.perf_counter() - t0
    for sub in ("compile", "so"):
        shutil.rmtree(Path(cache) / sub, ignore_errors=True)
    gpuworker.request_stats(reset=True)
    t0 = time.perf_counter()
    with StackSampler() as sampler, ProcCpu() as proc_cpu:
        res = h.evaluate_many([(t, s) for t, _, s in items], progress=True, dedupe=False)
    wall = time.perf_counter() - t0
    h.close()
    status: dict[str, int] = {}
    for r in res:
        status[r.status] = status.get(r.status, 0) + 1
    # Every stage the records timed, GPU-lock waits and exclusive holds included: where time goes.
    keys = sorted({k for r in res for k in r.timings})
    stage = {k: round(float(np.sum([r.timings.get(k, 0.0) for r in res])), 3) for k in keys}
    return {"candidates": len(res), "tasks": len(tasks_used), "prepare_s": prep_s,
            "prepare_errors": prep_errors, "wall_s": wall, "per_minute": len(res) / wall * 60,
            # End to end: the per-task one-off work counted against these candidates too (an RL
            # step pays it once per task; a group of 8 samples shares it, these 3 variants do).
            "per_minute_with_prepare": len(res) / (wall + prep_s) * 60,
            "perf_references_prepared": h.memory_references_fit(tasks_used),
            "status_counts": status, "stage_seconds_sum": stage, "cpu_cores": os.cpu_count(),
            "gpus": len(h.gpus), "workers_per_gpu": workers_per_gpu, "share_runner": share_runner or keep_runners > 0,
            "keep_runners": keep_runners,
            "in_shared_runners": sum("shared_runner" in r.timings for r in res),
            "in_kept_runners": sum(r.timings.get("runner_reused", 0) > 0 for r in res),
            # runners shut down after a candidate for the device memory left in them (LEAK_LIMIT_BYTES)
            "runners_retired_for_memory": sum(r.timings.get("runner_retired", 0) for r in res),
            # Where the time went: runner requests by command (seconds waited for replies, summed
            # over threads), the machine's CPU busy share over the run (saturated CPUs vs a slow
            # step), and the harness threads' Python stacks.
            "runner_requests": gpuworker.request_stats(reset=True),
            "cpu_busy_share": proc_cpu.machine_busy_share(),
            # CPU seconds per command name (nvcc's cicc/cudafe++/ptxas/cc1plus, the runners, the
            # references, this Python process) over the run: which work fills the cores.
            "cpu_seconds_by_command": proc_cpu.by_command(),
            "cpu_seconds_rusage": proc_cpu.self_and_children(),
            "stack_samples": sampler.report(30).splitlines(),
            "records": [{"task_id": t.task_id, "variant": v, "status": r.status, "runtime_ms": r.runtime_ms,
                         "speedup": r.speedup, "cv": r.cv, "cv_robust": r.cv_robust, "rep_ms": r.rep_ms,
                         "message": r.message[:200],
                         **{k: r.timings[k] for k in ("runner_reused", "device_left_mb", "device_left_nvml", "runner_retired")
                            if k in r.timings}}
                        for (t, v, _), r in zip(items, res)]}


_BINDING = r'''
#include <torch/extension.h>
extern "C" void {entry}({params});
void run({targs}) {{ {entry}({cargs}); }}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{ m.def("run", &run); }}
'''


def _load_inline_one(args: tuple[str, str, list[tuple[str, str, bool]], str]) -> dict:
    """Build one candidate the KernelBench way (its own extension, own build dir) and run it."""
    name, source, sig, entry = args
    import torch
    from torch.utils.cpp_extension import load_inline

    t0 = time.perf_counter()
    params = ", ".join(f"{ct} {n}" for n, ct, _ in sig)
    targs = ", ".join(f"torch::Tensor {n}" if ptr else f"{ct} {n}" for n, ct, ptr in sig)
    cargs = ", ".join(f"({ct}){n}.data_ptr()" if ptr else n for n, ct, ptr in sig)
    build = tempfile.mkdtemp(prefix="kb-")
    try:
        mod = load_inline(name=name, cpp_sources=_BINDING.format(entry=entry, params=params, targs=targs,
                                                                cargs=cargs),
                          cuda_sources=source, build_directory=build, verbose=False,
                          extra_cuda_cflags=["-O3"])
        built = time.perf_counter() - t0
        ok = True
        err = ""
    except Exception as e:  # a failed build is a result here too
        built, ok, err = time.perf_counter() - t0, False, str(e)[-300:]
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return {"name": name, "build_s": built, "ok": ok, "error": err}


def load_inline_rate(tasks: list[Task], n: int, seed: int, procs: int) -> dict:
    items = pick_variants(tasks, n, seed + 1)
    jobs = []
    for i, (t, v, src) in enumerate(items):
        sig = [(p.name, p.ctype, p.is_pointer) for p in t.signature]
        jobs.append((f"kb_{i}_{v}", src, sig, t.entry))
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=procs) as ex:
        out = list(ex.map(_load_inline_one, jobs))
    wall = time.perf_counter() - t0
    return {"candidates": len(out), "parallel_processes": procs, "wall_s": wall,
            "per_minute": len(out) / wall * 60, "median_build_s": float(np.median([o["build_s"] for o in out])),
            "built_ok": sum(o["ok"] for o in out), "details": out}


def speed_ratio(throughput: dict, load_inline: dict) -> tuple[float | None, str | None]:
    """Harness candidates per minute over load_inline's, or (None, why) when load_inline's figure is
    not its throughput: with fewer candidates than parallel processes the pool sat partly idle
    (session 25 built 4 in a pool of 16 and printed '32x', up to four times too high), and a
    failed build is no candidate built."""
    n, procs = load_inline["candidates"], load_inline["parallel_processes"]
    if n < procs:
        return None, f"{n} load_inline candidates for {procs} parallel processes: the pool was not full; use >= {procs}"
    if load_inline["built_ok"] < n:
        return None, f"{n - load_inline['built_ok']} of {n} load_inline builds failed"
    return throughput["per_minute"] / load_inline["per_minute"], None


def repeatability(items: list[tuple[Task, str, str]], cache: str, workers_per_gpu: int) -> dict:
    """Two independent timing runs (result store off) over the same variants; caches warm."""
    cfg = get_profile("mini", **{"harness.cache_dir": cache}).harness
    a, b = (noise.measure(items, cfg, workers_per_gpu) for _ in range(2))
    c = noise.compare(a, b)
    return {"variants": c["variants"], "timed_both": c["timed_both"], "median_cv": c["median_cv_a"],
            "median_cv_robust": c.get("median_cv_robust_a"),
            "p90_cv": c["p90_cv_a"], "spearman": c["spearman"], "median_rel_shift": c["median_rel_shift"],
            "compare": c,
            "pairs": [{"task_id": t, "variant": v, "run1_ms": x, "run2_ms": y} for t, v, x, y in
                      zip(a["task_id"], a["variant"], a["runtime_ms"].tolist(), b["runtime_ms"].tolist())]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", default="data/tasks/c2cuda.jsonl.gz")
    ap.add_argument("--n-throughput", type=int, default=600)
    ap.add_argument("--n-load-inline", type=int, default=16)
    ap.add_argument("--n-repeat", type=int, default=200)
    ap.add_argument("--workers-per-gpu", type=int, nargs="+", default=[12],
                    help="runner threads per GPU; several values: one cold-cache throughput run each "
                         "(the first is the headline figure and is used for repeatability)")
    ap.add_argument("--gpu-sets", nargs="+", default=["all"],
                    help="harness GPU sets for the throughput runs, e.g. '0' '0,1': one cold run per set and "
                         "workers value (the pool over one GPU against two)")
    ap.add_argument("--runners", nargs="+", default=["own"], choices=["own", "shared", "kept"],
                    help="own: a fresh runner per candidate (the default harness); shared: "
                         "HarnessConfig.share_runner (clean candidates of a task share runners); kept: shared "
                         "runners also kept from task to task (HarnessConfig.keep_runners = --keep-limit); one "
                         "cold throughput run per value")
    ap.add_argument("--keep-limit", type=int, default=64, help="candidates a kept runner judges before it is "
                    "replaced (--runners kept)")
    ap.add_argument("--init-lock", nargs="+", default=["off"], choices=["off", "on"],
                    help="HarnessConfig.init_lock: runner context creations under the GPU lock (held shared, so "
                         "never beside a timed region); 'off on' runs each throughput configuration both ways to "
                         "see whether they cause the timing spikes (cv_under_load)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip", nargs="*", default=[], choices=["throughput", "load_inline", "repeat"])
    ap.add_argument("--out", default="data/bench")
    a = ap.parse_args(argv)
    if not envinfo.gpu_available():
        print("bench_harness: no GPU visible; this benchmark measures GPU evaluation and cannot run here.")
        return 2
    tasks = load_tasks(a.tasks)
    gpu = envinfo.gpus()[0]["name"]
    out = {"gpu": gpu, "manifest": envinfo.machine_manifest(with_torch=False),
           "command": envinfo.invocation(), "tasks_file": a.tasks}
    d = Path(a.out)
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"harness_{envinfo.gpu_slug(gpu)}.json"

    def save() -> None:  # after every section, so a run cut short keeps what it measured
        f.write_text(json.dumps(out, indent=1, default=str))

    items = pick_variants(tasks, a.n_throughput, a.seed)
    cache = tempfile.mkdtemp(prefix="bench-")
    if "throughput" not in a.skip:
        for mode, gs, w, il in itertools.product(a.runners, a.gpu_sets, a.workers_per_gpu, a.init_lock):
            run_cache = tempfile.mkdtemp(prefix="bench-")  # its own cache and result store: cold
            r = throughput(items, run_cache, w, gs, share_runner=mode == "shared",
                           keep_runners=a.keep_limit if mode == "kept" else 0, init_lock=il == "on")
            shutil.rmtree(run_cache, ignore_errors=True)
            key = ((str(w) if gs == "all" else f"{w}@gpus={gs}") + ("" if mode == "own" else f"@{mode}")
                   + ("@init_lock" if il == "on" else ""))
            r["init_lock"] = il == "on"
            out.setdefault("throughput_by_workers", {})[key] = r
            out.setdefault("throughput", r)
            print(f"throughput, {mode} runners, {w} workers per GPU on GPUs {gs} ({r['gpus']}), init lock {il}: "
                  f"{r['per_minute']:.0f} candidates/min ({r['candidates']} in {r['wall_s']:.1f} s; one-off task "
                  f"preparation {r['prepare_s']:.1f} s, perf-size references made ahead: "
                  f"{r['perf_references_prepared']}; with it {r['per_minute_with_prepare']:.0f}/min) "
                  f"{r['status_counts']}; CPUs busy {r['cpu_busy_share']}", flush=True)
            # Timing stability at full load, classic against robust CV (harness.robust_cv): the
            # repeatability figure below is measured apart, with less beside it.
            r["cv_under_load"] = c = harnessbench.cv_under_load(r["records"])
            print(f"  timing under load, {c['correct']} correct: median CV {c['median_cv']:.4f} "
                  f"(robust {c['median_cv_robust']:.4f}); CV > 10 % for {c['share_cv_above_10pct']:.1%} "
                  f"(robust {c['share_cv_robust_above_10pct']:.1%})", flush=True)
            save()
    if "load_inline" not in a.skip:
        out["load_inline"] = load_inline_rate(tasks, a.n_load_inline, a.seed, os.cpu_count() or 1)
        print(f"load_inline: {out['load_inline']['per_minute']:.1f} candidates/min "
              f"(median build {out['load_inline']['median_build_s']:.1f} s)", flush=True)
        save()
    if "repeat" not in a.skip:
        out["repeatability"] = repeatability(items[: a.n_repeat], cache, a.workers_per_gpu[0])
        r = out["repeatability"]
        print(f"repeatability: median CV {r['median_cv']:.4f} (robust {r['median_cv_robust']}), Spearman {r['spearman']}, "
              f"timed {r['timed_both']}/{r['variants']}", flush=True)
    shutil.rmtree(cache, ignore_errors=True)
    if "throughput" in out and "load_inline" in out:
        out["speed_ratio"], why = speed_ratio(out["throughput"], out["load_inline"])
        print(f"ratio: {out['speed_ratio']:.1f}x the load_inline path" if why is None
              else f"ratio: not computed ({why})")
        if why:
            out["speed_ratio_note"] = why
    save()
    print(f"wrote {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
