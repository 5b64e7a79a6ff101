"""KernelBench problems: loading, conversion to torch2cuda tasks, static checks of `ModelNew`.

Guarantees:

* `load_problems(source)` returns `Problem(level, problem_id, name, code)` records sorted by
  (level, problem_id) from any of: a JSONL file (one object per line with those fields), a
  KernelBench checkout (``<dir>/KernelBench/level{1,2,3}/<id>_<Name>.py`` or
  ``<dir>/level{1,2,3}/...``), a dataset saved with `datasets` (`save_to_disk`), or a hub
  dataset name (`datasets.load_dataset`, splits ``level_1`` ... ). A source that matches none
  of these raises ValueError naming it.
* `problem_to_task(problem)` returns a torch2cuda Task (or None and the reason) whose
  signature lists the forward inputs, the module parameters (named_parameters, "." -> "_")
  and the outputs with the shapes KernelBench fixes, found on the meta device (nothing is
  allocated, so 6 GB inputs are fine on a laptop). It refuses what the contract cannot carry:
  non-tensor inputs, integer inputs (value range unknown), non-float32 tensors, non-tensor
  outputs, models whose forward cannot run on the meta device. `convert_all` reports counts.
* `modelnew_source_ok(src)` statically checks a KernelBench `ModelNew` candidate (load_inline
  format) and lists every problem found; it is a first filter, not a sandbox.
"""
from __future__ import annotations

import ast
import collections
import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from cudaperf.tasks import Task, task_from_dict

LEVELS = (1, 2, 3)


@dataclass(frozen=True)
class Problem:
    level: int
    problem_id: int
    name: str
    code: str


def _problem(d: dict[str, Any]) -> Problem:
    missing = [k for k in ("level", "problem_id", "name", "code") if k not in d]
    if missing:
        raise ValueError(f"KernelBench record lacks {missing}: {str(d)[:80]}")
    return Problem(int(d["level"]), int(d["problem_id"]), str(d["name"]), str(d["code"]))


def from_jsonl(path: str | Path) -> list[Problem]:
    out = []
    with open(path) as fh:
        for ln, line in enumerate(fh, 1):
            if line.strip():
                try:
                    out.append(_problem(json.loads(line)))
                except (json.JSONDecodeError, ValueError) as e:
                    raise ValueError(f"{path}:{ln}: {e}") from None
    return out


_FILE = re.compile(r"^(\d+)_(.+)\.py$")


def from_checkout(root: str | Path) -> list[Problem]:
    root = Path(root)
    base = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    out = []
    for lvl in LEVELS:
        d = base / f"level{lvl}"
        if not d.is_dir():
            continue
        for f in sorted(d.glob("*.py")):
            m = _FILE.match(f.name)
            if m:
                out.append(Problem(lvl, int(m.group(1)), m.group(2), f.read_text()))
    return out


def from_datasets(obj) -> list[Problem]:
    """Problems from a `datasets` Dataset or DatasetDict (any split names)."""
    splits = list(obj.values()) if isinstance(obj, dict) else [obj]  # DatasetDict is a dict of splits
    out = []
    for ds in splits:
        for row in ds:
            out.append(_problem(row))
    return out


def load_problems(source: str | Path, levels: tuple[int, ...] | None = None) -> list[Problem]:
    p = Path(source)
    if p.is_file():
        probs = from_jsonl(p)
    elif p.is_dir():
        if (p / "dataset_dict.json").exists() or (p / "dataset_info.json").exists():
            import datasets

            probs = from_datasets(datasets.load_from_disk(str(p)))
        else:
            probs = from_checkout(p)
            if not probs:
                raise ValueError(f"{p}: no level1..3 problem files and not a saved dataset")
    elif "/" in str(source) and not str(source).startswith(("/", ".")):
        import datasets

        probs = from_datasets(datasets.load_dataset(str(source)))  # hub name, e.g. ScalingIntelligence/KernelBench
    else:
        raise ValueError(f"KernelBench source {source!r} is neither a file, a directory nor a hub dataset name")
    if levels:
        probs = [q for q in probs if q.level in levels]
    return sorted(probs, key=lambda q: (q.level, q.problem_id))


# --------------------------------------------------------------------------- conversion


class NotConvertible(Exception):
    pass


