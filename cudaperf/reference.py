"""Reference outputs: the serial C reference of a c2cuda task, built with gcc and run on the CPU
in a sandbox; for a torch2cuda task, its PyTorch module run on the CPU in float64.

Guarantees:

* `build_reference` compiles ``task.reference`` once per task content (cache key: sha256 of
  reference, entry, signature, tests and precision setting) into
  ``<cache_dir>/ref/<task hash>/ref.so``. By default (``meta.reference_precision`` =
  ``"double"``) every ``float`` is promoted to ``double`` -- ``#define float double`` after the
  standard headers, and the float math functions (expf, sqrtf, ...) mapped to their double
  versions -- so the reference is computed in higher precision than the candidate; if that
  build fails it falls back to native precision. Which one was used is recorded
  (`reference_precision`) and decides the dtype of the outputs.
* `reference_outputs` runs the entry in ``python -m cudaperf.refrunner`` under
  `sandbox.run_limited` (time/memory/file limits, scrubbed env, scratch dir, and an
  unprivileged uid when root and the interpreter is reachable by one) on `inputs.make_inputs`
  of (task, test, seed), and caches the result as ``<task hash>/<test>/<seed>.npz`` when it is
  at most $CUDAPERF_REF_DISK_MAX_MB (default 64); bigger ones (perf-size tests) are kept only in
  memory (LRU, $CUDAPERF_REF_MEMORY_GB, default a quarter of RAM up to 32) and recomputed when
  evicted. The reference's files go through shared memory when it has room.
  Outputs are float64 for float parameters computed in double, the parameter's dtype otherwise.
* torch2cuda tasks: the module is trusted task data (generated here or taken from KernelBench),
  so it runs in this process (`torchtasks.runtime`, float64, same inputs), cached the same way.
* Failures (does not compile, crashes, times out, wrong output shapes) raise `ReferenceError`
  with the task id and the tail of the log.
"""
from __future__ import annotations

import collections
import hashlib
import json
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np

import cudaperf
from cudaperf import sandbox
from cudaperf.inputs import GENERATOR_VERSION, make_inputs, output_shapes
from cudaperf.tasks import Task, TestConfig


class ReferenceError(RuntimeError):  # noqa: A001 - the name the harness catches
    """The task's reference could not be built or run; the message names the task."""


_HEADERS = ("math.h", "float.h", "stdlib.h", "string.h", "stdint.h", "stdbool.h", "limits.h", "stdio.h",
            "stddef.h", "assert.h")
_FLOAT_MATH = ("sinf cosf tanf asinf acosf atanf atan2f sinhf coshf tanhf asinhf acoshf atanhf expf exp2f "
               "expm1f logf log2f log10f log1pf powf sqrtf cbrtf hypotf fabsf fminf fmaxf fmodf floorf ceilf "
               "roundf truncf rintf nearbyintf fmaf erff erfcf tgammaf lgammaf copysignf ldexpf frexpf modff "
               "remainderf fdimf scalbnf logbf").split()


def promoted_source(reference: str) -> str:
    """The reference with float promoted to double (headers included first stay unaffected)."""
    head = "".join(f"#include <{h}>\n" for h in _HEADERS)
    maps = "".join(f"#define {f} {f[:-1]}\n" for f in _FLOAT_MATH)
    return head + "#define float double\n" + maps + "#line 1 \"reference.c\"\n" + reference


