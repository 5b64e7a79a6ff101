"""Deterministic input generation for a task's test configuration.

Guarantees: `make_inputs(task, test, seed)` returns the same values in any process on any
machine (numpy PCG64 seeded with [seed, stable hashes of task id, test name, param name] -- no
Python `hash`), one independent stream per parameter, so adding a parameter never changes the
others. uniform / normal / randint draw float32 and integer parameters directly in their dtype
(about 10x faster than drawing float64 and casting, at perf sizes of 10^8 values); other values
are drawn in float64 or int64 and cast. Either way every value is exactly representable in the
parameter's dtype (a double-precision reference sees the very same numbers). `GENERATOR_VERSION`
changes whenever a generator's values change (the reference cache key includes it). Integer
draws that do not fit the dtype, and unknown generators, raise `TaskError` naming task and
parameter.

Generators (arguments are size expressions over the test's sizes and scalars; ``hi`` exclusive):
uniform(lo, hi), normal(mu, sigma), randint(lo, hi), perm(n), csr_rowptr(m, nnz),
sorted_uniform(lo, hi), const(v), arange(start=0, step=1), bernoulli(p), choice(a, b, ...).
Defaults: uniform(-1, 1) for floats, randint(0, 100) for integers, bernoulli(0.5) for bool.
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable

import numpy as np

from cudaperf.tasks import Param, Task, TaskError, TestConfig, eval_expr, parse_call


# Bump when any generator draws different values for the same (task, test, param, seed): cached
# reference outputs (cudaperf.reference) are keyed by it. 2: float32 and integers drawn in dtype.
GENERATOR_VERSION = 2


def stable_hash(s: str) -> int:
    """64-bit hash of a string that is the same in every process (unlike `hash`)."""
    return int.from_bytes(hashlib.sha256(s.encode()).digest()[:8], "little")


def param_rng(task_id: str, test_name: str, param: str, seed: int) -> np.random.Generator:
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    return np.random.Generator(np.random.PCG64([int(seed), stable_hash(task_id), stable_hash(test_name),
                                                stable_hash(param)]))


# --------------------------------------------------------------------------- generators
# Each takes (rng, n, dtype, args) with args already evaluated and returns n values (float64 or
# int64 / bool, or already in the parameter's dtype); `_finish` casts and range-checks.


def _need(args: list, k: int, name: str, sig: str) -> None:
    if len(args) != k:
        raise TaskError(f"{name} takes {sig}, got {len(args)} argument(s)")


def _integers(rng, lo: int, hi: int, n: int, dt):
    """[lo, hi) integers, drawn in `dt` itself when the range fits it (else int64, and `_finish`
    reports the values that do not fit)."""
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if info.min <= lo and hi - 1 <= info.max:
            return rng.integers(lo, hi, size=n, endpoint=False, dtype=dt)
    return rng.integers(lo, hi, size=n, endpoint=False)


def _uniform(rng, n, dt, a):
    _need(a, 2, "uniform", "(lo, hi)")
    if dt.kind in "iu":
        return _integers(rng, int(a[0]), int(a[1]), n, dt)
    lo, hi = float(a[0]), float(a[1])
    if dt == np.float32:
        v = rng.random(n, dtype=np.float32)
        v *= np.float32(hi - lo)
        v += np.float32(lo)
        if hi > lo:  # rounding can land on hi: keep the interval half-open
            np.minimum(v, np.nextafter(np.float32(hi), np.float32(lo)), out=v)
        return v
    return rng.uniform(lo, hi, size=n)


def _normal(rng, n, dt, a):
    _need(a, 2, "normal", "(mu, sigma)")
    if dt == np.float32:
        v = rng.standard_normal(n, dtype=np.float32)
        v *= np.float32(a[1])
        v += np.float32(a[0])
        return v
    return rng.normal(float(a[0]), float(a[1]), size=n)


def _randint(rng, n, dt, a):
    _need(a, 2, "randint", "(lo, hi)")
    lo, hi = int(a[0]), int(a[1])
    if hi <= lo:
        raise TaskError(f"randint({lo}, {hi}) is empty (hi is exclusive)")
    return _integers(rng, lo, hi, n, dt)


def _perm(rng, n, dt, a):
    _need(a, 1, "perm", "(n)")
    m = int(a[0])
    if m <= 0:
        return np.zeros(n, dtype=np.int64) if n == 0 else _fail(f"perm({m}) for {n} elements")
    return np.resize(rng.permutation(m), n)  # tiled if the buffer is longer


def _csr_rowptr(rng, n, dt, a):
    _need(a, 2, "csr_rowptr", "(m, nnz)")
    m, nnz = int(a[0]), int(a[1])
    if n < m + 1 or nnz < 0 or (m == 0 and nnz != 0):
        _fail(f"csr_rowptr({m}, {nnz}) needs m+1 = {m + 1} elements, a non-negative nnz, and nnz 0 when m is 0; "
              f"buffer has {n}")
    inner = np.sort(rng.integers(0, nnz + 1, size=max(m - 1, 0)))
    ptr = np.concatenate([[0], inner, [nnz]]) if m > 0 else np.array([0])
    return np.concatenate([ptr, np.full(n - len(ptr), nnz)])  # padding keeps it non-decreasing


def _sorted_uniform(rng, n, dt, a):
    return np.sort(_uniform(rng, n, dt, a))


def _const(rng, n, dt, a):
    _need(a, 1, "const", "(v)")
    return np.full(n, a[0], dtype=np.float64 if dt.kind == "f" else np.int64)


def _arange(rng, n, dt, a):
    if len(a) > 2:
        raise TaskError(f"arange takes (start=0, step=1), got {len(a)} arguments")
    start = a[0] if a else 0
    step = a[1] if len(a) > 1 else 1
    if dt.kind == "f" or isinstance(start, float) or isinstance(step, float):
        return float(start) + float(step) * np.arange(n, dtype=np.float64)
    return int(start) + int(step) * np.arange(n, dtype=np.int64)


def _bernoulli(rng, n, dt, a):
    _need(a, 1, "bernoulli", "(p)")
    return (rng.random(n) < float(a[0])).astype(np.int64)


def _choice(rng, n, dt, a):
    if not a:
        raise TaskError("choice needs at least one value")
    vals = np.array(a, dtype=np.float64 if dt.kind == "f" else np.int64)
    return vals[rng.integers(0, len(vals), size=n)]


def _fail(msg: str):
    raise TaskError(msg)


GENERATORS: dict[str, Callable[..., np.ndarray]] = {
    "uniform": _uniform, "normal": _normal, "randint": _randint, "perm": _perm, "csr_rowptr": _csr_rowptr,
    "sorted_uniform": _sorted_uniform, "const": _const, "arange": _arange, "bernoulli": _bernoulli,
    "choice": _choice,
}


def default_init(dtype: np.dtype) -> str:
    if dtype.kind == "f":
        return "uniform(-1, 1)"
    if dtype.kind == "b":
        return "bernoulli(0.5)"
    return "randint(0, 100)"


def _finish(vals: np.ndarray, dt: np.dtype, where: str) -> np.ndarray:
    vals = np.asarray(vals)
    if dt.kind == "b":
        return vals.astype(bool)
    if dt.kind == "f":
        if vals.dtype == dt:  # drawn in its dtype: nothing to convert (perf sizes are GBs)
            return vals
        # drawn in float64 (or as integers): exactly representable in dt by construction
        return vals.astype(np.float64, copy=False).astype(dt, copy=False)
    if vals.dtype.kind == "f":
        if not np.all(np.isfinite(vals)) or np.any(vals != np.floor(vals)):
            raise TaskError(f"{where}: generator produced non-integer values for an integer type")
        vals = vals.astype(np.int64)
    info = np.iinfo(dt)
    if vals.size and (vals.min() < info.min or vals.max() > info.max):
        raise TaskError(f"{where}: values {vals.min()}..{vals.max()} do not fit {dt} [{info.min}, {info.max}]")
    return vals.astype(dt, copy=False)


def _env(task: Task, test: TestConfig) -> dict[str, Any]:
    env = dict(task.env(test))
    for k, v in test.scalars.items():
        if isinstance(v, (int, float)) and k not in env:
            env[k] = v
    for p in task.signature:
        if p.role == "scalar" and p.value is not None and p.name not in env and isinstance(p.value, (int, float)):
            env[p.name] = p.value
    return env


def draw(task: Task, test: TestConfig, p: Param, n: int, seed: int, spec: str | None = None) -> np.ndarray:
    """`n` values of parameter `p`'s generator (or `spec`), cast to its dtype."""
    where = f"task {task.task_id!r}, test {test.name!r}, parameter {p.name!r}"
    spec = spec or p.init or default_init(p.dtype)
    name, arg_exprs = parse_call(spec)
    gen = GENERATORS.get(name)
    if gen is None:
        raise TaskError(f"{where}: unknown generator {name!r} in {spec!r}; known: {sorted(GENERATORS)}")
    env = _env(task, test)
    try:
        args = [eval_expr(a, env) for a in arg_exprs]
        vals = gen(param_rng(task.task_id, test.name, p.name, seed), int(n), p.dtype, args)
    except TaskError as e:
        raise TaskError(f"{where}: {spec!r}: {e}") from None
    return _finish(vals, p.dtype, where)