def problem_to_task(pr: Problem) -> tuple[Task | None, str]:
    """(task, "ok") or (None, reason)."""
    import inspect

    import torch

    try:
        ns: dict[str, Any] = {"__name__": "kb_module"}
        exec(compile(pr.code, f"<kernelbench L{pr.level} #{pr.problem_id}>", "exec"), ns)  # trusted benchmark data
    except Exception as e:  # noqa: BLE001
        return None, f"module does not import here ({type(e).__name__})"
    try:
        with torch.device("meta"):
            inputs = list(ns["get_inputs"]())
            model = ns["Model"](*ns["get_init_inputs"]())
            for i, x in enumerate(inputs):
                if not isinstance(x, torch.Tensor):
                    raise NotConvertible(f"input {i} is not a tensor")
                if x.dtype in (torch.int64, torch.int32, torch.bool):
                    raise NotConvertible("integer inputs (value range unknown)")
                if x.dtype != torch.float32:
                    raise NotConvertible(f"input dtype {x.dtype}")
            with torch.no_grad():
                res = model(*inputs)
    except NotConvertible as e:
        return None, str(e)
    except Exception as e:  # noqa: BLE001
        return None, f"forward does not run on the meta device ({type(e).__name__})"
    res = list(res) if isinstance(res, (tuple, list)) else [res]
    if not res or not all(isinstance(r, torch.Tensor) and r.dtype == torch.float32 for r in res):
        return None, "outputs are not float32 tensors"
    try:
        argn = [a for a in inspect.signature(model.forward).parameters][:len(inputs)]
    except (TypeError, ValueError):
        argn = []
    if len(argn) != len(inputs) or any(not a.isidentifier() for a in argn):
        argn = [f"in{i}" for i in range(len(inputs))]
    sig, shapes, pmap = [], {}, {}
    for n, x in zip(argn, inputs):
        sig.append({"name": n, "ctype": "const float*", "role": "in", "shape": str(max(1, x.numel())),
                    "init": "normal(0, 1)"})
        shapes[n] = [str(s) for s in x.shape]
    for pn, prm in model.named_parameters():
        cn = "p_" + pn.replace(".", "_")
        if prm.dtype != torch.float32:
            return None, f"parameter {pn} dtype {prm.dtype}"
        sig.append({"name": cn, "ctype": "const float*", "role": "in", "shape": str(max(1, prm.numel())),
                    "init": "uniform(-0.1, 0.1)"})
        shapes[cn] = [str(s) for s in prm.shape]
        pmap[cn] = pn
    outs = ["out"] if len(res) == 1 else [f"out{i}" for i in range(len(res))]
    for n, r in zip(outs, res):
        sig.append({"name": n, "ctype": "float*", "role": "out", "shape": str(max(1, r.numel()))})
        shapes[n] = [str(s) for s in r.shape]
    names = [s["name"] for s in sig]
    if len(set(names)) != len(names):
        return None, "parameter names collide"
    rec = {"task_id": f"kernelbench/L{pr.level}/{pr.problem_id}_{pr.name}", "track": "torch2cuda",
           "family": f"kernelbench_l{pr.level}", "entry": f"kb_l{pr.level}_{pr.problem_id}", "signature": sig,
           "reference": pr.code, "variants": [],
           "tests": [{"name": "kernelbench", "sizes": {}, "perf": True}], "split": "test",
           "meta": {"source": "kernelbench", "level": pr.level, "problem_id": pr.problem_id, "name": pr.name,
                    "inputs": argn, "parameters": pmap, "outputs": outs, "shapes": shapes,
                    "inputs_from_module": True, "buffers": [b for b, _ in model.named_buffers()]}}
    return task_from_dict(rec), "ok"


@dataclass
class ConversionReport:
    total: int = 0
    converted: int = 0
    by_level: dict[int, dict[str, int]] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)
    failures: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "converted": self.converted,
                "by_level": {str(k): v for k, v in self.by_level.items()}, "reasons": self.reasons,
                "failures": self.failures}


def convert_all(problems: list[Problem]) -> tuple[list[Task], ConversionReport]:
    rep = ConversionReport()
    reasons = collections.Counter()
    tasks = []
    for pr in problems:
        rep.total += 1
        lv = rep.by_level.setdefault(pr.level, {"total": 0, "converted": 0})
        lv["total"] += 1
        t, why = problem_to_task(pr)
        if t is None:
            reasons[why] += 1
            rep.failures.append({"level": pr.level, "problem_id": pr.problem_id, "name": pr.name, "reason": why})
            continue
        rep.converted += 1
        lv["converted"] += 1
        tasks.append(t)
    rep.reasons = dict(reasons)
    return tasks, rep