def task_hash(task: Task) -> str:
    blob = json.dumps({"reference": task.reference, "entry": task.entry,
                       "signature": [p.__dict__ for p in task.signature],
                       "tests": [t.__dict__ for t in task.tests],
                       "precision": task.meta.get("reference_precision", "double"),
                       "inputs": GENERATOR_VERSION},  # the same seed draws other values after a bump
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _ref_dir(task: Task, cache_dir: str | Path) -> Path:
    return Path(cache_dir) / "ref" / task_hash(task)


def _limits(mem_gb: float, cpu_s: float) -> sandbox.Limits:
    return sandbox.Limits(cpu_s=cpu_s, mem_bytes=int(mem_gb * (1 << 30)), fsize_bytes=4 << 30, nproc=64,
                          nofile=256)


def _gcc(source: str, timeout_s: float) -> tuple[bytes | None, str]:
    with sandbox.acquire_uid() as uid, sandbox.scratch(uid=uid) as d:
        (d / "ref.c").write_text(source)
        out = sandbox.run_limited(["gcc", "-O2", "-shared", "-fPIC", "-x", "c", "-std=gnu11", "-o", "ref.so",
                                   "ref.c", "-lm"], cwd=d, timeout_s=timeout_s, limits=_limits(4, timeout_s),
                                  env=sandbox.scrubbed_env(home=str(d)), drop_to_uid=uid)
        log = (out.stdout + out.stderr).strip()
        if out.ok and (d / "ref.so").is_file():
            return (d / "ref.so").read_bytes(), log
        return None, log + f"\ngcc {out.describe()}"


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def build_reference_info(task: Task, *, cache_dir: str | Path, timeout_s: float = 60) -> tuple[Path, str]:
    """(path of the reference .so, precision used: "double" or "native")."""
    d = _ref_dir(task, cache_dir)
    so, info_p = d / "ref.so", d / "info.json"
    if so.exists() and info_p.exists():
        return so, json.loads(info_p.read_text())["precision"]
    want = task.meta.get("reference_precision", "double")
    logs = []
    lib, precision = None, "native"
    if want == "double":
        lib, log = _gcc(promoted_source(task.reference), timeout_s)
        logs.append(f"[double]\n{log}")
        precision = "double"
    if lib is None:
        lib, log = _gcc("".join(f"#include <{h}>\n" for h in _HEADERS) + "#line 1 \"reference.c\"\n"
                        + task.reference, timeout_s)
        logs.append(f"[native]\n{log}")
        precision = "native"
    if lib is None:
        raise ReferenceError(f"task {task.task_id}: reference does not compile:\n" + "\n".join(logs)[-3000:])
    _write_atomic(so, lib)
    os.chmod(so, 0o755)
    _write_atomic(info_p, json.dumps({"precision": precision, "log": "\n".join(logs)[-5000:]}).encode())
    return so, precision


def build_reference(task: Task, *, cache_dir: str | Path, timeout_s: float = 60) -> Path:
    """Compile the task's C reference into a cached shared library (see module docstring)."""
    return build_reference_info(task, cache_dir=cache_dir, timeout_s=timeout_s)[0]


def reference_precision(task: Task, *, cache_dir: str | Path) -> str:
    return build_reference_info(task, cache_dir=cache_dir)[1]


def _safe(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_.-]", "_", name) or "_"


def _runner_env(home: str) -> dict:
    pkg_parent = str(Path(cudaperf.__file__).resolve().parent.parent)
    return sandbox.scrubbed_env({"PYTHONPATH": pkg_parent, "PYTHONDONTWRITEBYTECODE": "1"}, home=home)


def _uid_can_run() -> bool:
    import numpy  # noqa: F401 - locate it

    return (sandbox.accessible_to_others(sys.executable, execute=True)
            and sandbox.accessible_to_others(Path(np.__file__))
            and sandbox.accessible_to_others(Path(cudaperf.__file__)))


class _MemoryCache:
    """Recently used reference outputs kept in memory (every candidate of a task is checked
    against the same few; a perf-size float64 reference is hundreds of MB to read back)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self._d: collections.OrderedDict[str, dict[str, np.ndarray]] = collections.OrderedDict()
        self._mu = threading.Lock()

    def get(self, key: str) -> dict[str, np.ndarray] | None:
        with self._mu:
            hit = self._d.get(key)
            if hit is not None:
                self._d.move_to_end(key)
            return hit

    def put(self, key: str, arrays: dict[str, np.ndarray]) -> None:
        n = sum(a.nbytes for a in arrays.values())
        if n > self.max_bytes:
            return
        for a in arrays.values():
            a.flags.writeable = False  # shared by every caller: nobody may change it
        with self._mu:
            if key in self._d:
                return
            self._d[key] = arrays
            self.bytes += n
            while self.bytes > self.max_bytes:
                _, old = self._d.popitem(last=False)
                self.bytes -= sum(a.nbytes for a in old.values())


def _default_memory_gb() -> float:
    """A quarter of this machine's memory, at most 32 GB (perf-size references live only here;
    dataset verification keeps two per task in flight for a dozen tasks)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 4.0
    return max(1.0, min(32.0, total / 4 / (1 << 30)))


