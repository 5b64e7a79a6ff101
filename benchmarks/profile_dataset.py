"""GPU: Nsight Compute features of the dataset's variants -> data/features/profiled_c2cuda_<gpu>.parquet.

What it does (one command, resumable across sessions):
1. Orders every (task, variant) of the C->CUDA dataset in a *stratified order*: whole tasks,
   families taking turns in proportion to their size (`cudaperf.tasks.stratified_order`), so every prefix of
   the order is a stratified sample over all families. Profiling walks that order until the
   time budget (--time-budget-s) or --max-variants is reached: a run that cannot cover the whole
   dataset leaves a stratified sample, and the metadata says how many variants of how many it
   covers. Ask for at least 3,000 (the issue's floor) when the device time allows.
2. Compiles each task's variants in one nvcc call (compile_batch, one-by-one fallback), in a
   thread pool that runs ahead of the profiler.
3. Profiles shards of --shard-size candidates per process: ``ncu <metrics> python THIS --worker
   spec.json``. The worker (ctypes, no torch) loads each variant's library, allocates the perf
   test's inputs once per task, launches the marker kernel with grid = shard index + 1, calls the
   variant, synchronises and logs ``start/ok/err`` lines to a status file. `classify_status`
   turns those lines into done / failed / not-reached, so a crash or a hang costs one candidate
   (recorded as cuda_error / timeout) and the rest of the shard is requeued. The next shards'
   inputs are drawn meanwhile by --input-procs processes into /dev/shm (`InputPrefetcher`): a
   shard of 48 variants took 27 s on the H200, and drawing its 16 tasks' inputs takes about 10 s
   on one core of the CPU machine, time the GPU sat idle while the worker did it.
4. After every shard the parquet is rewritten (atomically) with all rows so far: it is both the
   deliverable and the resume state. Rerunning skips every (task, variant) already in it
   (--retry-failed re-profiles the rows whose status is not ``ok``).

Columns: task_id, family, category, split, variant, status, error, shard, prof_<name> for the
eleven features (cudaperf.profiled.profiled_features; xfer and syncthreads are always empty:
Nsight Compute cannot see them), prof_sectors_per_request, prof_flops, prof_dram_bytes,
prof_duration_ns. Metadata (key ``cudaperf``): gpu, ncu version, the ncu command, metrics, test
size, seed, order, coverage.

    python benchmarks/profile_dataset.py --time-budget-s 1200 --jobs 16     # on the GPU machine
    python benchmarks/profile_dataset.py --max-variants 40 --out-dir /tmp/p  # a quick check
    python benchmarks/profile_dataset.py --dry-run --max-variants 3000       # the plan only, CPU
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import multiprocessing
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from cudaperf.features import FEATURE_NAMES  # noqa: E402
from cudaperf.profiled import (MARKER_SOURCE, METRICS, ncu_command, parse_ncu_csv,  # noqa: E402
                               profiled_features, split_by_marker)
from cudaperf.tasks import Task, stratified_prefix, task_from_dict  # noqa: E402

PROF_COLUMNS = [f"prof_{n}" for n in FEATURE_NAMES] + [
    "prof_sectors_per_request", "prof_flops", "prof_dram_bytes", "prof_duration_ns"]
KEY = ("task_id", "variant")
# Helpers the worker calls through ctypes. They live in one library linked against the same
# shared cudart as the variants (nvcc -cudart shared), so all share one CUDA context.
HELPER_SOURCE = MARKER_SOURCE + r"""
#include <cuda_runtime.h>
extern "C" int cudaperf_mark(int index) { cudaperf_marker<<<index + 1, 1>>>(); return (int)cudaGetLastError(); }
extern "C" void *cudaperf_alloc(size_t n) { void *p = 0; return cudaMalloc(&p, n ? n : 1) == cudaSuccess ? p : 0; }
extern "C" int cudaperf_h2d(void *d, const void *h, size_t n) { return (int)cudaMemcpy(d, h, n, cudaMemcpyHostToDevice); }
extern "C" int cudaperf_free(void *d) { return (int)cudaFree(d); }
extern "C" int cudaperf_sync(void) {
    cudaError_t e = cudaDeviceSynchronize();
    return (int)(e != cudaSuccess ? e : cudaGetLastError());
}
extern "C" const char *cudaperf_errname(int e) { return cudaGetErrorName((cudaError_t)e); }
"""
# cudaErrorIllegalAddress, LaunchFailure, IllegalInstruction, MisalignedAddress, InvalidPc,
# HardwareStackError, Assert, LaunchTimeout: the context is dead after these.
_STICKY = {700, 719, 715, 716, 718, 714, 710, 702}


# ---------------------------------------------------------------------------- plan (CPU)


def plan_items(tasks: Sequence[Task], *, done: set[tuple[str, str]] = frozenset(),
               max_variants: int = 0, seed: int = 0) -> list[tuple[Task, str]]:
    """(task, variant) pairs still to profile, in stratified order, whole tasks only.

    ``max_variants`` caps the stratified prefix (done ones included), so that rerunning with the
    same cap finishes the same sample rather than growing it.
    """
    return [(t, v.name) for t in stratified_prefix(tasks, max_variants, seed)
            for v in t.variants if (t.task_id, v.name) not in done]


def tasks_of(items: Sequence[tuple[Task, str]]) -> list[Task]:
    """The tasks of (task, variant) pairs, each once, in order."""
    return list({t.task_id: t for t, _ in items}.values())


def shards(items: Sequence[tuple[Task, str]], size: int) -> list[list[tuple[Task, str]]]:
    """Consecutive shards of at most `size` items; a task's variants are never split across two
    shards unless the task alone has more than `size` (inputs are built once per task)."""
    out: list[list[tuple[Task, str]]] = []
    cur: list[tuple[Task, str]] = []
    i = 0
    while i < len(items):
        j = i
        while j < len(items) and items[j][0].task_id == items[i][0].task_id:
            j += 1
        group = list(items[i:j])
        if cur and len(cur) + len(group) > size:
            out.append(cur)
            cur = []
        while len(group) > size:
            out.append(group[:size])
            group = group[size:]
        cur.extend(group)
        i = j
    if cur:
        out.append(cur)
    return out


def done_keys(df: pd.DataFrame | None, retry_failed: bool = False) -> set[tuple[str, str]]:
    if df is None or df.empty:
        return set()
    keep = df if not retry_failed else df[df["status"] == "ok"]
    return set(zip(keep["task_id"], keep["variant"]))


def classify_status(lines: Iterable[str], n: int) -> tuple[set[int], dict[int, str], list[int]]:
    """From the worker's status lines: (ok indices, {index: failure reason}, indices not reached).

    A candidate with ``start`` but neither ``ok`` nor ``err`` is the one that was running when
    the worker died or hung; its reason is ``died`` (the caller knows whether it was a timeout).
    """
    started: list[int] = []
    ok: set[int] = set()
    failed: dict[int, str] = {}
    for line in lines:
        parts = line.strip().split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            continue  # a torn last line
        i = int(parts[1])
        if not 0 <= i < n:
            continue
        if parts[0] == "start":
            started.append(i)
        elif parts[0] == "ok":
            ok.add(i)
        elif parts[0] == "err":
            failed[i] = parts[2] if len(parts) > 2 else "error"
    for i in started:
        if i not in ok and i not in failed:
            failed[i] = "died"
    return ok, failed, [i for i in range(n) if i not in ok and i not in failed]


def ideal_sectors(task: Task) -> float:
    """Sectors a fully coalesced warp request needs: 32 threads x element bytes / 32-byte sector,
    with the widest pointer element type of the signature."""
    sizes = [p.dtype.itemsize for p in task.signature if p.is_pointer]
    return float(min(16, max(1, max(sizes, default=4))))


def rows_from_profile(csv_text: str, items: Sequence[tuple[Task, str]], ok: set[int],
                      failed: dict[int, str], shard_id: int) -> list[dict[str, Any]]:
    """Table rows for the candidates of one shard that finished (ok or failed)."""
    groups = split_by_marker(parse_ncu_csv(csv_text))
    rows = []
    for i, (task, variant) in enumerate(items):
        if i not in ok and i not in failed:
            continue
        row: dict[str, Any] = {"task_id": task.task_id, "family": task.family,
                               "category": str(task.meta.get("category", "")), "split": task.split,
                               "variant": variant, "shard": shard_id, "error": ""}
        row.update({c: np.nan for c in PROF_COLUMNS})
        if i in failed:
            row["status"], row["error"] = "failed", failed[i][:500]
        elif not groups.get(i):
            row["status"], row["error"] = "no_kernels", "no kernel was profiled after the marker"
        else:
            f = profiled_features(groups[i], ideal_sectors=ideal_sectors(task))
            row["status"] = "ok"
            for n in FEATURE_NAMES + ["sectors_per_request", "flops", "dram_bytes"]:
                v = f.get(n)
                row[f"prof_{n}"] = np.nan if v is None else float(v)
            row["prof_duration_ns"] = float(sum(k.get("gpu__time_duration.sum") for k in groups[i]))
        rows.append(row)
    return rows


def failed_rows(items: Sequence[tuple[Task, str]], reason: str, shard_id: int) -> list[dict[str, Any]]:
    return rows_from_profile("", items, set(), {i: reason for i in range(len(items))}, shard_id)


# ---------------------------------------------------------------------------- storage


def out_path(out_dir: str | Path, gpu: str) -> Path:
    from cudaperf.envinfo import gpu_slug

    return Path(out_dir) / f"profiled_c2cuda_{gpu_slug(gpu)}.parquet"


def merge_rows(old: pd.DataFrame | None, new_rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Old rows with new ones replacing any row of the same (task_id, variant)."""
    new = pd.DataFrame(new_rows)
    if old is None or old.empty:
        return new.reset_index(drop=True)
    if new.empty:
        return old
    both = pd.concat([old, new], ignore_index=True)
    return both.drop_duplicates(list(KEY), keep="last").reset_index(drop=True)


