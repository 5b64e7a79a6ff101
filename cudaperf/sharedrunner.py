"""Model output of one task in a shared runner: one CUDA context per group, not per candidate.

Why: every candidate of the one-candidate path (`Harness.evaluate_many`) gets a fresh runner
process, and the CUDA driver creates contexts one at a time -- 4.2-4.9 per second on the H200 at
any concurrency (`benchmarks/bench_runner_start.py`) -- which caps that path near 270 candidates
a minute before anything is checked. Here a task's candidates run one after another in one
runner: the context is created once, the naive variant is loaded once (slot 0) and timed alone
once, before any candidate is loaded (the clean baseline), then each candidate is loaded into a
slot of its own and judged exactly as the one-candidate path judges it
(`Harness._judge_loaded`: every test configuration checked with outputs poisoned and inputs
compared, one timed region with the naive variant interleaved and one timed call spot-checked,
the recheck on fresh inputs in the timed buffers).

Which candidates share: a compiled C->CUDA candidate whose static scan raised no flag at all
(no file-scope state, threads, processes, file or network I/O, device-wide settings, side
streams, load-time code, timing calls, ...: see `cudaperf.scan`). Its host code then does nothing
but launch its kernels, and a kernel cannot reach the host process, so what one candidate leaves
behind in the process is device memory it did not free (outputs are poisoned before every call
and inputs are fresh and compared, so stale buffers earn nothing). Everything else -- a flagged
candidate, a torch2cuda task, a library that fails to build -- goes the one-candidate way.

Guarantees:
* One record per candidate, in input order; the same fields and verdict rules as
  `Harness.evaluate`; shared ones carry ``timings["shared_runner"]`` (candidates in the runner)
  and ``timings["shared_position"]``; ``runner_start`` is the shared runner's start.
* A runner that dies or stops answering while a candidate is judged takes nothing else down:
  that candidate is evaluated again in a runner of its own (flag ``note:shared_fallback``; its
  verdict is then its own, whatever the shared runner's death was), and the candidates after it
  continue in a fresh shared runner. Anything unexpected in the shared runner sends the
  candidates not yet judged the one-candidate way too.
* Off unless ``HarnessConfig.share_runner`` is set; the result store and its keys are unchanged.
"""
from __future__ import annotations

import copy
import logging
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Sequence

from cudaperf import devmem, gpuworker, keptrunners
from cudaperf.result import EvalResult
from cudaperf.tasks import Task

if TYPE_CHECKING:  # pragma: no cover
    from cudaperf.harness import Harness

log = logging.getLogger(__name__)
FALLBACK_FLAG = "note:shared_fallback"
# Device memory a candidate may leave allocated before its runner is retired (the candidates after
# it then start in a fresh one): a leak must not make a later candidate's allocations fail.
LEAK_LIMIT_BYTES = 64 << 20


def eligible(task: Task, res: EvalResult) -> bool:
    """May this compiled candidate share a runner? C->CUDA, and the static scan flagged nothing."""
    return task.track == "c2cuda" and not res.flags


# A shared runner's own cost (process and CUDA context, call shim, naive variant, input staging) in
# units of one candidate's judging. Rough: contexts come at ~4.5/s per GPU and a GRPO candidate took
# ~1.6 s of runner time in session 18; it only tips ties between chunkings.
RUNNER_COST_IN_CANDIDATES = 0.3


def chunk_size(n: int, groups: int, slots: int) -> int:
    """Candidates per shared runner for a task with `n` of them, when `groups` tasks (assumed of
    the same size) share `slots` runner slots.

    Runners of a batch run in waves of `slots`, so the batch lasts about
    waves x (chunk + runner cost) candidate-times; the chunk that minimises that wins (ties: the
    larger chunk, fewer runners). Why not simply one runner per task when tasks outnumber slots:
    session 18's GRPO step put 16 tasks x 8 attempts in 12 slots as 16 runners of 8, two waves
    of which the second used 4 slots: 26 s of judging where 32 runners of 4 take ~3 shorter waves."""
    n, groups, slots = max(1, n), max(1, groups), max(1, slots)
    best, best_cost = n, math.inf
    for c in range(n, 0, -1):
        waves = math.ceil(groups * math.ceil(n / c) / slots)
        cost = waves * (c + RUNNER_COST_IN_CANDIDATES)
        if cost < best_cost - 1e-9:
            best, best_cost = c, cost
    return best


