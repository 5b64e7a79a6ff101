"""GPU verification and timing of torch2cuda tasks: variants vs the module, eager and torch.compile.

Run on a GPU machine: ``python -m cudaperf.torchtasks.verify --limit 50 --out data/bench/torch2cuda_<gpu>.jsonl``;
for the whole dataset within a device call: ``--procs 12 --prebuilt .prebuilt/torch2cuda.tar.gz --max-seconds 500``.

Guarantees: every variant is compiled with `cudaperf.compile.compile_candidate` (cached), then
for every small test and the perf test it is called through ctypes on fresh inputs
(`cudaperf.inputs.make_inputs`, a different seed per test; one draw per test serves all variants
of the task) with outputs poisoned (NaN payload) beforehand and checked with
`cudaperf.check.compare` under the task's tolerance against the module run in float64 on the same
inputs (the harness' reference precision, never TF32); inputs are checked unchanged afterwards.
Timings are medians of CUDA event times after warm-up, the L2 evicted before every repetition (as
the harness times), for each correct variant, for PyTorch eager and (optionally) for
torch.compile, on this GPU; the baselines run with TF32 off (``"tf32": false`` in the row), so
they compute in the float32 the variants must match. One JSON row per task is appended to the
output (rows already there without an ``error`` are skipped, so a run can resume). The variants
are trusted dataset code, run in-process: this is not the sandboxed harness for model-written
candidates.

Parallel runs (``--procs N``): N spawned processes take tasks as they free up; correctness checks
and torch.compile's compilation run concurrently under the shared side of a GPU lock across the
processes (`cudaperf.gpulock.GpuLock`, the harness' own), every timed region under its exclusive
side, so no two timings ever overlap with other GPU work. ``--prebuilt`` installs libraries built on the CPU machine with the
same nvcc (`cudaperf.prebuilt`), so the GPU machine runs no nvcc for them.
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import statistics
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable

import numpy as np

from cudaperf.config import L2_FLUSH_BYTES
from cudaperf.gpulock import GpuLock
from cudaperf.tasks import Task, TestConfig, load_tasks, stratified_order


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


_LOCK: GpuLock | None = None  # this process's GPU lock (set by the pool's worker initialiser)


class _NoLock:
    """A direct `verify_task` call outside `main`: nothing else shares the GPU through us."""

    shared = exclusive = staticmethod(contextlib.nullcontext)


_NO_LOCK = _NoLock()


# Timing budget per timed function (ms of GPU time, warm-up included). A few naive variants run
# over a second a call (fused linear-reduce naive: 1,358 ms); 3 + 20 calls of those held the
# exclusive GPU lock for half a minute, and the 10 slowest of 362 tasks were 59 % of all timed
# GPU time (session 13). Slow kernels vary little between calls, so fewer repetitions lose little.
TIME_BUDGET_MS = 2000.0
MIN_REPS = 5


def rep_plan(est_ms: float, warmup: int, reps: int, budget_ms: float = TIME_BUDGET_MS,
             min_reps: int = MIN_REPS) -> tuple[int, int]:
    """(warm-up calls, timed repetitions) for a function whose call takes about `est_ms`: as asked
    (`warmup` more warm-up calls, `reps` repetitions) when that fits in `budget_ms`, else as many
    repetitions as fit but never fewer than `min_reps` (nor more than asked), and warm-up calls
    only in what is left of the budget."""
    fit = int(budget_ms // max(float(est_ms), 1e-6))
    n_reps = max(min(reps, min_reps), min(reps, fit))
    n_warm = max(0, min(warmup, fit - n_reps))
    return n_warm, n_reps


def cuda_time_ms(fn: Callable[[], Any], warmup: int = 3, reps: int = 20, flush: Any = None,
                 budget_ms: float = TIME_BUDGET_MS) -> tuple[float, float]:
    """(median ms, coefficient of variation) of `fn` over up to `reps` CUDA-event timed calls
    (`rep_plan`: fewer for a function so slow that `reps` of them exceed `budget_ms`); `flush` (a
    device tensor) is zeroed before each repetition, outside the timed region, to evict the L2.
    The first warm-up call is timed to plan the rest (and a second one when the first looks slow)."""
    import torch

    def timed() -> float:
        if flush is not None:
            flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        return a.elapsed_time(b)

    n_warm, n_reps = 0, reps
    if warmup > 0:
        est, done = timed(), 1
        if warmup > 1 and rep_plan(est, 0, reps, budget_ms)[1] < reps:
            # looks slow: a first call can carry one-off costs (module loading, library handles)
            est, done = min(est, timed()), 2
        n_warm, n_reps = rep_plan(est, warmup - done, reps, budget_ms)
    for _ in range(n_warm):
        fn()
    torch.cuda.synchronize()
    times = [timed() for _ in range(n_reps)]
    med = statistics.median(times)
    cv = statistics.pstdev(times) / statistics.mean(times) if len(times) > 1 and statistics.mean(times) > 0 else 0.0
    return med, cv


def reference_cases(task: Task, seed: int = 0, precisions: list[str] | None = None
                    ) -> list[tuple[TestConfig, dict[str, Any], dict[str, np.ndarray]]]:
    """(test, inputs, reference outputs) for every test of `task`: fresh inputs per test (seed +
    test index) and the module's outputs on them in float64 on the GPU (the harness' reference
    precision). float64 also keeps cuDNN's and cuBLAS' TF32 out of the reference: a float32 conv
    reference computed with TF32 is off by ~1e-3 relative and fails exact float32 kernels.

    A float64 module that does not fit in GPU memory (attention over 8k tokens materialises its
    score matrix in float64: 65 GB, several verify processes at once) is run again in float32 with
    TF32 off instead, where PyTorch's memory-efficient kernels apply. Each test's reference
    precision ("float64" or "float32") is appended to `precisions` when given."""
    import torch

    from cudaperf.inputs import make_inputs
    from cudaperf.torchtasks.runtime import reference_outputs

    cases = []
    for j, test in enumerate(task.tests):
        arrays = make_inputs(task, test, seed + j)
        try:
            want, prec = reference_outputs(task, test, arrays, device="cuda", double=True), "float64"
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()
            with strict_fp32():
                want, prec = reference_outputs(task, test, arrays, device="cuda"), "float32"
        cases.append((test, arrays, want))
        if precisions is not None:
            precisions.append(prec)
    return cases


def check_variant(task: Task, so_path: str, seed: int = 0,
                  cases: list[tuple[TestConfig, dict[str, Any], dict[str, np.ndarray]]] | None = None
                  ) -> tuple[bool, list[str]]:
    """Call the variant in `so_path` on every case (`reference_cases(task, seed)` unless given:
    one set serves all variants of a task) and compare its outputs with the reference under the
    task's tolerance; inputs must come back unchanged. Returns (all passed, failure messages)."""
    import torch

    from cudaperf.check import compare

    fn = getattr(ctypes.CDLL(so_path), task.entry)
    fails = []
    for test, arrays, want in (cases if cases is not None else reference_cases(task, seed)):
        bufs = _device_buffers(task, test, arrays)
        before = {n: b.clone() for n, b in bufs.items() if n in arrays}
        fn(*c_args(task, test, {n: b.data_ptr() for n, b in bufs.items()}))
        torch.cuda.synchronize()
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