# --------------------------------------------------------------------------- ModelNew checks


def reference_as_modelnew(reference: str) -> str:
    """The reference module with ``Model`` renamed ``ModelNew``: a pure-PyTorch candidate that the
    harness must judge correct with speedup ~1 (admitted with ``modelnew_require_kernel=False``)."""
    src = re.sub(r"\bclass Model\(", "class ModelNew(", reference)
    return re.sub(r"\bsuper\(\s*Model\s*,", "super(ModelNew,", src)


def zeros_modelnew(reference: str) -> str:
    """A ModelNew that returns zeros of the reference's output shapes: it must fail everywhere,
    also where the reference's outputs are near zero (a pure tolerance check is fooled there)."""
    src = reference_as_modelnew(reference).replace("    def forward(self,", "    def forward_reference(self,", 1)
    return src + (
        "\n\ndef _zero_forward(self, *args):\n"
        "    out = self.forward_reference(*args)\n"
        "    if isinstance(out, (tuple, list)):\n"
        "        return type(out)(torch.zeros_like(o) for o in out)\n"
        "    return torch.zeros_like(out)\n\n\n"
        "ModelNew.forward = _zero_forward\n")


FORBIDDEN_MODULES = {"os", "sys", "subprocess", "socket", "shutil", "ctypes", "multiprocessing", "threading",
                     "pathlib", "importlib", "pickle", "marshal", "requests", "urllib", "http", "signal",
                     "builtins", "inspect", "gc", "tempfile", "glob", "io", "runpy", "code", "pty", "resource"}
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "open", "globals", "locals", "vars", "setattr",
                   "delattr", "breakpoint", "input", "exit", "quit"}
ALLOWED_DUNDER = {"__init__", "__name__", "__class__"}
# C++/CUDA text that has no business in a kernel: processes, files, side streams, host threads
FORBIDDEN_NATIVE = [r"\bsystem\s*\(", r"\bpopen\s*\(", r"\bfork\s*\(", r"\bexecv\w*\s*\(", r"\bfopen\s*\(",
                    r"#\s*include\s*<\s*(thread|fstream|cstdlib|unistd\.h|sys/)", r"cudaStreamCreate",
                    r"\bdlopen\s*\(", r"std::thread", r"cudaDeviceReset", r"cudaSetDevice"]


@dataclass
class ModelNewCheck:
    ok: bool
    problems: list[str]
    info: dict[str, Any]


def _strings(tree: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def modelnew_source_ok(src: str, max_chars: int = 200_000) -> ModelNewCheck:
    """Static checks of a KernelBench ModelNew source; ok only when no problem was found."""
    problems: list[str] = []
    info: dict[str, Any] = {"load_inline_calls": 0, "kernels": 0}
    if len(src) > max_chars:
        return ModelNewCheck(False, [f"source is {len(src)} characters (limit {max_chars})"], info)
    try:
        tree = ast.parse(src)
    except SyntaxError as e:
        return ModelNewCheck(False, [f"syntax error line {e.lineno}: {e.msg}"], info)
    cls = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"]
    if not cls:
        problems.append("no top-level class ModelNew")
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.name.split(".")[0] in FORBIDDEN_MODULES:
                    problems.append(f"imports {a.name}")
        elif isinstance(n, ast.ImportFrom):
            if (n.module or "").split(".")[0] in FORBIDDEN_MODULES or n.level:
                problems.append(f"imports from {n.module or '.'}")
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in FORBIDDEN_CALLS:
            problems.append(f"calls {n.func.id}()")
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "getattr":
            if len(n.args) > 1 and not (isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)
                                        and not n.args[1].value.startswith("__")):
                problems.append("getattr with a computed or dunder name")
        elif isinstance(n, ast.Attribute) and n.attr.startswith("__") and n.attr not in ALLOWED_DUNDER:
            problems.append(f"touches {n.attr}")
        elif isinstance(n, ast.Name) and n.id.startswith("__") and n.id not in ALLOWED_DUNDER:
            problems.append(f"touches {n.id}")
        elif isinstance(n, ast.Attribute) and n.attr in ("Stream", "set_stream", "stream", "Event") \
                and isinstance(n.value, ast.Attribute) and n.value.attr == "cuda":
            problems.append(f"uses torch.cuda.{n.attr} (side streams are not timed)")
        elif isinstance(n, ast.Name) and n.id == "Model":
            problems.append("refers to the reference Model")
    ext_names: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            fn = n.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if fname in ("load_inline", "load"):
                info["load_inline_calls"] += 1
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            fn = n.value.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if fname in ("load_inline", "load"):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        ext_names.add(t.id)
    native = "\n".join(s for s in _strings(tree) if "__global__" in s or "#include" in s or "torch::" in s)
    info["kernels"] = len(re.findall(r"__global__", native))
    if info["load_inline_calls"] == 0:
        problems.append("no load_inline/load call: no custom kernel is compiled")
    elif info["kernels"] == 0:
        problems.append("no __global__ kernel in the inline sources")
    for pat in FORBIDDEN_NATIVE:
        if re.search(pat, native):
            problems.append(f"native source matches {pat!r}")
    if cls and ext_names:
        fwd = [f for f in cls[0].body if isinstance(f, ast.FunctionDef) and f.name == "forward"]
        init = [f for f in cls[0].body if isinstance(f, ast.FunctionDef) and f.name == "__init__"]
        used = {n.id for f in fwd + init for n in ast.walk(f) if isinstance(n, ast.Name)}
        if not fwd:
            problems.append("ModelNew has no forward")
        elif not (used & ext_names):
            problems.append("ModelNew never uses the compiled extension")
    info["extension_names"] = sorted(ext_names)
    seen, uniq = set(), []
    for p in problems:
        if p not in seen:
            seen.add(p)
            uniq.append(p)
    return ModelNewCheck(not uniq, uniq, info)