def coverage(df: pd.DataFrame, tasks: Sequence[Task]) -> dict[str, Any]:
    ok = df[df["status"] == "ok"] if not df.empty else df
    fams = {t.family for t in tasks}
    return {"variants_in_dataset": sum(len(t.variants) for t in tasks),
            "variants_attempted": int(len(df)), "variants_ok": int(len(ok)),
            "families_in_dataset": len(fams),
            "families_covered": int(ok["family"].nunique()) if len(ok) else 0}


# ---------------------------------------------------------------------------- compile


def compile_task(task: Task, cache_dir: str, arch: str) -> dict[str, tuple[str | None, str, str]]:
    """{variant: (library path or None, symbol, log tail)} for one task. Libraries already in
    the compile cache (installed from a --prebuilt archive) are used as they are: no nvcc."""
    from cudaperf.compile import compile_batch, compile_candidate, lookup

    cached = {v.name: lookup(v.source, arch=arch, cache_dir=cache_dir) for v in task.variants}
    if all(r is not None and r.ok and r.so_path for r in cached.values()):
        return {name: (r.so_path, task.entry, "") for name, r in cached.items()}
    kw = dict(arch=arch, cache_dir=cache_dir, timeout_s=180)
    try:
        res, syms = compile_batch({v.name: v.source for v in task.variants}, task.entry, **kw)
        if res.ok:
            return {v.name: (res.so_path, syms[v.name], "") for v in task.variants}
    except ValueError:
        pass
    out = {}
    for v in task.variants:
        r = compile_candidate(v.source, **kw)
        out[v.name] = (r.so_path if r.ok else None, task.entry, "" if r.ok else r.log[-300:])
    return out


