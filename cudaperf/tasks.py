"""Task contract (DESIGN.md §2): schema, validation, loading and size arithmetic.

A task is one JSON record. This module guarantees that every `Task` it returns has been
validated: known track, a parameter list whose roles, C types, shapes and initialisers are
well formed, at least one test configuration whose sizes bind every size parameter, and shape
expressions that evaluate to non-negative integers for every test. Bad input raises
`TaskError` naming the task and the field, never a bare KeyError deep inside the harness.

Record layout (JSONL / parquet, loadable with `datasets`)::

    task_id, track ("c2cuda" | "torch2cuda"), family, entry,
    signature: [{name, ctype, role, shape?, init?, value?}],
    reference: serial C function (c2cuda) or KernelBench module source (torch2cuda),
    variants:  [{name, source, strategy?}],   # verified CUDA implementations, "naive" first
    tests:     [{name, sizes: {size_param: int}, perf: bool, scalars?: {name: value}}],
    tolerance: {rtol, atol, l2}               # atol is relative to max|reference| (see check.py)
    split:     "train" | "val" | "test"
    meta:      free-form (difficulty, source, flops expression, min_bytes expression, ...)

Roles: ``in`` (read-only device buffer), ``out`` (written), ``inout`` (read and written),
``scalar`` (a by-value number), ``size`` (an integer dimension bound by each test).
Initialisers (``init``) name a generator of `inputs.py`, e.g. ``uniform(-1, 1)``,
``randint(0, n)``, ``perm(n)``, ``csr_rowptr(m, nnz)``; arguments are size expressions.
"""
from __future__ import annotations

import ast
import heapq
import json
import math
import operator
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

TRACKS = ("c2cuda", "torch2cuda")
ROLES = ("in", "out", "inout", "scalar", "size")
SPLITS = ("train", "val", "test")

# C element types the harness can marshal, with their numpy dtype. Pointer params use these
# as element types; scalar and size params as value types.
CTYPES: dict[str, np.dtype] = {
    "float": np.dtype(np.float32),
    "double": np.dtype(np.float64),
    "int": np.dtype(np.int32),
    "unsigned int": np.dtype(np.uint32),
    "unsigned": np.dtype(np.uint32),
    "long": np.dtype(np.int64),
    "long long": np.dtype(np.int64),
    "unsigned long long": np.dtype(np.uint64),
    "size_t": np.dtype(np.uint64),
    "int64_t": np.dtype(np.int64),
    "int32_t": np.dtype(np.int32),
    "uint32_t": np.dtype(np.uint32),
    "uint64_t": np.dtype(np.uint64),
    "short": np.dtype(np.int16),
    "unsigned short": np.dtype(np.uint16),
    "char": np.dtype(np.int8),
    "signed char": np.dtype(np.int8),
    "unsigned char": np.dtype(np.uint8),
    "uint8_t": np.dtype(np.uint8),
    "int8_t": np.dtype(np.int8),
    "bool": np.dtype(np.bool_),
}

DEFAULT_TOLERANCE = {
    # rtol: per element relative; atol: per element absolute, as a fraction of max|ref|
    # (magnitude-aware: an all-zero output cannot pass a small-but-nonzero reference);
    # l2: bound on ||out - ref|| / ||ref||.
    "float": {"rtol": 1e-3, "atol": 1e-4, "l2": 1e-3},
    "double": {"rtol": 1e-8, "atol": 1e-10, "l2": 1e-9},
    "int": {"rtol": 0.0, "atol": 0.0, "l2": 0.0},
}


class TaskError(ValueError):
    """A task record that does not satisfy the contract; the message names task and field."""


# --------------------------------------------------------------------------- expressions

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_FUNCS = {"min": min, "max": max, "ceil": math.ceil, "floor": math.floor, "int": int,
          "log2": math.log2, "sqrt": math.sqrt, "abs": abs}