_MEMORY = _MemoryCache(int(float(os.environ.get("CUDAPERF_REF_MEMORY_GB") or _default_memory_gb()) * (1 << 30)))
# Larger outputs are not written to the disk cache (see `reference_outputs`).
DISK_MAX_BYTES = int(float(os.environ.get("CUDAPERF_REF_DISK_MAX_MB", "64")) * (1 << 20))
_INFLIGHT: dict[str, threading.Event] = {}
_INFLIGHT_MU = threading.Lock()


def reference_outputs(task: Task, test: TestConfig, seed: int, *, cache_dir: str | Path,
                      timeout_s: float = 120, mem_limit_gb: float = 8,
                      inputs: Callable[[Path], dict | None] | None = None) -> dict[str, np.ndarray]:
    """Reference outputs (out + inout parameters) for one test and input seed, read-only. Kept
    in memory (the most recently used, up to $CUDAPERF_REF_MEMORY_GB) and, when at most
    $CUDAPERF_REF_DISK_MAX_MB, on disk; a bigger one (a perf-size test) is recomputed in a new
    process rather than written to disk: writing it costs more than computing it, and a
    dataset's worth would fill the disk. Threads asking for the same outputs at once share one
    computation.

    `inputs(dir)`, when given, puts the inputs of (task, test, seed) into ``dir`` as the runner
    reads them (``<name>.bin`` per in/inout buffer, raw, in its dtype) and returns the scalar
    values, or None to let this function draw them itself (`make_inputs`): the harness passes
    its input-file store, so perf-size inputs are drawn once for the reference and the runners."""
    cache = _ref_dir(task, cache_dir) / _safe(test.name) / f"{int(seed)}.npz"
    key = str(cache.resolve())
    while True:
        if (hit := _MEMORY.get(key)) is not None:
            return dict(hit)
        with _INFLIGHT_MU:
            busy = _INFLIGHT.get(key)
            if busy is None:
                _INFLIGHT[key] = threading.Event()
                break
        busy.wait()  # then from memory, or (too big to keep) computed again below
    try:
        res = _reference_outputs(task, test, seed, cache, cache_dir, timeout_s, mem_limit_gb, inputs)
        _MEMORY.put(key, res)
    finally:
        with _INFLIGHT_MU:
            _INFLIGHT.pop(key).set()
    return dict(res)


def output_bytes(task: Task, test: TestConfig) -> int:
    """Bytes of a test's reference outputs (at most: float outputs counted as float64)."""
    return sum(n * max(np.dtype(dt).itemsize, 8 if np.dtype(dt).kind == "f" else 1)
               for n, dt in output_shapes(task, test).values())


def memory_budget() -> int:
    """Bytes of reference outputs kept in memory."""
    return _MEMORY.max_bytes


def disk_cached(task: Task, test: TestConfig) -> bool:
    """Whether this test's reference outputs are small enough to be kept on disk."""
    return output_bytes(task, test) <= DISK_MAX_BYTES


def _scratch_base(nbytes: int) -> str | None:
    """Shared memory for the reference's files when it has room for them (twice over): they
    are written and read once, and a disk would turn that into write-back traffic."""
    shm = "/dev/shm"
    try:
        if os.path.isdir(shm) and shutil.disk_usage(shm).free > 2 * nbytes + (256 << 20):
            return shm
    except OSError:
        pass
    return None