# ---------------------------------------------------------------------------- inputs made ahead


def write_inputs(task_dict: dict[str, Any], test_name: str, where: str) -> str:
    """Pool job: the task's inputs for `test_name` (seed 0, `make_inputs`) as .npy files in
    `where`, then a DONE marker, so a reader never sees half of them."""
    from cudaperf.inputs import make_inputs

    task = task_from_dict(task_dict)
    test = next(t for t in task.tests if t.name == test_name)
    d = Path(where)
    d.mkdir(parents=True, exist_ok=True)
    for name, arr in make_inputs(task, test, seed=0).items():
        np.save(d / f"{name}.npy", np.asarray(arr), allow_pickle=False)
    (d / "DONE").write_text("")
    return where


def read_inputs(where: str | None) -> dict[str, np.ndarray] | None:
    """The inputs `write_inputs` left in `where` (arrays mapped, not copied), or None when they
    are not complete (the worker then makes them itself: same values, only slower)."""
    if not where or not (Path(where) / "DONE").exists():
        return None
    out = {}
    for f in Path(where).glob("*.npy"):
        arr = np.load(f, mmap_mode="r", allow_pickle=False)
        out[f.stem] = np.array(arr) if arr.ndim == 0 else arr
    return out


class InputPrefetcher:
    """Makes the inputs of the next shards in a process pool while ncu profiles the current one.

    Why: the worker under ncu used to draw every task's perf-size inputs itself, serially, with
    the GPU idle (about 10 s per 16-task shard on one core here, against 27 s per shard on the
    H200). `ahead(queue)` submits the tasks of the next
    `lookahead` shards, `wait(shard)` blocks until that shard's are written (a failed job just
    leaves no DONE), `where(task)` names a task's directory for the spec, and `release(keep)`
    deletes every directory whose task is not in `keep`.
    """

    def __init__(self, root: Path, pool: Any, test_of: Callable[[Task], Any], lookahead: int = 2):
        self.root, self.pool, self.test_of, self.lookahead = Path(root), pool, test_of, lookahead
        self.jobs: dict[str, Future] = {}

    def where(self, task: Task) -> str:
        digest = hashlib.sha256(f"{task.task_id}\0{self.test_of(task).name}".encode()).hexdigest()[:24]
        return str(self.root / digest)

    def ahead(self, queue: Sequence[Sequence[tuple[Task, str]]]) -> None:
        for sh in queue[:self.lookahead]:
            for task in tasks_of(sh):
                if task.task_id not in self.jobs:
                    self.jobs[task.task_id] = self.pool.submit(
                        write_inputs, {**task.to_dict(), "variants": []}, self.test_of(task).name, self.where(task))

    def wait(self, shard: Sequence[tuple[Task, str]]) -> None:
        for task in tasks_of(shard):
            job = self.jobs.get(task.task_id)
            if job is not None:
                try:
                    job.result()
                except Exception as e:  # noqa: BLE001 - the worker makes them itself
                    print(f"inputs of {task.task_id} not made ahead: {type(e).__name__}: {e}", flush=True)

    def release(self, keep: Iterable[Task]) -> None:
        keep_ids = {t.task_id for t in keep}
        for tid in [k for k in self.jobs if k not in keep_ids]:
            job = self.jobs.pop(tid)
            try:
                where = job.result()
            except Exception:  # noqa: BLE001 - nothing complete was written
                continue
            shutil.rmtree(where, ignore_errors=True)


