"""Dataset verification: the variants of one task, written by us, evaluated in one runner.

Verifying the C->CUDA dataset means evaluating ~10k variants that this project generated. The
one-candidate path (`Harness.evaluate_many`) gives every candidate its own runner, its own
input staging per test, a clean-baseline region and a timed region of its own: right for model
output, wasteful for a task's 3-4 trusted variants. Here the variants of a task share one runner:

* one runner start (CUDA context) per task; every variant loaded into its own slot, the naive
  variant as the baseline in slot 0;
* per test configuration the inputs are staged and bound once, then every variant gets a checked
  call on them (outputs poisoned, inputs checked unchanged, device synchronised, outputs compared
  with the cached reference), exactly `Harness._checked_run`;
* after the checks, the naive variant timed alone once (the clean baseline), then ONE timed
  region in which the naive variant and every variant that passed are timed interleaved (same
  warm-up, repetitions, L2 flush, median and CV as the one-candidate path); speedup = naive
  median / variant median;
* the recheck on fresh inputs after timing, on the same device buffers, for every timed variant.

Guarantees:
* The record of each variant carries the same fields and verdict rules as `Harness.evaluate`
  (status, pass rate, failures, flags incl. roofline and disturbed-baseline, runtime, CV,
  baseline, speedup, resources); its timings say ``group_size`` and hold the group's stage times.
* Anything unexpected in the group -- a runner that dies, a CUDA error, a library that does not
  load, a protocol error -- sends every still-pending variant of the task through the
  one-candidate path instead (flag ``note:group_fallback``, the reason logged as a warning), so
  each still gets the record `Harness.evaluate` would give it. Partial group results are
  discarded, never mixed in.
* C->CUDA tasks only (a torch2cuda task's variants go one by one: their yardstick is PyTorch eager).
* Only for trusted code: variants sharing a process could disturb each other, which is harmless
  for the dataset's own implementations and unacceptable for model output, so the RL reward
  never comes through here. (Model output that the static scan finds clean may share a runner
  through `cudaperf.sharedrunner` instead: one candidate after another, each with its own
  timed region and spot check, and a fresh runner after any death or device-memory leak.)
"""
from __future__ import annotations

import copy
import logging
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cudaperf import gpuworker
from cudaperf.result import EvalResult
from cudaperf.tasks import Task

if TYPE_CHECKING:  # pragma: no cover
    from cudaperf.harness import Harness

# Failure reasons that are verdicts about a variant; anything else ends the group.
VERDICTS = ("mismatch", "missing_output", "input_modified")
log = logging.getLogger(__name__)


class GroupAbandoned(RuntimeError):
    """The group path met something it does not judge; the one-candidate path takes over."""


def evaluate_group(h: "Harness", task: Task, sources: list[str]) -> list[EvalResult]:
    """Records for `sources` (variants of `task`), in order. Never raises."""
    if task.track != "c2cuda":
        # torch2cuda speedups are over PyTorch eager, timed by the one-candidate path's trusted
        # worker; a group's shared naive baseline would be the wrong yardstick there.
        return [h._evaluate_safe(task, src) for src in sources]

    results, pending = [], []  # pending: (index, store key, shared library)
    for i, src in enumerate(sources):
        res, key, so_path = h._front_safe(task, src)
        if so_path is not None:
            pending.append((i, key, so_path))
        results.append(res)
    if not pending:
        return results
    t0 = time.perf_counter()
    try:
        done = _run_group(h, task, [results[i] for i, _, _ in pending], [so for _, _, so in pending])
    except Exception as e:  # noqa: BLE001 -- every failure means: evaluate them one by one
        log.warning("task %s: variants evaluated one by one: %s: %s", task.task_id, type(e).__name__, str(e)[:300])
        for i, key, so_path in pending:
            res = results[i]
            res.flags.append("note:group_fallback")
            h._gpu_alone(task, so_path, res)
            h._save(key, res)
        return results
    wall = time.perf_counter() - t0
    for (i, key, _), res in zip(pending, done):
        res.timings["total"] = round(res.timings["total"] + wall, 4)  # its front half + the group's
        results[i] = res
        h._save(key, res)
    return results


def _run_group(h: "Harness", task: Task, records: list[EvalResult], so_paths: list[str]) -> list[EvalResult]:
    """The group on one runner; returns filled copies of `records` or raises."""
    t = time.perf_counter()
    base_so, shim = h._gpu_files(task, so_paths)
    prep = round(time.perf_counter() - t, 4)
    ahead = h._warm_references(task)
    t1 = time.perf_counter()
    slot = h._slots.get()  # one runner slot for the whole group
    waits = {"prepare": prep, "reference_ahead": ahead, "slot_wait": round(time.perf_counter() - t1, 4)}
    gpu = h._pick_gpu()
    h._locks[gpu].take_stats()
    try:
        with h._runner(gpu, slot) as (runner, scratch):
            out = _drive_group(h, task, runner, shim, base_so, so_paths, scratch, gpu,
                               [copy.deepcopy(r) for r in records])
    finally:
        h._slots.put(slot)
    for r in out:
        r.timings.update(waits)
    return out