@contextlib.contextmanager
def strict_fp32():
    """cuDNN and cuBLAS in full float32 (no TF32) inside the block: the baselines then compute
    what the candidates must compute (float32, checked against a float64 reference)."""
    import torch

    prev = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = prev


def verify_task(task: Task, *, arch: str = "sm_90", seed: int = 0, reps: int = 20, with_compile: bool = True,
                cache_dir: str = ".cache/cudaperf") -> dict[str, Any]:
    import torch

    from cudaperf.compile import compile_candidate
    from cudaperf.torchtasks.runtime import instantiate

    lock = _LOCK or _NO_LOCK
    row: dict[str, Any] = {"task_id": task.task_id, "family": task.family, "gpu": torch.cuda.get_device_name(),
                           "torch": torch.__version__, "variants": {}, "l2_flush_bytes": L2_FLUSH_BYTES,
                           "tf32": False, "reference": "float64",
                           # repetitions per timed function: `reps`, fewer (>= MIN_REPS) for one
                           # whose call is so slow that they would not fit in the budget (rep_plan)
                           "timing": {"reps": reps, "min_reps": MIN_REPS, "budget_ms": TIME_BUDGET_MS}}
    perf = task.perf_test
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    cases = None  # made once per task, when the first variant compiles
    for v in task.variants:
        cr = compile_candidate(v.source, arch=arch, cache_dir=cache_dir)
        rec: dict[str, Any] = {"compiled": cr.ok, "built_with": cr.built_with}
        if cr.ok:
            with lock.shared():
                if cases is None:
                    precisions: list[str] = []
                    cases = reference_cases(task, seed, precisions)
                    if set(precisions) != {"float64"}:  # say which tests fell back to float32
                        row["reference"] = ",".join(f"{t.name}:{p}" for t, p in zip(task.tests, precisions))
                ok, fails = check_variant(task, cr.so_path, seed, cases)
            rec.update(correct=ok, failures=fails[:5])
            if ok:
                # timed on the perf test's checked inputs: valid data, no second draw
                arrays = next(a for t, a, _ in cases if t.name == perf.name)
                bufs = _device_buffers(task, perf, arrays)
                fn = getattr(ctypes.CDLL(cr.so_path), task.entry)
                args = c_args(task, perf, {n: b.data_ptr() for n, b in bufs.items()})
                with lock.exclusive():
                    rec["ms"], rec["cv"] = cuda_time_ms(lambda: fn(*args), reps=reps, flush=flush)
                del bufs
        else:
            rec["log"] = cr.log[-2000:]
        row["variants"][v.name] = rec
    del cases
    model, inputs = instantiate(task, perf, seed=seed, device="cuda")
    with torch.no_grad(), strict_fp32():
        with lock.exclusive():
            row["eager_ms"], row["eager_cv"] = cuda_time_ms(lambda: model(*inputs), reps=reps, flush=flush)
        if with_compile:
            t0 = time.monotonic()
            try:
                cm = torch.compile(model)
                with lock.shared():  # the first call compiles (CPU) and runs once
                    cm(*inputs)
                    torch.cuda.synchronize()
                row["compile_seconds"] = round(time.monotonic() - t0, 1)
                with lock.exclusive():
                    row["compile_ms"], row["compile_cv"] = cuda_time_ms(lambda: cm(*inputs), warmup=3, reps=reps,
                                                                        flush=flush)
            except Exception as e:  # noqa: BLE001 - a baseline that cannot compile is recorded
                row["compile_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    for rec in row["variants"].values():
        if rec.get("ms"):
            rec["speedup_vs_eager"] = row["eager_ms"] / rec["ms"]
    del model, inputs, flush
    torch.cuda.empty_cache()
    return row


_TASKS: dict[str, Task] = {}  # a pool worker's tasks, loaded once per process


def _init_worker(tasks_path: str, lock_path: str, compile_threads: int) -> None:
    global _LOCK
    _LOCK = GpuLock(Path(lock_path))
    # inductor starts a compile pool of every core per process by default: N processes would
    # start N x cores workers
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(compile_threads)
    _TASKS.update({t.task_id: t for t in load_tasks(tasks_path)})


def _verify_by_id(task_id: str, opts: dict[str, Any]) -> dict[str, Any]:
    try:
        return verify_task(_TASKS[task_id], **opts)
    except Exception:
        # A CUDA error can leave this process's context unusable for every later task: then the
        # process ends (the parent records the task, starts a fresh pool and goes on).
        if not _cuda_healthy():
            os._exit(70)
        raise


def _cuda_healthy() -> bool:
    try:
        import torch

        return float(torch.ones(1, device="cuda").sum().item()) == 1.0
    except Exception:  # noqa: BLE001 - any failure here means the context is gone
        return False


def done_ids(out: Path) -> set[str]:
    """Task ids with a row in `out` that is not an error row (those are measured again)."""
    if not out.exists():
        return set()
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {r["task_id"] for r in rows if "error" not in r}


def tasks_to_do(task_ids: list[str], out: Path, skip_done: list[str] = ()) -> tuple[list[str], set, set]:
    """(task ids still to measure in order, ids done in `out`, further ids done in the `skip_done` files).

    A dataset may be covered by two GPU models (session 15 got an H100 where the first 494 tasks
    were measured on an H200): `skip_done` names the other GPU's rows so no task is measured twice;
    each row keeps its own GPU's eager and torch.compile baselines, so its speedups stand alone."""
    done = done_ids(out)
    elsewhere = set().union(*(done_ids(Path(p)) for p in skip_done if Path(p).resolve() != out.resolve())) - done
    return [t for t in task_ids if t not in done and t not in elsewhere], done, elsewhere


def run_pool(task_ids: list[str], fn: Callable[[str], dict[str, Any]], out: Path, *, procs: int,
             max_seconds: float = 0, hard_seconds: float = 0, initializer: Callable | None = None,
             initargs: tuple = (), log: Callable[[str], None] = print,
             clock: Callable[[], float] = time.monotonic) -> int:
    """Run `fn(task_id)` for each id in `procs` spawned processes (in this one when procs <= 1),
    appending each row to `out` as it arrives; a task that raises gets an ``error`` row (measured
    again on resume). No new task starts after `max_seconds` (0: no limit). At `hard_seconds` (0:
    none; pool mode only) the tasks still running are abandoned and their processes killed, as on
    KeyboardInterrupt: they get no row, so a resumed run measures them, and no orphan process
    keeps the GPU busy after we return. Returns rows written."""
    start, n = clock(), 0

    def over() -> bool:
        return bool(max_seconds) and clock() - start > max_seconds

    def write(tid: str, row: dict[str, Any]) -> None:
        nonlocal n
        with out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        n += 1
        if "error" in row:
            log(f"{tid}: error: {row['error']}")
        else:
            log(f"{tid} " + json.dumps({k: [v.get("correct"), round(v.get("ms") or 0, 4)]
                                        for k, v in row.get("variants", {}).items()})
                + f" eager {row.get('eager_ms') or 0:.4f} compile {row.get('compile_ms') or 0:.4f}")

    def err(tid: str, e: BaseException) -> dict[str, Any]:
        return {"task_id": tid, "error": f"{type(e).__name__}: {str(e)[:300]}"}

    todo = list(task_ids)
    if procs <= 1:
        if initializer is not None:
            initializer(*initargs)
        for tid in todo:
            if over():
                break
            try:
                write(tid, fn(tid))
            except Exception as e:  # noqa: BLE001 - one broken task must not end the run
                write(tid, err(tid, e))
        return n
    import multiprocessing as mp
    from concurrent.futures.process import BrokenProcessPool

    def pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(procs, mp_context=mp.get_context("spawn"), initializer=initializer,
                                   initargs=initargs)

    ex = pool()
    running: dict[Any, str] = {}
    clean = False
    try:
        while todo or running:
            while todo and len(running) < procs and not over():
                tid = todo.pop(0)
                running[ex.submit(fn, tid)] = tid
            if over():
                todo.clear()
            if not running:
                break
            left = hard_seconds - (clock() - start) if hard_seconds else None
            if left is not None and left <= 0:
                log(f"hard limit of {hard_seconds:.0f} s: {len(running)} running task(s) abandoned, "
                    f"measured on resume: {', '.join(sorted(running.values()))}")
                running.clear()
                return n  # not clean: the finally below kills the processes
            finished, _ = wait(list(running), timeout=left, return_when=FIRST_COMPLETED)
            broken = False
            for f in finished:
                tid = running.pop(f)
                try:
                    write(tid, f.result())
                except BrokenProcessPool as e:  # a worker died: every task it took down gets a row
                    broken = True
                    write(tid, err(tid, e))
                except Exception as e:  # noqa: BLE001 - a task that raised: an error row
                    write(tid, err(tid, e))
            if broken:
                for f, tid in list(running.items()):
                    write(tid, err(tid, RuntimeError("worker pool broke while this task ran")))
                running.clear()
                ex.shutdown(wait=False, cancel_futures=True)
                log("a worker process died; starting a fresh pool")
                ex = pool()
        clean = True
    finally:
        # interrupted: no orphan may keep working on the GPU, so no grace
        shutdown_bounded(ex, EXIT_GRACE_S if clean else 0.0)
    return n


# Seconds idle workers get to exit after a clean run. Session 13 on the H200: every task had
# finished and its row was written, yet `shutdown(wait=True)` never returned (a worker hung in its
# exit, after torch.compile) until the call's outer limit interrupted it.
EXIT_GRACE_S = 20.0


def shutdown_bounded(ex: ProcessPoolExecutor, grace_s: float) -> list[int]:
    """Shut the pool down, giving its workers `grace_s` seconds to exit; the ones still alive
    then are killed (after a clean run their tasks are done: nothing is lost; with 0 s, as after
    an interruption, running tasks die with them). Returns the pids killed."""
    # the executor keeps its processes in _processes (no public handle); take them before
    # shutdown, which never waits here (wait=True waits for running tasks, minutes for a slow one)
    procs = list((getattr(ex, "_processes", None) or {}).values())
    ex.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + grace_s
    killed = []
    for p in procs:
        p.join(timeout=max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            with contextlib.suppress(Exception):
                p.kill()
                p.join(timeout=5)
            killed.append(p.pid)
    return killed


def budget_left(max_seconds: float, hard_seconds: float, spent: float) -> tuple[float, float]:
    """(max_seconds, hard_seconds) for `run_pool`, whose clock starts when it is called, from the
    command's limits, which count from the command's start: `spent` seconds are gone already
    (installing the prebuilt archive on a fresh machine, loading tasks). A hard limit defaults to
    max + 120 s; 0 stays "no limit", and a spent budget leaves 1 s, so nothing new starts."""
    hard = hard_seconds or (max_seconds + 120 if max_seconds else 0)
    return (max(1.0, max_seconds - spent) if max_seconds else 0.0,
            max(1.0, hard - spent) if hard else 0.0)


def main(argv: list[str] | None = None) -> int:
    import functools
    import tempfile

    # Session 14: the limits counted from the pool's start, after a prebuilt install of 1,666
    # libraries on a fresh machine, so the caller's outer `timeout` (set from the same budget)
    # interrupted the pool before its own hard limit: the tasks then running were lost.
    t_start = time.monotonic()
    ap = argparse.ArgumentParser(prog="python -m cudaperf.torchtasks.verify")
    ap.add_argument("--tasks", default="data/tasks/torch2cuda.jsonl.gz")
    ap.add_argument("--out", required=True)
    ap.add_argument("--families", nargs="*")
    ap.add_argument("--limit", type=int, default=0, help="at most this many new tasks (0: all)")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--procs", type=int, default=1, help="parallel processes sharing the GPU (timings exclusive)")
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="start no task after this many seconds from the command's start (0: no limit)")
    ap.add_argument("--hard-seconds", type=float, default=0,
                    help="abandon (and kill) tasks still running this many seconds after the command's start; "
                    "they are measured on resume (0: max-seconds + 120 when max-seconds is set, else no limit)")
    ap.add_argument("--prebuilt", default="", help="archive of the variants' libraries (python -m "
                    "cudaperf.prebuilt pack --tasks data/tasks/torch2cuda.jsonl.gz), installed into the cache first")
    ap.add_argument("--cache-dir", default=".cache/cudaperf")
    ap.add_argument("--skip-done", nargs="*", default=[], metavar="ROWS",
                    help="other result files (e.g. another GPU's): their measured tasks are not measured "
                    "again here, so a dataset split over two GPU models is covered once")
    a = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("verify needs a CUDA GPU (none visible); nothing was measured", file=sys.stderr)
        return 2
    # stratified by family: a run cut short covers every family, not the first few in file order
    tasks = stratified_order(load_tasks(a.tasks, families=a.families))
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    todo, done, elsewhere = tasks_to_do([t.task_id for t in tasks], out, a.skip_done)
    if a.limit:
        todo = todo[:a.limit]
    if a.prebuilt:
        from cudaperf import prebuilt

        print("prebuilt:", json.dumps(prebuilt.install(a.prebuilt, tasks, a.cache_dir)), flush=True)
    print(f"{len(todo)} tasks to verify ({len(done)} already in {out}, {len(elsewhere - done)} more in "
          f"{' '.join(a.skip_done) or 'no --skip-done file'}), {a.procs} process(es)", flush=True)
    opts = {"reps": a.reps, "with_compile": not a.no_compile, "cache_dir": a.cache_dir}
    lock_dir = tempfile.mkdtemp(prefix="t2c-lock-")
    threads = max(1, (os.cpu_count() or 1) // max(1, a.procs))
    t0 = time.monotonic()
    max_s, hard_s = budget_left(a.max_seconds, a.hard_seconds, t0 - t_start)
    n = run_pool(todo, functools.partial(_verify_by_id, opts=opts), out, procs=a.procs, max_seconds=max_s,
                 hard_seconds=hard_s,
                 initializer=_init_worker, initargs=(a.tasks, os.path.join(lock_dir, "lock"), threads),
                 log=lambda m: print(m, flush=True))
    el = time.monotonic() - t0
    print(f"{n} tasks in {el:.0f} s ({n / max(el, 1e-9) * 60:.1f}/min); {len(todo) - n} not started", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