def eval_expr(expr: str | int | float, env: dict[str, Any]) -> Any:
    """Evaluate a size expression (``n*m + 2``, ``max(n, 1)``) with names from `env`.

    Only arithmetic, comparisons-free integer maths and a few functions are allowed: task
    files are data, and this must never execute arbitrary Python.
    """
    if isinstance(expr, (int, float)):
        return expr
    try:
        tree = ast.parse(str(expr), mode="eval")
    except SyntaxError as e:
        raise TaskError(f"bad expression {expr!r}: {e.msg}") from None

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise TaskError(f"expression {expr!r}: unknown name {node.id!r}")
            return env[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
            return _FUNCS[node.func.id](*[ev(a) for a in node.args])
        raise TaskError(f"expression {expr!r}: unsupported syntax {ast.dump(node)[:60]}")

    return ev(tree)


def parse_call(spec: str) -> tuple[str, list[str]]:
    """Split an initialiser ``name(arg, arg)`` into its name and argument expressions."""
    spec = spec.strip()
    if "(" not in spec:
        return spec, []
    if not spec.endswith(")"):
        raise TaskError(f"initialiser {spec!r} is not of the form name(args)")
    name, rest = spec.split("(", 1)
    body = rest[:-1].strip()
    args: list[str] = []
    depth, cur = 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur.strip():
        args.append(cur.strip())
    return name.strip(), args


# --------------------------------------------------------------------------- schema


@dataclass
class Param:
    name: str
    ctype: str  # e.g. "const float*", "float*", "int"
    role: str
    shape: str | None = None  # element count expression, pointer params only
    init: str | None = None  # generator spec for in/inout/scalar params
    value: Any = None  # fixed value for a scalar (overrides init)

    @property
    def is_pointer(self) -> bool:
        return self.ctype.strip().endswith("*")

    @property
    def base_ctype(self) -> str:
        t = self.ctype.replace("*", " ").replace("const", " ").replace("__restrict__", " ")
        return " ".join(t.split())

    @property
    def dtype(self) -> np.dtype:
        return CTYPES[self.base_ctype]


@dataclass
class TestConfig:
    name: str
    sizes: dict[str, int]
    perf: bool = False
    scalars: dict[str, Any] = field(default_factory=dict)


@dataclass
class Variant:
    name: str
    source: str
    strategy: str = ""


@dataclass
class Task:
    task_id: str
    track: str
    family: str
    entry: str
    signature: list[Param]
    reference: str
    variants: list[Variant]
    tests: list[TestConfig]
    tolerance: dict[str, float] = field(default_factory=dict)
    split: str = "train"
    meta: dict[str, Any] = field(default_factory=dict)

    # ----------------------------------------------------------------- derived
    @property
    def params_by_role(self) -> dict[str, list[Param]]:
        out: dict[str, list[Param]] = {r: [] for r in ROLES}
        for p in self.signature:
            out[p.role].append(p)
        return out

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(f"task {self.task_id} has no variant {name!r} "
                       f"(has {[v.name for v in self.variants]})")

    def test(self, name: str) -> TestConfig:
        for t in self.tests:
            if t.name == name:
                return t
        raise KeyError(f"task {self.task_id} has no test configuration {name!r} "
                       f"(has {[t.name for t in self.tests]})")

    @property
    def baseline_variant(self) -> Variant:
        """The naive variant: the speedup baseline of c2cuda tasks (DESIGN §3)."""
        return self.variant("naive")

    @property
    def perf_test(self) -> TestConfig:
        perf = [t for t in self.tests if t.perf]
        return perf[-1] if perf else max(self.tests, key=lambda t: self.numel_total(t))

    def env(self, test: TestConfig) -> dict[str, Any]:
        return dict(test.sizes)

    def numel(self, p: Param, test: TestConfig) -> int:
        n = eval_expr(p.shape, self.env(test))
        return int(n)

    def numel_total(self, test: TestConfig) -> int:
        return sum(self.numel(p, test) for p in self.signature if p.is_pointer)

    def min_bytes(self, test: TestConfig) -> int:
        """Fewest bytes any implementation must move through device memory.

        Each input read once, each output written once, in/out both (METHOD.md's floor).
        ``meta.min_bytes`` (an expression) overrides, for tasks where not every element of a
        buffer must be touched (e.g. a gather reads only the indexed elements).
        """
        if "min_bytes" in self.meta:
            return int(eval_expr(self.meta["min_bytes"], self.env(test)))
        total = 0
        for p in self.signature:
            if not p.is_pointer:
                continue
            nbytes = self.numel(p, test) * p.dtype.itemsize
            total += nbytes * (2 if p.role == "inout" else 1)
        return total

    def tol(self) -> dict[str, float]:
        """Tolerance for this task: its own values over the default of its widest output type."""
        outs = [p for p in self.signature if p.role in ("out", "inout")]
        kinds = {("double" if p.dtype == np.float64 else "float" if p.dtype.kind == "f" else "int")
                 for p in outs}
        kind = "double" if kinds == {"double"} else "float" if kinds & {"float", "double"} else "int"
        return {**DEFAULT_TOLERANCE[kind], **self.tolerance}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=False)


# --------------------------------------------------------------------------- validation


def _err(tid: str, msg: str) -> TaskError:
    return TaskError(f"task {tid!r}: {msg}")