def _ok(rep: str, what: str) -> str:
    if not rep.startswith("ok"):
        raise GroupAbandoned(f"{what}: {rep[:200]}")
    return rep


def _drive_group(h: "Harness", task: Task, runner: gpuworker.Runner, shim: Path, base_so: str,
                 so_paths: list[str], scratch: Path, gpu: int, out: list[EvalResult]) -> list[EvalResult]:
    from cudaperf.harness import _fields, _floats, _median_cv

    cfg, lock, k = h.cfg, h._locks[gpu], len(so_paths)
    common: dict[str, float] = {"group_size": k}
    clock = time.perf_counter
    t = clock()
    gpu_name, cc = h._init_runner(runner, shim, gpu)
    for i, p in enumerate([base_so, *so_paths]):  # slot 0: the naive variant as the baseline
        _ok(runner.request(f"load {i} {runner.stage(p, f'lib{i}.so')} {task.entry}"), f"load slot {i}")
    common["runner_start"] = round(clock() - t, 4)
    perf = task.perf_test
    timing = f"{cfg.warmup} {cfg.reps} {int(cfg.flush_l2)}"

    def checked_all(test, seed, which: list[int]) -> dict[int, dict | None]:
        """Stage (test, seed) once; a checked call of every variant in `which` on it."""
        t_ref = clock()
        ref = h._reference(task, test, seed)
        common["reference"] = round(common.get("reference", 0.0) + clock() - t_ref, 4)  # in check/recheck
        h._prepare_args(task, test, seed, runner, scratch, lock)
        fails = {}
        for i in which:
            ok, fail = h._checked_run(task, test, seed, i + 1, ref, runner, scratch, lock)
            if fail is not None and fail.get("reason") not in VERDICTS:
                raise GroupAbandoned(f"variant {i}, test {test.name}: {fail.get('reason')} {fail.get('detail', '')}"[:300])
            fails[i] = None if ok else fail
        return fails

    # ---- correctness on every test configuration
    seeds = list(range(cfg.check_seeds))
    rng = random.Random(h._rng.random())
    t = clock()
    passed, used_seed = [0] * k, {}
    for test in task.tests:
        used_seed[test.name] = rng.choice(seeds)
        for i, fail in checked_all(test, used_seed[test.name], list(range(k))).items():
            if fail is None:
                passed[i] += 1
            else:
                out[i].failures.append(fail)
    common["check"] = round(clock() - t, 4)
    good = [i for i in range(k) if h._note_pass_rate(task, out[i], passed[i])]

    # The naive variant alone: the yardstick an in-process baseline is checked against. Timed
    # after the checks (the perf test is checked last), so the perf-size buffers of the check,
    # this, the timed region and the recheck follow each other and the runner reuses them.
    t = clock()
    h._prepare_args(task, perf, used_seed[perf.name], runner, scratch, lock, reset=True)
    with lock.exclusive():
        rep = _ok(runner.request(f"time 0 {timing}", timeout=cfg.run_timeout_s * 4), "clean baseline")
    clean = _median_cv(_floats(_fields(rep, 2)[1], cfg.reps))[0]
    common["clean_baseline"] = round(clock() - t, 4)

    # ---- one timed region: the naive variant and every variant that passed, interleaved
    recheck: dict[int, dict | None] = {}
    if good:
        h._prepare_args(task, perf, used_seed[perf.name], runner, scratch, lock, reset=True)  # fresh inputs
        order = [0] + [i + 1 for i in good]
        t = clock()
        with lock.exclusive():
            rep = _ok(runner.request(f"time {','.join(map(str, order))} {timing}",
                                     timeout=cfg.run_timeout_s * 2 * len(order)), "time")
        fields = _fields(rep, len(order) + 1)[1:]
        common["time"] = round(clock() - t, 4)
        base = _floats(fields[0], cfg.reps)
        for i, f in zip(good, fields[1:]):
            h._note_times(out[i], _floats(f, cfg.reps), base)
        # ---- recheck on fresh inputs, on the buffers that were timed (HarnessConfig.recheck)
        if cfg.recheck:
            t = clock()
            other = [s for s in seeds if s != used_seed[perf.name]] or [cfg.check_seeds]
            recheck = checked_all(perf, rng.choice(other), good)
            common["recheck"] = round(clock() - t, 4)
        else:
            recheck = dict.fromkeys(good)  # every timed variant passes on to the verdict unrechecked
    common.update(lock.take_stats())
    for i, res in enumerate(out):
        res.gpu = gpu_name
        res.versions["compute_capability"] = cc
        res.timings.update(common)
        if i in recheck:
            h._note_recheck(task, res, recheck[i])
            h._note_clean_baseline(res, clean)
    return out
