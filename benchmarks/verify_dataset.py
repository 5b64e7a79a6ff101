"""Verify every variant of every C->CUDA task on a GPU, in shards that fit a 10-minute call.

    python benchmarks/verify_dataset.py --shard 0 --of 8                # one shard
    python benchmarks/verify_dataset.py --max-seconds 540               # as much as fits, resumable
    python benchmarks/verify_dataset.py --shard 3 --of 8 --max-seconds 540

Each run: picks its shard's tasks (round-robin over task ids sorted, so every shard mixes all
families; ``--sample N`` instead: the tasks benchmarks/profile_dataset.py --max-variants N
profiles, written to ``c2cuda_<gpu-slug>_sample.parquet``), skips (task, variant) pairs already
present in ANY existing ``data/measurements/c2cuda_<gpu-slug>_{shard*,sample}.parquet``
(resume; ``--retry-failed`` re-runs pairs whose stored row is not correct), then streams the shard's tasks, in the dataset's
stratified order, through ONE `Harness.evaluate_groups` call (`run_stream`: the variants of a
task share one runner and one timed region, `cudaperf.variantgroup`; a group starts whenever a
runner slot frees; `Harness.prepare` -- naive build, references -- runs a block of tasks ahead),
rewriting ``c2cuda_<gpu-slug>_shard<K>.parquet`` at least every minute (a killed run loses at
most that). With ``--max-seconds`` a group starts only while the longest group so far still
fits in the time left. ``--one-by-one`` uses `evaluate_many` instead, a runner per variant as
the RL reward does, in chunks (`run_chunks`). The parquet metadata holds GPU name, driver, nvcc version,
harness settings, git commit and the command. At the end it prints a summary: verified / failed
by status and reason, and the share of tasks whose naive variant takes >= 20 us at the perf size.

Without a GPU it refuses to write measurements (the harness could only compile); ``--plan``
prints the shard plan on any machine.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shlex
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaperf import envinfo, measurements as M  # noqa: E402
from cudaperf.result import is_internal_error  # noqa: E402
from cudaperf.tasks import (Task, load_tasks, shard_tasks, stratified_order,  # noqa: E402,F401 (tests use them from here)
                            stratified_prefix)
from cudaperf.stacksample import StackSampler  # noqa: E402

DEFAULT_TASKS = "data/tasks/c2cuda.jsonl.gz"
DEFAULT_OUT = "data/measurements"


def shard_path(out_dir: str | Path, slug: str, shard: int) -> Path:
    return Path(out_dir) / f"c2cuda_{slug}_shard{shard}.parquet"


def sample_path(out_dir: str | Path, slug: str) -> Path:
    """Where `--sample` runs write (the profiled sample's tasks come from every shard)."""
    return Path(out_dir) / f"c2cuda_{slug}_sample.parquet"


def existing_table(out_dir: str | Path, slug: str) -> pd.DataFrame:
    """All rows of this GPU's measurement files: shard files in shard order, then the sample file
    (later files win on a repeated pair)."""
    return M.load_merged(out_dir, slug)


def shard_order(tasks: Sequence[Task], shard: int, of: int, order: str = "stratified") -> list[Task]:
    """The tasks of one shard in the order they are verified.

    Stratified (the default): the shard's tasks in the dataset's stratified order
    (`cudaperf.tasks.stratified_order`, seed 0, the order dataset profiling uses), so that a
    shard cut short by the time budget has measured every family, which the ranker's held-out
    family splits need, and its first tasks are the ones whose profiled features exist.
    """
    mine = shard_tasks(tasks, shard, of)
    if order == "task_id":
        return mine
    if order != "stratified":
        raise ValueError(f"order {order!r}: expected 'stratified' or 'task_id'")
    rank = {t.task_id: i for i, t in enumerate(stratified_order(tasks, 0))}
    return sorted(mine, key=lambda t: rank[t.task_id])


def open_fds() -> int:
    """Descriptors this process holds (logged with progress, so a leak shows as growth)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return -1


def done_pairs(table: pd.DataFrame, retry_failed: bool = False) -> set[tuple[str, str]]:
    if not len(table):
        return set()
    # A harness error is not a verdict on the variant: such pairs are always measured again.
    if "message" in table:
        table = table[~table["message"].map(is_internal_error)]
    if retry_failed:
        table = table[(table["status"] == "correct") & table["correct"].fillna(False).astype(bool)]
    return set(zip(table["task_id"], table["variant"]))


def pending(tasks: Iterable[Task], done: set[tuple[str, str]]) -> list[tuple[Task, list[str]]]:
    """(task, variant names still to measure) for every task with something left, in order."""
    out = []
    for t in tasks:
        left = [v.name for v in t.variants if (t.task_id, v.name) not in done]
        if left:
            out.append((t, left))
    return out


def chunks(work: list[tuple[Task, list[str]]], max_variants: int) -> list[list[tuple[Task, list[str]]]]:
    """Whole tasks grouped so a chunk holds about `max_variants` variants (at least one task)."""
    out, cur, n = [], [], 0
    for item in work:
        if cur and n + len(item[1]) > max_variants:
            out.append(cur)
            cur, n = [], 0
        cur.append(item)
        n += len(item[1])
    if cur:
        out.append(cur)
    return out


def prepare_failure_rows(task: Task, variants: list[str], error: str, gpu: str | None,
                         toolchain: str | None) -> list[dict[str, Any]]:
    """Rows for a task the harness could not prepare (naive does not build, reference fails)."""
    return [{**dict.fromkeys(M.COLUMNS), "task_id": task.task_id, "family": task.family, "variant": v,
             "status": "crashed", "correct": False, "gpu": gpu, "toolchain": toolchain,
             "flags": ["task:prepare_failed"], "message": f"task preparation failed: {error}"[:2000],
             "measured_at": M.now_utc()} for v in variants]


def run_stream(harness: Any, work: list[tuple[Task, list[str]]], shard_file: Path, metadata: dict[str, Any], *,
               prepare_tasks: int = 40, max_seconds: float | None = None, save_every_s: float = 60.0,
               clock: Callable[[], float] = time.monotonic, log: Callable[[str], None] = print) -> pd.DataFrame:
    """Grouped verification without batch barriers: one `evaluate_groups` call over all of `work`
    (a group per task: its pending variants in one runner), rows saved as groups finish.

    Why: in chunks, every chunk waited for its slowest group with runner slots idle, and the next
    chunk's first groups waited again; on the H200 a 42-group chunk took 88-107 s where 42 groups
    of about 20 s each (median stage times) on 12 slots need about 70 s. Here the harness starts
    the next group whenever a slot frees.

    * `Harness.prepare` (naive build, references) runs for blocks of `prepare_tasks` tasks on one
      background thread, one block ahead of the groups being started; a task whose preparation
      failed gets failure rows and is not evaluated.
    * With `max_seconds`, a group starts only while the longest group so far (from start to its
      records) still fits in the time left (before any has finished: a quarter of the budget);
      the groups not started stay pending for the next run.
    * `shard_file` is rewritten (existing rows kept) at most every `save_every_s` seconds and at
      the end, so a killed run loses at most that much finished work.
    """
    start = clock()
    table = M.load_measurements(shard_file) if shard_file.exists() else M.to_table([])
    toolchain = (harness.versions() or {}).get("toolchain")
    blocks = [work[i:i + prepare_tasks] for i in range(0, len(work), max(1, prepare_tasks))]
    block_of = [b for b, blk in enumerate(blocks) for _ in blk]
    pool = ThreadPoolExecutor(1, thread_name_prefix="prepare")
    mu = threading.Lock()
    prepared: dict[int, Any] = {}
    started: dict[int, float] = {}
    state = {"table": table, "rows": [], "saved_at": start, "longest": 0.0, "refused": 0, "done": 0, "correct": 0}

    def prepare(b: int) -> dict[str, str]:
        with mu:
            for k in (b, b + 1):  # this block, and the next one ahead
                if k < len(blocks) and k not in prepared:
                    prepared[k] = pool.submit(harness.prepare, [t for t, _ in blocks[k]])
            fut = prepared[b]
        return fut.result()

    def flush() -> None:  # holding mu
        if state["rows"]:
            state["table"] = M.merge([state["table"], pd.DataFrame(state["rows"])])
            state["rows"] = []
            M.save_measurements(state["table"], shard_file, metadata=metadata)
        el = clock() - start
        log(f"{state['done']} variants, {state['correct']} correct, {el:.0f}s "
            f"({state['done'] / max(el, 1e-9) * 60:.0f}/min, {open_fds()} open files) -> {shard_file}")
        state["saved_at"] = clock()

    def gate(i: int) -> bool:
        task, names = work[i]
        if max_seconds is not None:
            margin = state["longest"] or max_seconds / 4
            if clock() - start + margin > max_seconds:
                with mu:
                    state["refused"] += len(names)
                return False
        errors = prepare(block_of[i])
        with mu:
            if task.task_id in errors:
                state["rows"] += prepare_failure_rows(task, names, errors[task.task_id], metadata.get("gpu"), toolchain)
                return False
            started[i] = clock()
        return True

    def on_done(i: int, records: list) -> None:
        task, names = work[i]
        if len(records) != len(names):
            raise RuntimeError(f"harness returned {len(records)} results for {len(names)} variants of {task.task_id}")
        when = M.now_utc()
        rows = [M.row_from_result(task, n, r, measured_at=when) for n, r in zip(names, records)]
        with mu:
            state["longest"] = max(state["longest"], clock() - started.pop(i))
            state["rows"] += rows
            state["done"] += len(rows)
            state["correct"] += sum(r["status"] == "correct" for r in rows)
            if clock() - state["saved_at"] >= save_every_s:
                flush()

    groups = [(t, [t.variant(n).source for n in names]) for t, names in work]
    try:
        if groups:
            harness.evaluate_groups(groups, gate=gate, on_done=on_done)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        with mu:
            flush()
    if state["refused"]:
        log(f"time budget: {state['refused']} variants not started; run again to resume")
    return state["table"]


def run_chunks(harness: Any, work: list[tuple[Task, list[str]]], shard_file: Path, metadata: dict[str, Any], *,
               chunk_variants: int = 64, max_seconds: float | None = None,
               clock: Callable[[], float] = time.monotonic, log: Callable[[str], None] = print) -> pd.DataFrame:
    """``--one-by-one``: measure `work` chunk by chunk with `harness.evaluate_many` (a runner per
    variant, as the RL reward does), rewriting `shard_file` (existing rows kept) after each
    chunk. Returns its table. (Grouped verification streams instead: `run_stream`.)"""
    start = clock()
    table = M.load_measurements(shard_file) if shard_file.exists() else M.to_table([])
    slowest, done = 0.0, 0
    todo = chunks(work, chunk_variants)
    # References and naive builds of the next chunk are made while this chunk runs on the GPU
    # (they are CPU work); a prefetch starts only when two chunks' time is still left.
    pool = ThreadPoolExecutor(1, thread_name_prefix="prepare")
    ahead = {0: pool.submit(harness.prepare, [t for t, _ in todo[0]])} if todo else {}
    try:
        for i, chunk in enumerate(todo):
            left = None if max_seconds is None else max_seconds - (clock() - start)
            if left is not None and (left <= 0 or (slowest and slowest > left)):
                rest = sum(len(v) for c in todo[i:] for _, v in c)
                log(f"time budget: stopping before chunk {i + 1}/{len(todo)} ({rest} variants left; run again to resume)")
                break
            t0 = clock()
            errors = (ahead.pop(i, None) or pool.submit(harness.prepare, [t for t, _ in chunk])).result()
            if i + 1 < len(todo) and (left is None or left - slowest > 2 * max(slowest, 1e-9)):
                ahead[i + 1] = pool.submit(harness.prepare, [t for t, _ in todo[i + 1]])
            table = _run_chunk(harness, chunk, errors, table, shard_file, metadata)
            slowest = max(slowest, clock() - t0)
            rows = table[table["task_id"].isin([t.task_id for t, _ in chunk])]
            ok = int((rows["status"] == "correct").sum())
            took = clock() - t0
            done += len(rows)
            log(f"chunk {i + 1}/{len(todo)}: {len(rows)} variants, {ok} correct, {took:.1f}s "
                f"({len(rows) / max(took, 1e-9) * 60:.0f}/min; {done / max(clock() - start, 1e-9) * 60:.0f}/min "
                f"overall, elapsed {clock() - start:.0f}s) -> {shard_file}")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return table


def _run_chunk(harness: Any, chunk: list[tuple[Task, list[str]]], errors: dict[str, str], table: pd.DataFrame,
               shard_file: Path, metadata: dict[str, Any]) -> pd.DataFrame:
    """Evaluate one prepared chunk and rewrite the shard file with its rows merged in."""
    toolchain = (harness.versions() or {}).get("toolchain")
    rows: list[dict[str, Any]] = []
    groups, keys = [], []
    for t, names in chunk:
        if t.task_id in errors:
            rows += prepare_failure_rows(t, names, errors[t.task_id], metadata.get("gpu"), toolchain)
            continue
        groups.append((t, [t.variant(n).source for n in names]))
        keys += [(t, n) for n in names]
    items = [(t, src) for t, srcs in groups for src in srcs]
    results = harness.evaluate_many(items) if items else []
    if len(results) != len(items):
        raise RuntimeError(f"harness returned {len(results)} results for {len(items)} candidates")
    when = M.now_utc()
    rows += [M.row_from_result(t, n, r, measured_at=when) for (t, n), r in zip(keys, results)]
    table = M.merge([table, pd.DataFrame(rows)])
    M.save_measurements(table, shard_file, metadata=metadata)
    return table


def failure_reasons(table: pd.DataFrame) -> dict[str, int]:
    """Count of non-verified rows by status and first failure word of the message."""
    bad = table[~((table["status"] == "correct") & table["correct"].fillna(False).astype(bool))]
    c = collections.Counter()
    for _, r in bad.iterrows():
        hacks = [f for f in r["flags"] if str(f).startswith(("hack:", "task:"))]
        c[f"{r['status']}" + (f" ({hacks[0]})" if hacks else "")] += 1
    return dict(c.most_common())


def stage_seconds(table: pd.DataFrame) -> dict[str, float]:
    """Median seconds per harness stage over the rows that recorded timings (where time goes)."""
    per: dict[str, list[float]] = collections.defaultdict(list)
    for t in table["timings"].dropna():
        for k, v in json.loads(t).items():
            per[k].append(float(v))
    return {k: round(float(pd.Series(v).median()), 3) for k, v in sorted(per.items())}


def summary_lines(table: pd.DataFrame) -> list[str]:
    s = M.summarize(table)
    frac = s["naive_ge_min_fraction"]
    return [
        f"rows {s['rows']} over {s['tasks']} tasks: verified {s['verified']}, failed {s['failed']}",
        f"failed by reason: {failure_reasons(table)}",
        f"naive >= {s['min_naive_ms'] * 1000:.0f} us at the perf size: "
        + (f"{frac:.1%} of {s['naive_tasks_timed']} timed naive variants" if frac is not None else "no naive timed"),
        f"best-variant speedup over naive, geometric mean: {s['best_speedup_geomean']}",
        f"median seconds per harness stage: {stage_seconds(table)}",
    ]


def run_metadata(harness: Any, argv: Sequence[str]) -> dict[str, Any]:
    gpus = envinfo.gpus()
    g = gpus[0] if gpus else {}
    return {"gpu": g.get("name"), "driver": g.get("driver"), "compute_capability": g.get("compute_capability"),
            "nvcc": envinfo.nvcc_version(), "versions": harness.versions(),
            "settings": harness.settings_key(), "git": envinfo.git_state(),
            "command": "python benchmarks/verify_dataset.py " + " ".join(shlex.quote(a) for a in argv),
            "started_at": M.now_utc()}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default=DEFAULT_TASKS)
    ap.add_argument("--out-dir", default=DEFAULT_OUT)
    ap.add_argument("--shard", type=int, default=0)
    ap.add_argument("--of", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="time budget: no group (chunk, --one-by-one) starts that would not finish within it")
    ap.add_argument("--chunk-variants", type=int, default=64, help="--one-by-one: variants per evaluate_many call")
    ap.add_argument("--prepare-tasks", type=int, default=40,
                    help="grouped: tasks per Harness.prepare call, made one block ahead of the groups started")
    ap.add_argument("--families", nargs="*", help="only these families")
    ap.add_argument("--retry-failed", action="store_true", help="re-run stored pairs that are not correct")
    ap.add_argument("--profile", default="mini", help="harness settings from this profile")
    ap.add_argument("--workers-per-gpu", type=int, default=12)
    ap.add_argument("--trusted", action="store_true",
                    help="the variants are our own dataset code: no recheck after timing and one input seed "
                         "per test (HarnessConfig.recheck / check_seeds), which halves the perf-size C "
                         "references; every test configuration is still checked and every variant timed")
    ap.add_argument("--gpus", default="", help="harness GPUs ('all' or a comma list; default: the profile's)")
    ap.add_argument("--order", choices=["stratified", "task_id"], default="stratified",
                    help="order of a shard's tasks: stratified (every prefix covers all families in proportion, "
                         "and the first are the sample benchmarks/profile_dataset.py profiles) or task id")
    ap.add_argument("--sample", type=int, default=0, metavar="N",
                    help="instead of a shard: the tasks of the stratified prefix of N variants (the sample "
                         "benchmarks/profile_dataset.py --max-variants N profiles), written to c2cuda_<gpu>_sample.parquet")
    ap.add_argument("--plan", action="store_true", help="print the shard plan and exit (any machine)")
    ap.add_argument("--prebuilt", default="", help="archive of this shard's libraries built on another machine "
                    "with the same nvcc (python -m cudaperf.prebuilt pack): installed into the compile cache first")
    ap.add_argument("--one-by-one", action="store_true",
                    help="a runner per variant (evaluate_many) instead of one per task (evaluate_groups)")
    ap.add_argument("--sample-stacks", default="", help="write where the threads spent their time to this file "
                    "(cudaperf.stacksample)")
    a = ap.parse_args(argv)

    tasks = load_tasks(a.tasks, families=a.families or None)
    if a.sample:  # the profiled sample: whole tasks from every shard, in the stratified order
        mine = stratified_prefix(tasks, a.sample)
    else:
        mine = shard_order(tasks, a.shard, a.of, a.order)
    if a.plan:
        if a.sample:
            print(f"sample of {a.sample} variants: {len(mine)} tasks, {sum(len(t.variants) for t in mine)} variants, "
                  f"{len({t.family for t in mine})} families")
            return 0
        for k in range(a.of):
            st = shard_tasks(tasks, k, a.of)
            print(f"shard {k}/{a.of}: {len(st)} tasks, {sum(len(t.variants) for t in st)} variants")
        return 0
    if not envinfo.gpu_available():
        print("no GPU visible: the harness could only compile, which verifies nothing; not writing "
              "measurements (use --plan to see the shards)", file=sys.stderr)
        return 2
    from cudaperf.config import get_profile
    from cudaperf.harness import Harness

    over = {"harness.gpus": a.gpus} if a.gpus else {}
    if a.trusted:
        over.update({"harness.recheck": False, "harness.check_seeds": 1})
    harness = Harness(get_profile(a.profile, **over).harness, workers_per_gpu=a.workers_per_gpu)
    try:
        meta = run_metadata(harness, argv)
        slug = envinfo.gpu_slug(meta["gpu"] or "unknown-gpu")
        done = done_pairs(existing_table(a.out_dir, slug), a.retry_failed)
        work = pending(mine, done)
        what = f"sample of {a.sample} variants" if a.sample else f"shard {a.shard}/{a.of}"
        print(f"{what}: {len(mine)} tasks, {sum(len(v) for _, v in work)} variants pending "
              f"({len(done)} pairs already measured on {meta['gpu']})")
        out = sample_path(a.out_dir, slug) if a.sample else shard_path(a.out_dir, slug, a.shard)
        meta["mode"] = "one_by_one" if a.one_by_one else "grouped"
        meta["recheck"], meta["check_seeds"] = harness.cfg.recheck, harness.cfg.check_seeds
        if a.prebuilt:
            from cudaperf import prebuilt

            counts = prebuilt.install(a.prebuilt, mine, harness.cache_dir, arch=harness.arch,
                                      flags=tuple(harness.cfg.nvcc_flags))
            print(f"prebuilt libraries from {a.prebuilt}: {json.dumps(counts)}")
            meta["prebuilt"] = counts
        sampler = StackSampler() if a.sample_stacks else contextlib.nullcontext()
        try:
            with sampler:
                if a.one_by_one:
                    table = run_chunks(harness, work, out, meta, chunk_variants=a.chunk_variants,
                                       max_seconds=a.max_seconds)
                else:
                    table = run_stream(harness, work, out, meta, prepare_tasks=a.prepare_tasks,
                                       max_seconds=a.max_seconds)
        finally:
            if a.sample_stacks:
                from cudaperf import gpuworker

                Path(a.sample_stacks).write_text(sampler.report(40) + "\n\nrunner requests (count, seconds "
                                                 "waited for replies, summed over threads):\n"
                                                 + json.dumps(gpuworker.request_stats(), indent=1) + "\n")
        print(f"\nfile {out}:")
        for line in summary_lines(table):
            print("  " + line)
        allrows = existing_table(a.out_dir, slug)
        print(f"all shards of {slug}:")
        for line in summary_lines(allrows):
            print("  " + line)
        left = pending(mine, done_pairs(allrows, a.retry_failed))
        print(json.dumps({"shard": a.shard, "of": a.of, "sample": a.sample,
                          "pending_after": sum(len(v) for _, v in left)}))
    finally:
        harness.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