def _reference_outputs(task: Task, test: TestConfig, seed: int, cache: Path, cache_dir: str | Path,
                       timeout_s: float, mem_limit_gb: float,
                       inputs: Callable[[Path], dict | None] | None = None) -> dict[str, np.ndarray]:
    shapes = output_shapes(task, test)
    if cache.exists():
        with np.load(cache, allow_pickle=False) as f:
            return {k: f[k] for k in shapes}
    if task.track == "torch2cuda":
        res = _torch_reference(task, test, seed, shapes)
        if disk_cached(task, test):
            _save_cache(cache, res)
        return res
    so, precision = build_reference_info(task, cache_dir=cache_dir)
    promote = precision == "double"

    def ref_dtype(dt: np.dtype) -> np.dtype:
        return np.dtype(np.float64) if promote and dt == np.float32 else dt

    buffers = [p for p in task.signature if p.is_pointer and p.role in ("in", "inout")]
    nbytes = output_bytes(task, test) + sum(task.numel(p, test) * p.dtype.itemsize for p in buffers)
    with sandbox.acquire_uid() as uid0, sandbox.scratch(_scratch_base(nbytes), uid=uid0) as d:
        uid = uid0 if uid0 is not None and _uid_can_run() else None
        shutil.copyfile(so, d / "ref.so")
        # Only our own files are handed to the uid: the input files may be hard links into the
        # harness's store, which must stay root's (a later runner may get the same uid).
        if uid is not None:
            os.chown(d / "ref.so", uid, uid)
        scalars = inputs(d) if inputs is not None else None
        if scalars is None:
            args = make_inputs(task, test, seed)
            for p in buffers:
                f = d / f"{p.name}.bin"
                f.unlink(missing_ok=True)  # never write through a hard link into someone's store
                np.ascontiguousarray(args.pop(p.name), dtype=p.dtype).tofile(f)
                os.chmod(f, 0o644)  # readable by the reference's uid
            scalars = args  # what is left: sizes and scalars
        params = []
        for p in task.signature:
            e = {"name": p.name, "role": p.role, "pointer": p.is_pointer, "dtype": ref_dtype(p.dtype).name}
            if p.role in ("out", "inout"):
                e["numel"] = shapes[p.name][0]
            if p.is_pointer and p.role in ("in", "inout"):
                e["file_dtype"] = p.dtype.name
            if not p.is_pointer:
                e["value"] = np.asarray(scalars[p.name]).item()
            params.append(e)
        (d / "spec.json").write_text(json.dumps({"library": str(d / "ref.so"), "entry": task.entry,
                                                 "params": params}))
        os.chmod(d / "spec.json", 0o644)
        out = sandbox.run_limited([sys.executable, "-m", "cudaperf.refrunner", str(d / "spec.json")], cwd=d,
                                  timeout_s=timeout_s, limits=_limits(mem_limit_gb, timeout_s),
                                  env=_runner_env(str(d)), drop_to_uid=uid)
        where = f"task {task.task_id}, test {test.name}, seed {seed}"
        files = {name: d / f"out_{name}.npy" for name in shapes}
        if not out.ok or not all(f.is_file() for f in files.values()):
            raise ReferenceError(f"{where}: reference run failed ({out.describe()}):\n{out.stderr[-3000:]}")
        try:
            # Mapped, not copied: the mapping outlives the scratch dir's removal (the file's
            # pages stay until it is dropped), and a perf-size output is hundreds of MB.
            res = {name: np.load(f, mmap_mode="r", allow_pickle=False) for name, f in files.items()}
        except (OSError, ValueError) as e:
            raise ReferenceError(f"{where}: unreadable reference outputs: {e}") from None
    for name, (n, dt) in shapes.items():
        got = res[name]
        want = ref_dtype(dt)
        if got.shape != (n,) or got.dtype != want:
            raise ReferenceError(f"{where}: output {name!r} is {(got.shape, got.dtype)}, expected ({n},) {want}")
    if disk_cached(task, test):
        _save_cache(cache, res)
    return res


def _save_cache(cache: Path, res: dict[str, np.ndarray]) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.stem}.{os.getpid()}.{time.monotonic_ns()}.npz")
    np.savez(tmp, **res)
    os.replace(tmp, cache)


def _torch_reference(task: Task, test: TestConfig, seed: int, shapes: dict) -> dict[str, np.ndarray]:
    """torch2cuda: the task's module (trusted task data) run in this process, in float64, on the
    same `make_inputs` buffers the candidate gets; on the CPU unless $CUDAPERF_TORCH_REF_DEVICE
    names another device (e.g. "cuda" for KernelBench's big problems, during `Harness.prepare`,
    before anything is timed)."""
    from cudaperf.torchtasks import runtime

    where = f"task {task.task_id}, test {test.name}, seed {seed}"
    device = os.environ.get("CUDAPERF_TORCH_REF_DEVICE", "cpu")
    try:
        got = runtime.reference_outputs(task, test, make_inputs(task, test, seed), device=device, double=True)
    except Exception as e:  # a broken task module: the task cannot be evaluated
        raise ReferenceError(f"{where}: reference module failed: {type(e).__name__}: {e}") from None
    res = {}
    for name, (n, dt) in shapes.items():
        arr = np.asarray(got.get(name))
        want = np.dtype(np.float64) if dt.kind == "f" else dt
        if arr.shape != (n,):
            raise ReferenceError(f"{where}: output {name!r} has shape {arr.shape}, expected ({n},)")
        res[name] = arr.astype(want)
    return res
