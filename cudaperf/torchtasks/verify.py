"""GPU verification and timing of torch2cuda tasks: variants vs the module, eager and torch.compile.

Run on a GPU machine: ``python -m cudaperf.torchtasks.verify --limit 50 --out data/bench/torch2cuda_<gpu>.jsonl``.

Guarantees: every variant is compiled with `cudaperf.compile.compile_candidate` (cached), then
for every small test and the perf test it is called through ctypes on fresh inputs
(`cudaperf.inputs.make_inputs`, a different seed per test) with outputs poisoned (NaN payload)
beforehand and checked against the module run on the same buffers with `cudaperf.check.compare`
under the task's tolerance; inputs are checked unchanged afterwards. Timings are medians of CUDA
event times after warm-up, for each correct variant, for PyTorch eager and (optionally) for
torch.compile, all in this process on this GPU; one JSON row per task is appended to the output
(rows already there are skipped, so a run can resume). The variants are trusted dataset code,
run in-process: this is not the sandboxed harness for model-written candidates.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from cudaperf.tasks import Task, TestConfig, load_tasks


def c_args(task: Task, test: TestConfig, pointers: dict[str, int]) -> list:
    """ctypes arguments in signature order: sizes as C int, buffers as device pointers."""
    out = []
    for p in task.signature:
        if p.role == "size":
            out.append(ctypes.c_int(int(test.sizes[p.name])))
        elif p.role == "scalar":
            out.append(ctypes.c_float(float(test.scalars.get(p.name, p.value))))
        else:
            if p.name not in pointers:
                raise KeyError(f"{task.task_id}: no device buffer for {p.name}")
            out.append(ctypes.c_void_p(int(pointers[p.name])))
    return out


def _device_buffers(task: Task, test: TestConfig, arrays: dict[str, Any]):
    import torch

    from cudaperf.check import poison_array

    bufs = {}
    for p in task.signature:
        if p.role == "in":
            bufs[p.name] = torch.as_tensor(np.ascontiguousarray(arrays[p.name])).cuda()
        elif p.role in ("out", "inout"):
            bufs[p.name] = torch.as_tensor(poison_array(task.numel(p, test), p.dtype)).cuda()
    return bufs


def cuda_time_ms(fn: Callable[[], Any], warmup: int = 3, reps: int = 20) -> tuple[float, float]:
    """(median ms, coefficient of variation) of `fn` over `reps` CUDA-event timed calls."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    med = statistics.median(times)
    cv = statistics.pstdev(times) / statistics.mean(times) if len(times) > 1 and statistics.mean(times) > 0 else 0.0
    return med, cv


def check_variant(task: Task, so_path: str, seed: int = 0) -> tuple[bool, list[str]]:
    import torch

    from cudaperf.check import compare
    from cudaperf.inputs import make_inputs
    from cudaperf.torchtasks.runtime import reference_outputs

    fn = getattr(ctypes.CDLL(so_path), task.entry)
    fails = []
    for j, test in enumerate(task.tests):
        arrays = make_inputs(task, test, seed + j)
        bufs = _device_buffers(task, test, arrays)
        before = {n: b.clone() for n, b in bufs.items() if n in arrays}
        fn(*c_args(task, test, {n: b.data_ptr() for n, b in bufs.items()}))
        torch.cuda.synchronize()
        want = reference_outputs(task, test, {n: bufs[n].cpu().numpy() for n in before}, device="cuda")
        for n, ref in want.items():
            p = next(q for q in task.signature if q.name == n)
            res = compare(bufs[n].cpu().numpy(), ref, tol=task.tol(), dtype=p.dtype)
            if not res.ok:
                fails.append(f"{test.name}/{n}: {res.summary()}")
        for n, b in before.items():
            if not torch.equal(b, bufs[n]):
                fails.append(f"{test.name}: input {n} was modified")
        del bufs, before
    return not fails, fails


def verify_task(task: Task, *, arch: str = "sm_90", seed: int = 0, reps: int = 20, with_compile: bool = True,
                cache_dir: str = ".cache/cudaperf") -> dict[str, Any]:
    import torch

    from cudaperf.compile import compile_candidate
    from cudaperf.inputs import make_inputs
    from cudaperf.torchtasks.runtime import instantiate

    row: dict[str, Any] = {"task_id": task.task_id, "family": task.family, "gpu": torch.cuda.get_device_name(),
                           "torch": torch.__version__, "variants": {}}
    perf = task.perf_test
    for v in task.variants:
        cr = compile_candidate(v.source, arch=arch, cache_dir=cache_dir)
        rec: dict[str, Any] = {"compiled": cr.ok}
        if cr.ok:
            ok, fails = check_variant(task, cr.so_path, seed)
            rec.update(correct=ok, failures=fails[:5])
            if ok:
                arrays = make_inputs(task, perf, seed + 100)
                bufs = _device_buffers(task, perf, arrays)
                fn = getattr(ctypes.CDLL(cr.so_path), task.entry)
                args = c_args(task, perf, {n: b.data_ptr() for n, b in bufs.items()})
                rec["ms"], rec["cv"] = cuda_time_ms(lambda: fn(*args), reps=reps)
                del bufs
        else:
            rec["log"] = cr.log[-2000:]
        row["variants"][v.name] = rec
    model, inputs = instantiate(task, perf, seed=seed, device="cuda")
    with torch.no_grad():
        row["eager_ms"], row["eager_cv"] = cuda_time_ms(lambda: model(*inputs), reps=reps)
        if with_compile:
            t0 = time.monotonic()
            cm = torch.compile(model)
            try:
                row["compile_ms"], row["compile_cv"] = cuda_time_ms(lambda: cm(*inputs), warmup=3, reps=reps)
                row["compile_seconds"] = round(time.monotonic() - t0, 1)
            except Exception as e:  # noqa: BLE001 - a baseline that cannot compile is recorded
                row["compile_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    for rec in row["variants"].values():
        if rec.get("ms"):
            rec["speedup_vs_eager"] = row["eager_ms"] / rec["ms"]
    del model, inputs
    torch.cuda.empty_cache()
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cudaperf.torchtasks.verify")
    ap.add_argument("--tasks", default="data/tasks/torch2cuda.jsonl.gz")
    ap.add_argument("--out", required=True)
    ap.add_argument("--families", nargs="*")
    ap.add_argument("--limit", type=int, default=0, help="at most this many new tasks (0: all)")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("verify needs a CUDA GPU (none visible); nothing was measured", file=sys.stderr)
        return 2
    tasks = load_tasks(a.tasks, families=a.families)
    out = Path(a.out)
    done = set()
    if out.exists():
        done = {json.loads(l)["task_id"] for l in out.read_text().splitlines() if l.strip()}
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    for t in tasks:
        if t.task_id in done:
            continue
        if a.limit and n >= a.limit:
            break
        row = verify_task(t, reps=a.reps, with_compile=not a.no_compile)
        with out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        n += 1
        print(t.task_id, {k: (v.get("correct"), round(v.get("ms", 0) or 0, 4)) for k, v in row["variants"].items()},
              round(row["eager_ms"], 4), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