def fixed_inputs(task: Task, test: TestConfig) -> dict[str, np.ndarray | np.generic] | None:
    """The given values of a test that carries fixed inputs, or None for a generated test.

    A task may pin a test's in/inout buffers in ``task.meta["fixed_inputs"][test.name][param]``
    (imported unit-test cases such as BabelTower's); every seed then gets these same values, so the
    harness's recheck after timing must run on a generated (perf) test to stay meaningful.
    """
    given = (task.meta.get("fixed_inputs") or {}).get(test.name)
    if given is None:
        return None
    out: dict[str, np.ndarray | np.generic] = {}
    for p in task.signature:
        where = f"task {task.task_id!r}, test {test.name!r}, parameter {p.name!r}"
        if p.role == "size":
            out[p.name] = p.dtype.type(test.sizes[p.name])
        elif p.role == "scalar":
            out[p.name] = p.dtype.type(test.scalars.get(p.name, p.value))
        elif p.role in ("in", "inout"):
            if p.name not in given:
                raise TaskError(f"{where}: fixed inputs lack this buffer")
            arr = np.asarray(given[p.name], dtype=np.float64)
            arr = (arr.astype(np.int64) if p.dtype.kind in "iu" else arr).astype(p.dtype).reshape(-1)
            if arr.size != task.numel(p, test):
                raise TaskError(f"{where}: {arr.size} fixed values, the shape says {task.numel(p, test)}")
            out[p.name] = arr
    return out