def task_from_dict(d: dict[str, Any]) -> Task:
    """Build and validate a Task from a plain record (as read from JSONL or parquet)."""
    if not isinstance(d, dict):
        raise TaskError(f"a task record must be a JSON object, got {type(d).__name__}")
    tid = str(d.get("task_id", "<no task_id>"))
    required = ("task_id", "track", "family", "entry", "signature", "reference", "tests")
    missing = [k for k in required if k not in d or d[k] in (None, "")]
    if missing:
        raise _err(tid, f"missing field(s) {missing}")
    if d["track"] not in TRACKS:
        raise _err(tid, f"track must be one of {TRACKS}, got {d['track']!r}")
    sig = d["signature"]
    if isinstance(sig, str):
        sig = json.loads(sig)
    params = []
    for i, p in enumerate(sig):
        try:
            params.append(Param(**{k: v for k, v in p.items() if v is not None or k == "value"}))
        except TypeError as e:
            raise _err(tid, f"signature[{i}]: {e}") from None
    tests_raw = d["tests"]
    if isinstance(tests_raw, str):
        tests_raw = json.loads(tests_raw)
    tests = []
    for i, t in enumerate(tests_raw):
        sizes = t.get("sizes") or {}
        if isinstance(sizes, str):
            sizes = json.loads(sizes)
        sizes = {k: int(v) for k, v in sizes.items() if v is not None}
        scal = t.get("scalars") or {}
        if isinstance(scal, str):
            scal = json.loads(scal)
        tests.append(TestConfig(name=str(t.get("name", f"t{i}")), sizes=sizes,
                                perf=bool(t.get("perf", False)),
                                scalars={k: v for k, v in scal.items() if v is not None}))
    variants = [Variant(name=v["name"], source=v["source"], strategy=v.get("strategy") or "")
                for v in (d.get("variants") or [])]
    meta = d.get("meta") or {}
    if isinstance(meta, str):
        meta = json.loads(meta)
    tol = d.get("tolerance") or {}
    if isinstance(tol, str):
        tol = json.loads(tol)
    task = Task(task_id=tid, track=d["track"], family=str(d["family"]), entry=str(d["entry"]),
                signature=params, reference=d["reference"], variants=variants, tests=tests,
                tolerance={k: float(v) for k, v in tol.items() if v is not None},
                split=d.get("split") or "train", meta=meta)
    validate(task)
    return task


def validate(task: Task) -> None:
    tid = task.task_id
    if task.split not in SPLITS:
        raise _err(tid, f"split must be one of {SPLITS}, got {task.split!r}")
    if not task.entry.isidentifier():
        raise _err(tid, f"entry {task.entry!r} is not a C identifier")
    names = [p.name for p in task.signature]
    if len(set(names)) != len(names):
        raise _err(tid, f"duplicate parameter names in {names}")
    if task.track == "c2cuda" and not task.signature:
        raise _err(tid, "c2cuda tasks need a signature")
    for p in task.signature:
        where = f"parameter {p.name!r}"
        if p.role not in ROLES:
            raise _err(tid, f"{where}: role must be one of {ROLES}, got {p.role!r}")
        if p.base_ctype not in CTYPES:
            raise _err(tid, f"{where}: unsupported C type {p.ctype!r}")
        if p.role in ("in", "out", "inout"):
            if not p.is_pointer:
                raise _err(tid, f"{where}: role {p.role} needs a pointer type, got {p.ctype!r}")
            if not p.shape:
                raise _err(tid, f"{where}: pointer parameters need a shape expression")
            if p.role == "in" and "const" not in p.ctype:
                pass  # allowed: much real C omits const; the harness checks inputs anyway
        else:
            if p.is_pointer:
                raise _err(tid, f"{where}: role {p.role} must be passed by value")
            if p.role == "size" and p.dtype.kind not in "iu":
                raise _err(tid, f"{where}: size parameters must be integers")
    if not task.tests:
        raise _err(tid, "needs at least one test configuration")
    size_names = {p.name for p in task.signature if p.role == "size"}
    for t in task.tests:
        missing = size_names - set(t.sizes)
        if missing:
            raise _err(tid, f"test {t.name!r} does not bind size parameter(s) {sorted(missing)}")
        for p in task.signature:
            if p.is_pointer:
                try:
                    n = task.numel(p, t)
                except TaskError as e:
                    raise _err(tid, f"test {t.name!r}, parameter {p.name!r}: {e}") from None
                if n < 0:
                    raise _err(tid, f"test {t.name!r}: shape of {p.name!r} is negative ({n})")
    vnames = [v.name for v in task.variants]
    if len(set(vnames)) != len(vnames):
        raise _err(tid, f"duplicate variant names {vnames}")


# --------------------------------------------------------------------------- I/O