# ---------------------------------------------------------------------------- worker (GPU)


def _ctype(dtype: np.dtype):
    return ctypes.c_bool if dtype == np.bool_ else np.ctypeslib.as_ctypes_type(dtype)


def worker(spec_path: str, status_path: str) -> int:
    """Runs under ncu: every candidate of the spec, each after its marker; logs to status_path."""
    from cudaperf.inputs import make_inputs, output_shapes

    spec = json.loads(Path(spec_path).read_text())
    h = ctypes.CDLL(spec["helper"])
    h.cudaperf_alloc.restype = ctypes.c_void_p
    h.cudaperf_alloc.argtypes = [ctypes.c_size_t]
    h.cudaperf_h2d.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    h.cudaperf_free.argtypes = [ctypes.c_void_p]
    h.cudaperf_errname.restype = ctypes.c_char_p
    status = open(status_path, "a", buffering=1)
    tasks: dict[str, Task] = {}
    cur_task, bufs, args = None, [], []

    def release():
        for b in bufs:
            h.cudaperf_free(b)
        bufs.clear()

    for it in spec["items"]:
        i = it["index"]
        status.write(f"start {i}\n")
        status.flush()
        try:
            if it["task_id"] != cur_task:
                release()
                task = tasks.setdefault(it["task_id"], task_from_dict(spec["tasks"][it["task_id"]]))
                test = next(t for t in task.tests if t.name == it["test"])
                ins = read_inputs(it.get("inputs"))
                if ins is None:
                    ins = make_inputs(task, test, seed=0)
                outs = output_shapes(task, test)
                args = []
                for p in task.signature:
                    if p.is_pointer:
                        arr = ins.get(p.name)
                        nbytes = arr.nbytes if arr is not None else outs[p.name][0] * p.dtype.itemsize
                        d = h.cudaperf_alloc(nbytes)
                        if not d:
                            raise RuntimeError(f"cudaMalloc of {nbytes} bytes failed")
                        bufs.append(d)
                        if arr is not None and arr.nbytes:
                            arr = np.ascontiguousarray(arr)
                            if h.cudaperf_h2d(d, arr.ctypes.data, arr.nbytes):
                                raise RuntimeError("cudaMemcpy to device failed")
                        args.append(ctypes.c_void_p(d))
                    else:
                        args.append(_ctype(p.dtype)(ins[p.name].item()))
                cur_task = it["task_id"]
            fn = getattr(ctypes.CDLL(it["so"]), it["symbol"])
            fn.restype = None
            if h.cudaperf_mark(i):
                raise RuntimeError("marker launch failed")
            fn(*args)
            e = h.cudaperf_sync()
        except Exception as exc:  # noqa: BLE001 - recorded per candidate, the shard goes on
            status.write(f"err {i} {type(exc).__name__}: {str(exc)[:200]}\n")
            cur_task = None
            release()
            continue
        if e:
            status.write(f"err {i} cuda {e} {h.cudaperf_errname(e).decode()}\n")
            if e in _STICKY:
                return 3  # the context is gone; the orchestrator requeues the rest
        else:
            status.write(f"ok {i}\n")
    release()
    return 0