def make_inputs(task: Task, test: TestConfig, seed: int) -> dict[str, np.ndarray | np.generic]:
    """Arguments for one call: sizes and scalars as numpy scalars, in/inout buffers as arrays.

    ``out`` parameters are not included (the harness allocates and poisons them). Tests with
    fixed inputs (see `fixed_inputs`) return those values for every seed.
    """
    fixed = fixed_inputs(task, test)
    if fixed is not None:
        return fixed
    out: dict[str, np.ndarray | np.generic] = {}
    for p in task.signature:
        where = f"task {task.task_id!r}, test {test.name!r}, parameter {p.name!r}"
        if p.role == "size":
            out[p.name] = _finish(np.array([test.sizes[p.name]]), p.dtype, where)[0]
        elif p.role == "scalar":
            if p.name in test.scalars:
                v = test.scalars[p.name]
            elif p.value is not None:
                v = p.value
            else:
                out[p.name] = draw(task, test, p, 1, seed)[0]
                continue
            out[p.name] = _finish(np.array([v], dtype=np.float64 if p.dtype.kind == "f" else None), p.dtype, where)[0]
        elif p.role in ("in", "inout"):
            out[p.name] = draw(task, test, p, task.numel(p, test), seed)
    return out


def output_shapes(task: Task, test: TestConfig) -> dict[str, tuple[int, np.dtype]]:
    """(element count, dtype) of every out/inout parameter, in signature order."""
    return {p.name: (task.numel(p, test), p.dtype) for p in task.signature if p.role in ("out", "inout")}