def selfcheck_rows(paths: Sequence[str | Path]) -> list[dict]:
    """The rows of `benchmarks/kernelbench_selfcheck.py` output files that exist (blank lines
    skipped), in the order given, one per (problem, candidate): the first file holding a pair wins.
    A run resumes from them and skips the pairs they hold, whichever GPU's file holds them; a pair
    in two files (the output file is a copy of a committed one) counts once in the summary."""
    rows: dict[tuple[str, str], dict] = {}
    for p in paths:
        p = Path(p)
        if p.is_file():
            for x in p.read_text().splitlines():
                if x.strip():
                    r = json.loads(x)
                    rows.setdefault((r["task_id"], r["candidate"]), r)
    return list(rows.values())


def harness_failure(row: dict) -> bool:
    """Whether a self-check row is a verdict on the harness rather than on the candidate: the
    problem's own Model (trusted code) crashed or met an internal error, e.g. the torch worker's
    memory watchdog while writing a 4 GiB output (H100, session 28). Such rows are worth a rerun
    once the harness is fixed (`benchmarks/kernelbench_selfcheck.py --retry-harness-failures`)."""
    from cudaperf.result import is_internal_error

    return row.get("candidate") == "reference" and (row.get("status") == "crashed"
                                                      or is_internal_error(row.get("message")))


def drop_selfcheck_rows(path: str | Path, drop) -> list[dict]:
    """Rewrite the self-check file `path` without the rows for which `drop(row)` holds (blank lines
    go too); returns the dropped rows. A missing file drops nothing."""
    path = Path(path)
    if not path.is_file():
        return []
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    gone = [r for r in rows if drop(r)]
    if gone:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows if not drop(r)))
        tmp.replace(path)  # never a half-written file: the rows are the run's only record
    return gone


def selfcheck_summary(rows: list[dict]) -> dict:
    """Issue 5's evidence from `benchmarks/kernelbench_selfcheck.py` rows: each problem's own Model
    submitted as ModelNew must be correct with speedup near 1 (0.8-1.25 counted), and the all-zeros
    ModelNew must be rejected on every problem."""
    ref = [r for r in rows if r["candidate"] == "reference"]
    zer = [r for r in rows if r["candidate"] == "zeros"]
    sp = [r["speedup"] for r in ref if r["status"] == "correct" and r["speedup"]]
    return {
        "problems": len({r["task_id"] for r in rows}),
        "reference_correct": sum(r["status"] == "correct" for r in ref), "reference_total": len(ref),
        "reference_speedup_median": statistics.median(sp) if sp else None,
        "reference_speedup_within_0.8_1.25": sum(0.8 <= s <= 1.25 for s in sp),
        "zeros_rejected": sum(r["status"] != "correct" for r in zer), "zeros_total": len(zer),
        "not_correct_reference": [(r["task_id"], r["status"], r["message"][:120]) for r in ref
                                  if r["status"] != "correct"][:20],
    }