# ---------------------------------------------------------------------------- orchestrator (GPU)


def gpu_name() -> str:
    out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
    if not out:
        raise SystemExit("no GPU visible (nvidia-smi lists none): this script needs one")
    return out[0].strip()


def ncu_version(ncu: str) -> str:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError as e:
        raise SystemExit(f"cannot run {ncu}: {e}")
    return out.strip().splitlines()[-1] if out.strip() else "unknown"


def run_shard(items, libs, helper: str, shard_id: int, test_of, ncu: str, timeout_s: float,
              tmp: Path, inputs: InputPrefetcher | None = None) -> tuple[list[dict], list[tuple[Task, str]]]:
    """Profile one shard; returns (rows of finished candidates, items to requeue)."""
    spec_items, runnable = [], []
    rows: list[dict] = []
    for task, variant in items:
        so, sym, log = libs[task.task_id][variant]
        if so is None:
            rows += failed_rows([(task, variant)], f"compile error: {log}", shard_id)
            continue
        spec_items.append({"index": len(runnable), "task_id": task.task_id, "test": test_of(task).name,
                           "so": so, "symbol": sym, "inputs": inputs.where(task) if inputs else None})
        runnable.append((task, variant))
    if not runnable:
        return rows, []
    tasks = {t.task_id: {**t.to_dict(), "variants": []} for t, _ in runnable}
    spec = tmp / f"shard{shard_id}.json"
    spec.write_text(json.dumps({"helper": helper, "items": spec_items, "tasks": tasks}))
    status, log = tmp / f"shard{shard_id}.status", tmp / f"shard{shard_id}.csv"
    for p in (status, log):
        p.unlink(missing_ok=True)
    cmd = ncu_command([sys.executable, str(Path(__file__).resolve()), "--worker", str(spec),
                       "--status", str(status)], ncu=ncu, extra=["--log-file", str(log)])
    timed_out, tail = False, ""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        tail = (proc.stdout + proc.stderr)[-400:]
    except subprocess.TimeoutExpired:
        timed_out = True
    lines = status.read_text().splitlines() if status.exists() else []
    ok, failed, remaining = classify_status(lines, len(runnable))
    if not ok and not failed:  # the worker never got going (ncu refused, helper did not load...)
        failed, remaining = {i: f"no progress: {tail or 'timeout'}" for i in range(len(runnable))}, []
    failed = {i: ("timeout" if timed_out and r == "died" else r) for i, r in failed.items()}
    text = log.read_text(errors="replace") if log.exists() else ""
    rows += rows_from_profile(text, runnable, ok, failed, shard_id)
    return rows, [runnable[i] for i in remaining]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--status", help=argparse.SUPPRESS)
    ap.add_argument("--max-variants", type=int, default=0, help="stratified prefix to cover (0 = all)")
    ap.add_argument("--time-budget-s", type=float, default=1500, help="stop starting shards after this")
    ap.add_argument("--shard-size", type=int, default=150, help="candidates per ncu process")
    ap.add_argument("--shard-timeout-s", type=float, default=540, help="wall limit of one ncu process")
    ap.add_argument("--jobs", type=int, default=0, help="parallel nvcc builds (0 = all cores)")
    ap.add_argument("--input-procs", type=int, default=6,
                    help="processes making the next shards' inputs while one is profiled (0: the worker makes them)")
    ap.add_argument("--test", choices=["perf", "largest_edge"], default="perf",
                    help="input size: the perf test, or the largest non-perf test (faster replays)")
    ap.add_argument("--seed", type=int, default=0, help="dataset and order seed")
    ap.add_argument("--retry-failed", action="store_true", help="re-profile rows whose status is not ok")
    ap.add_argument("--ncu", default="ncu", help="Nsight Compute CLI")
    ap.add_argument("--arch", default="auto", help="nvcc -arch (auto: the GPU's)")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache/cudaperf"), help="compile cache")
    ap.add_argument("--out-dir", default=str(ROOT / "data/features"), help="where the parquet goes")
    ap.add_argument("--dry-run", action="store_true", help="print the plan (CPU only) and exit")
    ap.add_argument("--pack-prebuilt", metavar="OUT", help="CPU machine: build the planned sample's libraries "
                    "(same nvcc release as the GPU machine) into the archive OUT and exit")
    ap.add_argument("--prebuilt", nargs="*", default=[], metavar="ARCHIVE",
                    help="archives of libraries built ahead (--pack-prebuilt, cudaperf.prebuilt pack): "
                         "installed into the compile cache first, so their variants need no nvcc here")
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.status)

    from cudaperf import featurize
    from cudaperf.families import build_dataset

    tasks = build_dataset(seed=args.seed)

    def test_of(task: Task):
        if args.test == "perf":
            return task.perf_test
        rest = [t for t in task.tests if not t.perf] or task.tests
        return max(rest, key=task.numel_total)

    if args.pack_prebuilt:
        from cudaperf import prebuilt

        planned = tasks_of(plan_items(tasks, max_variants=args.max_variants, seed=args.seed))
        arch = "sm_90" if args.arch == "auto" else args.arch  # no GPU here: the H200's by default
        print(json.dumps(prebuilt.pack(planned, args.pack_prebuilt, arch=arch, jobs=args.jobs)))
        return 0

    if args.dry_run:
        items = plan_items(tasks, max_variants=args.max_variants, seed=args.seed)
        fam = pd.Series([t.family for t, _ in items]).value_counts()
        print(f"{len(items)} variants of {len({t.task_id for t, _ in items})} tasks, "
              f"{fam.size} of {len({t.family for t in tasks})} families, "
              f"{len(shards(items, args.shard_size))} shards; per family min {fam.min()} max {fam.max()}")
        return 0

    gpu = gpu_name()
    ncu_ver = ncu_version(args.ncu)
    path = out_path(args.out_dir, gpu)
    df = featurize.load(path) if path.exists() else None
    items = plan_items(tasks, done=done_keys(df, args.retry_failed), max_variants=args.max_variants,
                       seed=args.seed)
    from cudaperf.compile import compile_candidate, detect_arch

    arch = detect_arch() if args.arch == "auto" else args.arch
    if args.prebuilt:
        from cudaperf import prebuilt

        planned = tasks_of(items)
        for archive in args.prebuilt:
            print(f"prebuilt libraries from {archive}: "
                  f"{json.dumps(prebuilt.install(archive, planned, args.cache_dir, arch=arch))}", flush=True)
    helper = compile_candidate(HELPER_SOURCE, arch=arch, cache_dir=args.cache_dir)
    if not helper.ok:
        raise SystemExit(f"helper library does not compile:\n{helper.log}")
    meta = {"kind": "profiled_features", "gpu": gpu, "ncu": ncu_ver, "arch": arch,
            "command": "python benchmarks/profile_dataset.py " + " ".join(map(shlex.quote, argv or sys.argv[1:])),
            "ncu_command": " ".join(ncu_command(["python", "profile_dataset.py", "--worker", "SPEC"], ncu=args.ncu)),
            "metrics": METRICS, "test": args.test, "input_seed": 0, "dataset_seed": args.seed,
            "order": "stratified by family (proportional to each family's variants, whole tasks); "
                     "the rows are a prefix of that order",
            "max_variants": args.max_variants}
    print(f"{gpu}, {ncu_ver}: {len(items)} variants to profile -> {path}", flush=True)
    pool = ThreadPoolExecutor(max_workers=args.jobs or os.cpu_count() or 1)
    futs: dict[str, Future] = {}
    for t, _ in items:
        if t.task_id not in futs:
            futs[t.task_id] = pool.submit(compile_task, t, args.cache_dir, arch)
    t0 = time.monotonic()
    queue = shards(items, args.shard_size)
    shard_id = int(df["shard"].max()) + 1 if df is not None and len(df) else 0
    per_item = None
    # Inputs go to /dev/shm where there is one (perf sizes are hundreds of MB per task).
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    # spawn, not fork: the compile threads are running, and a forked child could inherit a held lock
    gen_pool = (ProcessPoolExecutor(max_workers=min(args.input_procs, os.cpu_count() or 1),
                                    mp_context=multiprocessing.get_context("spawn"))
                if args.input_procs > 0 else None)
    with tempfile.TemporaryDirectory(prefix="cudaperf-prof-") as tmp, \
            tempfile.TemporaryDirectory(prefix="cudaperf-prof-inputs-", dir=shm) as inputs_root:
        inputs = InputPrefetcher(Path(inputs_root), gen_pool, test_of, lookahead=3) if gen_pool else None
        try:
            while queue:
                sh = queue.pop(0)
                left = args.time_budget_s - (time.monotonic() - t0)
                if per_item is not None and per_item * len(sh) > left or left <= 0:
                    print(f"time budget reached; {sum(map(len, queue)) + len(sh)} variants left for a "
                          "later run (rerun the same command to resume)", flush=True)
                    break
                if inputs is not None:
                    inputs.ahead([sh] + queue)
                    inputs.wait(sh)
                libs = {t.task_id: futs[t.task_id].result() for t, _ in sh}
                s0 = time.monotonic()
                rows, requeue = run_shard(sh, libs, helper.so_path, shard_id, test_of, args.ncu,
                                          min(args.shard_timeout_s, max(30.0, left)), Path(tmp), inputs)
                dt = time.monotonic() - s0
                done_n = max(1, len(rows))
                per_item = dt / done_n if per_item is None else 0.7 * per_item + 0.3 * dt / done_n
                if requeue:
                    queue.insert(0, requeue)
                if inputs is not None:  # keep what the next shards still need
                    inputs.release(tasks_of([x for q in queue[:inputs.lookahead] for x in q]))
                df = merge_rows(df, rows)
                meta.update(coverage(df, tasks), seconds_this_run=round(time.monotonic() - t0, 1))
                featurize.save(df, path, meta=meta)
                n_ok = sum(r["status"] == "ok" for r in rows)
                print(f"shard {shard_id}: {n_ok}/{len(rows)} ok, {len(requeue)} requeued, {dt:.0f} s; "
                      f"total {meta['variants_ok']} ok of {meta['variants_in_dataset']}", flush=True)
                shard_id += 1
        finally:  # jobs still writing must end before their directory is removed
            if gen_pool is not None:
                gen_pool.shutdown(wait=True, cancel_futures=True)
    pool.shutdown(wait=False, cancel_futures=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