def evaluate_many(h: "Harness", items: Sequence[tuple[Task, str]], *, progress: bool = False) -> list[EvalResult]:
    """`Harness.evaluate_many` with shared runners: compiles stream on all cores as in the
    one-candidate path; the moment a task's last candidate is compiled, its eligible candidates
    start in shared runners (chunks of `chunk_size`) and the rest one by one."""
    from cudaperf.harness import task_fingerprint

    n = len(items)
    results: list[EvalResult | None] = [None] * n
    by_task: dict[str, list[int]] = {}
    for i, (task, _) in enumerate(items):
        by_task.setdefault(task_fingerprint(task), []).append(i)
    left = {k: len(v) for k, v in by_task.items()}
    ready: dict[str, list[tuple[int, str, str]]] = {k: [] for k in by_task}  # (index, store key, library)
    mu = threading.Lock()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n, desc="evaluate", unit="cand")
    jobs = h.cfg.compile_jobs or os.cpu_count() or 1
    slots = max(1, len(h.gpus) * h.workers_per_gpu)
    h._compile_sem = threading.BoundedSemaphore(jobs)
    futures: list = []

    def finished(k: int) -> None:
        if bar is not None:
            bar.update(k)

    def solo(i: int, key: str, so_path: str) -> None:
        h._gpu_alone(items[i][0], so_path, results[i])
        h._save(key, results[i])
        finished(1)

    def group(entries: list[tuple[int, str, str]]) -> None:
        task = items[entries[0][0]][0]
        out = run_shared(h, task, [results[i] for i, _, _ in entries], [so for _, _, so in entries])
        for (i, key, _), res in zip(entries, out):
            results[i] = res
            h._save(key, res)
        finished(len(entries))

    def front(i: int) -> None:
        task, src = items[i]
        res, key, so_path = h._front_safe(task, src)
        results[i] = res
        fp = task_fingerprint(task)
        if so_path is None:
            finished(1)
        elif eligible(task, res):
            with mu:
                ready[fp].append((i, key, so_path))
        else:
            futures.append(gpu_ex.submit(solo, i, key, so_path))
        with mu:
            left[fp] -= 1
            launch = left[fp] == 0
            entries = sorted(ready[fp]) if launch else []
        if entries:
            size = chunk_size(len(entries), len(by_task), slots)
            for c in range(0, len(entries), size):
                futures.append(gpu_ex.submit(group, entries[c:c + size]))

    # Two pools: compiles (bounded by the compile semaphore) and GPU work (bounded by the runner
    # slots), so a task's runner starts while later tasks still compile.
    with ThreadPoolExecutor(max_workers=jobs) as front_ex, ThreadPoolExecutor(max_workers=2 * slots) as gpu_ex:
        futures.extend(front_ex.submit(front, i) for i in range(n))
        seen = 0
        while seen < len(futures):  # fronts add GPU work as they finish: wait until none is added
            batch = futures[seen:]
            seen = len(futures)
            wait(batch)
            for f in batch:
                f.result()  # a bug in this module must surface, not vanish in a future
    if bar is not None:
        bar.close()
    return results  # type: ignore[return-value]


def run_shared(h: "Harness", task: Task, records: list[EvalResult], so_paths: list[str]) -> list[EvalResult]:
    """Records for the candidates in `so_paths` (their compiled libraries; `records` as `_front`
    left them), judged one after another in shared runners. Never raises."""
    out: list[EvalResult] = []
    todo = list(zip(records, so_paths))
    while todo:
        try:
            done, died = _one_runner(h, task, todo)
        except Exception as e:  # noqa: BLE001 -- the shared runner could not even start: all alone
            log.warning("task %s: shared runner failed: %s: %s", task.task_id, type(e).__name__, str(e)[:300])
            done, died = [], None
        out += done
        todo = todo[len(done):]
        if not todo:
            break
        if died == "retired":  # a candidate leaked device memory: the rest start afresh
            continue
        # The candidate being judged when the runner died (or, if the runner never ran, all of
        # them) is evaluated in a runner of its own; the rest continue in a fresh shared runner.
        alone = todo[:1] if died is not None else todo
        for res, so_path in alone:
            res.flags.append(FALLBACK_FLAG)
            h._gpu_alone(task, so_path, res)
            out.append(res)
        todo = todo[len(alone):]
    return out


def _held_memory(runner: gpuworker.Runner) -> tuple[str, int] | None:
    """Device memory the runner holds with no argument buffers allocated, as (how, bytes): "nvml",
    its own figure read from outside (cudaperf.devmem), else "gpu", the negated free memory of the
    whole GPU that the runner reports (moved by every other process too: the fallback where NVML
    cannot say). Only readings taken the same way are compared. None if neither is available."""
    if not runner.request("free").startswith("ok"):
        return None
    proc = getattr(runner, "proc", None)
    used = devmem.process_used_bytes(proc.pid) if proc is not None else None
    if used is not None:
        return "nvml", used
    rep = runner.request("mem")
    return ("gpu", -int(rep.split()[1])) if rep.startswith("ok") else None


def _left_behind(base: tuple[str, int] | None, now: tuple[str, int] | None) -> int | None:
    """Bytes held now beyond the fresh runner's reading; None when the two cannot be compared."""
    if base is None or now is None or base[0] != now[0]:
        return None
    return now[1] - base[1]


