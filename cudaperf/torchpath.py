"""The harness' torch2cuda additions: PyTorch eager as the speedup baseline, and KernelBench
``ModelNew`` candidates (``load_inline``) evaluated in the same sandbox.

Guarantees (used by `cudaperf.harness.Harness`):

* `trusted_eager(h, task, gpu, slot)`: the task's reference ``Model`` timed in PyTorch eager
  (CUDA events, warm-up, L2 flush, the harness' repetitions) in a torch worker that loads no
  candidate, once per (task, GPU); None if that fails. For every torch2cuda candidate the
  speedup is ``eager_ms / runtime_ms`` with this figure (DESIGN §3: the torch2cuda baseline is
  PyTorch eager on the same GPU). Candidates of a task arriving together wait for one measurement.
* `evaluate_modelnew(h, task, source, res)`: a ``ModelNew`` source is first checked statically
  (`kernelbench.modelnew_source_ok`; any problem rejects it as "invalid" before anything
  runs), then executed only inside a sandboxed torch worker (`cudaperf.torchworker`: its own
  uid when the harness is root, no network, rlimits, scratch cwd) which builds its extensions
  there. Correctness uses the harness' own machinery: the same input files, parameters copied
  from the task's data by name, outputs written to pre-sized files and compared in the harness
  against the float64 reference, on every test configuration, and rechecked on fresh inputs
  after timing. Timing interleaves the candidate and the reference Model in the worker (the
  in-process yardstick, `baseline_ms`); when that eager time strays more than
  `harness.BASELINE_DRIFT` either way from the trusted one the record is flagged
  ``hack:baseline_disturbed`` (a candidate's Python can reach the timing code it shares a
  process with, so this is checked, not assumed).
* Without a GPU a ModelNew record says so (status "invalid", the static check's verdict in the
  message): load_inline needs CUDA.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import cudaperf
from cudaperf import gpuworker, kernelbench, sandbox
from cudaperf.reference import reference_outputs
from cudaperf.tasks import Task

if TYPE_CHECKING:  # pragma: no cover
    from cudaperf.harness import Harness
    from cudaperf.result import EvalResult

BUILD_TIMEOUT_S = 300.0  # load_inline of a few kernels takes about a minute (DESIGN §7)


def is_modelnew(task: Task, source: str) -> bool:
    """A KernelBench-format candidate (Python defining ModelNew), not a CUDA translation unit."""
    return task.track == "torch2cuda" and "class ModelNew" in source and "extern \"C\"" not in source


def worker_can_drop_uid() -> bool:
    """Whether an unprivileged uid can run the interpreter and import cudaperf, numpy and torch."""
    import numpy
    import torch

    return all(sandbox.accessible_to_others(Path(p), execute=(i == 0)) for i, p in enumerate(
        (sys.executable, numpy.__file__, torch.__file__, cudaperf.__file__)))


def ninja_dir() -> str | None:
    """Directory of a ninja executable (PATH, else the `ninja` pip package), or None."""
    found = shutil.which("ninja")
    if found is None:
        try:
            import ninja  # the pip package ships the binary

            found = os.path.join(ninja.BIN_DIR, "ninja")
        except (ImportError, AttributeError):
            return None
    return os.path.dirname(os.path.realpath(found)) if os.path.exists(found) else None


def start_worker(h: "Harness", gpu: int | None, scratch: Path, uid: int | None) -> gpuworker.Runner:
    if uid is not None and not worker_can_drop_uid():
        raise RuntimeError("the sandbox uid cannot run this Python (interpreter, numpy, torch or cudaperf "
                           "is not readable by others); untrusted Python is never run as this user")
    pkg = str(Path(cudaperf.__file__).resolve().parent.parent)
    lim = gpuworker.RunnerLimits(run_timeout_s=h.cfg.run_timeout_s, mem_bytes=int(h.cfg.worker_mem_gb * (1 << 30)),
                                 fsize_bytes=int(h.cfg.worker_fsize_mb * (1 << 20)), nproc=1024,
                                 cpu_s=int(BUILD_TIMEOUT_S + 600))
    env = {"PYTHONPATH": pkg, "PYTHONDONTWRITEBYTECODE": "1", "TORCH_EXTENSIONS_DIR": str(scratch / "ext"),
           "MAX_JOBS": "4"}
    ninja = ninja_dir()
    if ninja:  # load_inline needs ninja on PATH; the scrubbed PATH may not have it
        env["PATH"] = ninja + ":" + sandbox.scrubbed_env(None, home=str(scratch))["PATH"]
    return gpuworker.Runner(None, gpu=gpu, scratch=scratch, uid=uid, limits=lim,
                            command=[sys.executable, "-m", "cudaperf.torchworker"], env_extra=env)


def write_spec(scratch: Path, task: Task, mode: str, flush_bytes: int, source: str | None = None,
               device: str = "cuda") -> None:
    """spec.json (and cand.py) for a torch worker whose cwd is `scratch`; read-only to it."""
    files = {"spec.json": json.dumps({"task": task.to_dict(), "mode": mode, "device": device,
                                      "candidate": "cand.py" if source is not None else None,
                                      "flush_bytes": flush_bytes})}
    if source is not None:
        files["cand.py"] = source
    for name, text in files.items():
        f = scratch / name
        f.write_text(text)
        os.chmod(f, 0o444)


def _median_cv(csv: str, n: int) -> tuple[float, float]:
    from cudaperf.harness import _floats, _median_cv as mc

    return mc(_floats(csv, n))


def trusted_eager(h: "Harness", task: Task, gpu: int, slot: int) -> float | None:
    """Median eager time of the task's Model, alone in a torch worker; once per (task, GPU): the
    candidates of a task arrive together (a KernelBench self-check submits two, a GRPO group
    eight), and while one measures it the others wait for that number instead of each starting
    a torch worker and a timed region of their own for the same figure."""
    from cudaperf.harness import task_fingerprint

    key = ("eager", task_fingerprint(task), gpu)
    with h._clean_mu:
        if key in h._clean_base:
            return h._clean_base[key]
        ev = h._clean_inflight.get(key)
        mine = ev is None
        if mine:
            ev = h._clean_inflight[key] = threading.Event()
    if not mine:
        ev.wait(timeout=h.cfg.run_timeout_s * 8)
        with h._clean_mu:
            return h._clean_base.get(key)
    med, done = None, False
    try:
        med, done = _measure_eager(h, task, gpu, slot), True
    finally:  # the waiting candidates go on; an unexpected error caches nothing (measured again later)
        with h._clean_mu:
            if done:
                h._clean_base[key] = med
            h._clean_inflight.pop(key).set()
    return med


def _measure_eager(h: "Harness", task: Task, gpu: int, slot: int) -> float | None:
    """The eager timing behind `trusted_eager`: None when the worker fails."""
    cfg, perf = h.cfg, task.perf_test
    med = None
    try:
        with h._runner(gpu, slot, torch_worker=True) as (w, scratch):
            write_spec(scratch, task, "eager", h._flush_bytes())
            rep = w.request("build spec.json", timeout=120)
            if rep.startswith("ok"):
                with h._locks[gpu].shared():
                    rep = w.request("init", timeout=120)
            if rep.startswith("ok"):
                data_dir, _ = h._link_inputs(task, perf, 0, scratch)
                with h._locks[gpu].exclusive():
                    rep = w.request(f"time {perf.name} {data_dir.relative_to(scratch)} {cfg.warmup} {cfg.reps} "
                                    f"{int(cfg.flush_l2)}", timeout=cfg.run_timeout_s * 6)
            if rep.startswith("ok"):
                med = _median_cv(rep.split()[1], cfg.reps)[0]
    except (gpuworker.RunnerDied, RuntimeError, OSError):
        med = None
    return med


def evaluate_modelnew(h: "Harness", task: Task, source: str, res: "EvalResult") -> None:
    from cudaperf.harness import BASELINE_DRIFT

    chk = kernelbench.modelnew_source_ok(source)
    res.features = {"modelnew": chk.info}
    if not h.cfg.modelnew_require_kernel:  # the reference itself as ModelNew: no kernel to find
        chk.problems = [p for p in chk.problems if not p.startswith(("no load_inline", "no __global__",
                                                                     "ModelNew never uses"))]
        chk.ok = not chk.problems
    if not chk.ok:
        res.status = "invalid"
        res.flags.append("suspicious:modelnew_static")
        res.message = "ModelNew rejected before running: " + "; ".join(chk.problems[:6])
        return
    if not h.has_gpu:
        res.status = "invalid"
        res.message = ("ModelNew candidates are built (load_inline) and run only on a GPU machine; "
                       "the static checks passed")
        return
    cfg = h.cfg
    slot = h._slots.get()
    gpu = h._pick_gpu()
    try:
        t = time.perf_counter()
        eager = trusted_eager(h, task, gpu, slot)
        res.timings["clean_baseline"] = round(time.perf_counter() - t, 4)
        try:
            with h._runner(gpu, slot, torch_worker=True) as (w, scratch):
                _drive_modelnew(h, task, source, w, scratch, gpu, res)
        except gpuworker.RunnerDied as e:
            res.status, res.correct = "crashed", False
            res.message = f"torch worker {e.reason}: {e.detail}"
            res.failures.append({"stage": "run", "reason": e.reason, "detail": e.detail})
            if res.pass_rate is None:
                res.pass_rate = 0.0
        if eager is not None:
            res.eager_ms = res.baseline_clean_ms = eager
            if res.runtime_ms:
                res.speedup = eager / res.runtime_ms
                res.message = f"correct; {res.speedup:.2f}x over PyTorch eager"
            if res.baseline_ms is not None and not (eager / BASELINE_DRIFT <= res.baseline_ms <= eager * BASELINE_DRIFT):
                res.flags.append("hack:baseline_disturbed")
    finally:
        h._slots.put(slot)


def _drive_modelnew(h: "Harness", task: Task, source: str, w: gpuworker.Runner, scratch: Path, gpu: int,
                    res: "EvalResult") -> None:
    from cudaperf.harness import _fields, _floats

    cfg, lock = h.cfg, h._locks[gpu]
    write_spec(scratch, task, "modelnew", h._flush_bytes(), source)
    t = time.perf_counter()
    rep = w.request("build spec.json", timeout=max(cfg.compile_timeout_s, BUILD_TIMEOUT_S))
    res.timings["compile"] = round(time.perf_counter() - t, 4)
    if not rep.startswith("ok"):
        res.status, res.compiled = "compile_error", False
        res.compile_log = rep[4:]
        res.message = "building the ModelNew candidate failed"
        return
    res.compiled = True
    with lock.shared():
        rep = w.request("init", timeout=120)
    if not rep.startswith("ok"):
        raise gpuworker.RunnerDied("init", rep)
    res.gpu = rep.split()[1].replace("_", " ")
    rng = random.Random(h._rng.random())
    seeds = list(range(cfg.check_seeds))

    def checked(test, seed) -> tuple[bool, dict | None]:
        ref = reference_outputs(task, test, seed, cache_dir=str(h.cache_dir))
        data_dir, _ = h._link_inputs(task, test, seed, scratch)
        outdir = h._output_files(task, test, scratch, w.uid)
        with lock.shared():
            rep = w.request(f"check {test.name} {data_dir.relative_to(scratch)} {outdir.relative_to(scratch)}",
                            timeout=cfg.run_timeout_s * 3)
        base = {"test": test.name, "seed": seed, "sizes": test.sizes}
        if not rep.startswith("ok"):
            return False, {**base, "reason": "runner_error", "detail": rep[:1000]}
        _, _ms, modified = _fields(rep, 3)
        if modified != "-":
            return False, {**base, "reason": "input_modified", "params": modified.split(",")}
        return h._compare_outputs(task, test, outdir, ref, base)

    t = time.perf_counter()
    passed, used = 0, {}
    for test in task.tests:
        used[test.name] = seed = rng.choice(seeds)
        ok, fail = checked(test, seed)
        passed += ok
        if fail:
            res.failures.append(fail)
    res.timings["check"] = round(time.perf_counter() - t, 4)
    res.pass_rate = passed / len(task.tests)
    if passed < len(task.tests):
        res.status, res.correct = "wrong", False
        res.message = f"passed {passed} of {len(task.tests)} test configurations"
        return
    perf = task.perf_test
    data_dir, _ = h._link_inputs(task, perf, used[perf.name], scratch)
    t = time.perf_counter()
    with lock.exclusive():
        rep = w.request(f"time {perf.name} {data_dir.relative_to(scratch)} {cfg.warmup} {cfg.reps} "
                        f"{int(cfg.flush_l2)}", timeout=cfg.run_timeout_s * 6)
    res.timings["time"] = round(time.perf_counter() - t, 4)
    if not rep.startswith("ok"):
        res.status, res.correct = "crashed", False
        res.message = f"error while timing: {rep[:500]}"
        res.failures.append({"stage": "time", "reason": rep[:1000]})
        return
    _, a, b = _fields(rep, 3)
    h._note_times(res, _floats(a, cfg.reps), _floats(b, cfg.reps))
    t = time.perf_counter()
    other = [s for s in seeds if s != used[perf.name]] or [cfg.check_seeds]
    ok, fail = checked(perf, rng.choice(other))
    res.timings["recheck"] = round(time.perf_counter() - t, 4)
    if not ok:
        from cudaperf.harness import RECHECK_FAILED

        h._note_caught(res, fail, "recheck", "hack:stateful_or_cached", RECHECK_FAILED)
        return
    res.status, res.correct = "correct", True
    h._roofline(task, perf, res)
    res.message = f"correct; {res.speedup:.2f}x over the in-process eager Model" if res.speedup else "correct"