def load_tasks(path: str | Path, *, split: str | None = None,
               families: Iterable[str] | None = None) -> list[Task]:
    """Load tasks from a .jsonl / .json / .parquet file or a directory of them.

    Raises TaskError with the file and line for malformed records, FileNotFoundError with the
    path for a missing file.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no task file or directory at {path}")
    files = sorted(p for p in path.rglob("*") if _is_task_file(p)) if path.is_dir() else [path]
    tasks: list[Task] = []
    fam = set(families) if families else None
    for f in files:
        for i, rec in enumerate(_records(f)):
            try:
                t = task_from_dict(rec)
            except TaskError as e:
                raise TaskError(f"{f}:{i + 1}: {e}") from None
            if split and t.split != split:
                continue
            if fam and t.family not in fam:
                continue
            tasks.append(t)
    return tasks


def _is_task_file(p: Path) -> bool:
    return p.name.endswith((".jsonl", ".jsonl.gz", ".json", ".parquet"))


def _records(f: Path) -> Iterable[dict[str, Any]]:
    if f.suffix == ".parquet":
        import pandas as pd
        yield from pd.read_parquet(f).to_dict(orient="records")
    elif f.suffix == ".json":
        data = json.loads(f.read_text())
        yield from (data if isinstance(data, list) else [data])
    else:
        import gzip

        opener = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt") as fh:
            for ln, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as e:
                        raise TaskError(f"{f}:{ln}: invalid JSON ({e.msg})") from None


def save_tasks(tasks: Iterable[Task], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for t in tasks:
            fh.write(t.to_json() + "\n")
    return path


def find_task(ref: str | Path, search: Iterable[str | Path] = ()) -> Task:
    """Resolve a task id or a file path (CLI's ``--task ID_OR_FILE``)."""
    p = Path(ref)
    if p.exists() and p.is_file():
        tasks = load_tasks(p)
        if len(tasks) != 1:
            raise TaskError(f"{p} holds {len(tasks)} tasks; pass a task id with --tasks-file")
        return tasks[0]
    for src in search:
        if Path(src).exists():
            for t in load_tasks(src):
                if t.task_id == str(ref):
                    return t
    raise TaskError(f"no task {str(ref)!r} in {[str(s) for s in search]}")


def shuffled_families(tasks: Sequence[Task], seed: int = 0) -> tuple[list[str], dict[str, list[Task]]]:
    """(families in a seeded order, {family: its tasks in a seeded shuffle}): the starting point of
    every family-stratified slice (`stratified_order`, `cudaperf.featurize.stratified_tasks`).
    One generator, the family order drawn first, so each caller's order stays as it was."""
    rng = random.Random(seed)
    by_fam: dict[str, list[Task]] = {}
    for t in tasks:
        by_fam.setdefault(t.family, []).append(t)
    fams = sorted(by_fam)
    rng.shuffle(fams)
    for f in fams:
        rng.shuffle(by_fam[f])
    return fams, by_fam


def stratified_order(tasks: Sequence[Task], seed: int = 0) -> list[Task]:
    """All tasks, ordered so that every prefix is a proportional stratified sample by family.

    Dataset profiling walks this order, and verification walks each shard in it, so a run cut
    short still covers every family (and verifies the profiled sample first).

    The next task always comes from the family whose share of its own variants taken so far is
    smallest (ties: a seeded family order); within a family tasks come in a seeded shuffle.
    """
    fams, by_fam = shuffled_families(tasks, seed)
    rank = {f: i for i, f in enumerate(fams)}
    total = {f: sum(len(t.variants) for t in ts) or 1 for f, ts in by_fam.items()}
    heap = [(0.0, rank[f], f) for f in fams]
    heapq.heapify(heap)
    taken = {f: 0 for f in fams}
    pos = {f: 0 for f in fams}
    out: list[Task] = []
    while heap:
        _, r, f = heapq.heappop(heap)
        t = by_fam[f][pos[f]]
        pos[f] += 1
        taken[f] += len(t.variants)
        out.append(t)
        if pos[f] < len(by_fam[f]):
            heapq.heappush(heap, (taken[f] / total[f], r, f))
    return out


def stratified_prefix(tasks: Sequence[Task], max_variants: int, seed: int = 0) -> list[Task]:
    """The first whole tasks of `stratified_order` until they hold at least `max_variants`
    variants (all tasks when it is 0): the sample dataset profiling covers, and the one
    verification can be pointed at (`verify_dataset.py --sample`)."""
    out: list[Task] = []
    seen = 0
    for t in stratified_order(tasks, seed):
        if max_variants and seen >= max_variants:
            break
        seen += len(t.variants)
        out.append(t)
    return out


def shard_tasks(tasks: Sequence[Task], shard: int, of: int) -> list[Task]:
    """Tasks of shard `shard` of `of`: every of-th task in task-id order (families interleave).
    Dataset verification and `cudaperf.prebuilt` cut the dataset the same way."""
    if of < 1 or not 0 <= shard < of:
        raise ValueError(f"shard {shard} of {of}: need 0 <= shard < of")
    ordered = sorted(tasks, key=lambda t: t.task_id)
    return ordered[shard::of]