def _one_runner(h: "Harness", task: Task, todo: list[tuple[EvalResult, str]]
                ) -> tuple[list[EvalResult], gpuworker.RunnerDied | str | None]:
    """Judge `todo` in order in one runner -- fresh, or kept from an earlier group with
    `keep_runners` (cudaperf.keptrunners) -- until one kills it or leaks device memory.
    Returns (filled copies of the records judged, why it stopped: the RunnerDied, "retired"
    after a leak, or None when all were judged). Raises if the runner cannot be set up (no
    candidate has run in it then)."""
    from cudaperf.harness import task_fingerprint

    base_so, shim = h._gpu_files(task, [so for _, so in todo])
    ahead = h._warm_references(task)
    t = time.perf_counter()
    slot = h._slots.get()
    waits = {"reference_ahead": ahead, "slot_wait": round(time.perf_counter() - t, 4)}
    gpu = h._pick_gpu()
    lock = h._locks[gpu]
    lock.take_stats()
    done: list[EvalResult] = []
    kept: keptrunners.Kept | None = None
    why: gpuworker.RunnerDied | str | None = "setup"  # anything but None shuts the runner down
    try:
        t = time.perf_counter()
        kept = h._kept.take(gpu) if h.cfg.keep_runners else None
        if kept is not None:
            try:
                keptrunners.switch_task(kept, shim)
            except (gpuworker.RunnerDied, RuntimeError) as e:  # no candidate of this task ran in it yet
                log.info("task %s: kept runner not usable (%s); starting a fresh one", task.task_id, e)
                kept.close()
                kept = None
        if kept is None:
            kept = keptrunners.start(h, gpu, slot, shim)
        runner, scratch = kept.runner, kept.scratch
        rep = runner.request(f"load 0 {kept.stage(base_so, 'base')} {task.entry}")
        if not rep.startswith("ok"):
            raise RuntimeError(f"baseline failed to load: {rep}")
        start = round(time.perf_counter() - t, 4)
        # The naive variant alone, before any candidate of this task is loaded: the clean baseline.
        key = (task_fingerprint(task), gpu)
        with h._clean_mu:
            clean = h._clean_base.get(key)
        if clean is None:
            clean = h._time_naive_alone(task, runner, scratch, gpu, 0)
            with h._clean_mu:  # two runners of a task measured at once: one number for both
                clean = h._clean_base.setdefault(key, clean)
        if kept.mem0 is None:
            kept.mem0 = _held_memory(runner)
        for k, (rec, so_path) in enumerate(todo):
            res = copy.deepcopy(rec)  # the original stays untouched for a fallback
            res.gpu, res.versions["compute_capability"] = kept.gpu_name, kept.cc
            t = time.perf_counter()
            try:
                rep = runner.request(f"load {k + 1} {kept.stage(so_path, 'cand')} {task.entry}")
                if not rep.startswith("ok"):
                    if rep.startswith("cuda"):  # load-time device work broke the context
                        raise gpuworker.RunnerDied("load", rep)
                    h._note_load_failure(res, rep)
                else:
                    h._judge_loaded(task, runner, scratch, gpu, res, cand=k + 1, base=0)
            except gpuworker.RunnerDied as e:
                log.info("task %s: shared runner died on candidate %d: %s", task.task_id, k, e)
                why = e
                return done, e
            kept.judged += 1
            h._note_clean_baseline(res, clean)
            res.timings.update(waits)
            res.timings.update(lock.take_stats())
            res.timings.update({"runner_start": start, "shared_runner": len(todo), "shared_position": k,
                                "runner_reused": kept.groups})
            res.timings["total"] = round(res.timings.get("total", 0.0) + time.perf_counter() - t, 4)
            done.append(res)
            # After every candidate but the last -- and after the last too when the runner may be
            # kept for another task -- a leak retires the runner.
            if k + 1 < len(todo) or h.cfg.keep_runners:
                try:
                    left = _left_behind(kept.mem0, _held_memory(runner))
                except gpuworker.RunnerDied as e:  # died after its verdict: the rest start afresh
                    log.info("task %s: shared runner died after candidate %d: %s", task.task_id, k, e)
                    why = "retired"
                    return done, why
                if left is not None:
                    # What the runner's libraries and leaks hold so far (whether loaded modules
                    # alone reach the limit), and which reading it came from (1: NVML's own figure)
                    res.timings["device_left_mb"] = round(left / 2**20, 1)
                    res.timings["device_left_nvml"] = int(kept.mem0[0] == "nvml")
                if left is None or left > LEAK_LIMIT_BYTES:
                    res.timings["runner_retired"] = 1
                    log.info("task %s: candidate %d left %s bytes of device memory; fresh runner for the rest",
                             task.task_id, k, left)
                    why = "retired"
                    return done, why if k + 1 < len(todo) else None
        why = None
    finally:
        if kept is not None:
            if h.cfg.keep_runners:
                h._kept.give_back(kept, why is None, h.cfg.keep_runners)
            else:
                kept.close()
        h._slots.put(slot)
    return done, None
