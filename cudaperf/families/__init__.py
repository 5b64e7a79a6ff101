"""The C->CUDA dataset: one module per family of serial programs, and the builder.

Every family module in this package defines

    FAMILY: str          # unique family name (also the unit of held-out splits)
    CATEGORY: str        # coarse group: map, reduction, scan, stencil, linalg, sparse, ...
    def generate(rng: random.Random) -> list[dict]

where `generate` returns task records satisfying the contract of `cudaperf.tasks`
(task_from_dict must accept each): a serial C reference written the way scientific C is
written, a signature with roles and shapes, >= 3 test configurations (an edge size such as 1,
a size that is not a multiple of the block size, and one `perf` size at which the naive
variant runs well above launch overhead on an H200), and >= 3 CUDA variants in the candidate
contract with "naive" (one thread per iteration, the direct translation) first.

Guarantees of `build` / `build_dataset` (same seed and same family modules -> same tasks, byte
for byte once written by `write_dataset`):

* every record validates and task ids are unique;
* de-duplication: two tasks whose references have the same `normalized_reference` (comments and
  layout dropped, every identifier the program itself names -- entry, parameters, locals, helper
  functions, macros -- renamed canonically in order of first appearance) are one program; the
  first in build order (families sorted by name, then generation order) is kept, the others
  are dropped and listed in `BuildReport.duplicates`. Duplicates are looked for across families
  too, so a held-out family never holds a renamed copy of a training program;
* held-out families: the split is assigned by FAMILY (`assign_splits`: families ordered by a
  stable hash of their name, the first 15% -> "test", the next 10% -> "val", the rest "train"),
  so accuracy on val/test speaks of programs never seen in training. It does not depend on the
  seed or on which families a subset build asks for;
* in-family split: each task of a train family carries ``meta["in_family_split"]`` = "train" or
  "val". Within each train family, tasks are ordered by sha256(f"{seed}:{task_id}") and the first
  round(10%) (at least one when the family has >= 2 tasks) are "val": exact proportions per family,
  reproducible from the seed, and a task's label does not change when other families change.
  Tasks of val/test families carry no such key (the whole family is held out).
"""
from __future__ import annotations

import collections
import gzip
import hashlib
import importlib
import io
import json
import pkgutil
import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable

from cudaperf.tasks import Task, TaskError, task_from_dict

# Fraction of families held out. Families are ordered by a stable hash of their name and the
# first 15% (rounded, at least one) go to test, the next 10% to val: exact proportions, and
# the order does not depend on which other families exist.
SPLIT_FRACTIONS = {"test": 0.15, "val": 0.10}
# Share of each train family's tasks labelled meta["in_family_split"] = "val".
IN_FAMILY_VAL_FRACTION = 0.10


def family_modules() -> dict[str, ModuleType]:
    """Every family module in this package, by FAMILY name."""
    mods: dict[str, ModuleType] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if not hasattr(mod, "FAMILY") or not hasattr(mod, "generate"):
            continue
        if mod.FAMILY in mods:
            raise TaskError(f"family {mod.FAMILY!r} defined twice ({info.name})")
        mods[mod.FAMILY] = mod
    return mods


def _family_hash(family: str) -> int:
    return int(hashlib.sha256(family.encode()).hexdigest()[:12], 16)


def assign_splits(families: Iterable[str]) -> dict[str, str]:
    """{family: split} with exact held-out proportions (see SPLIT_FRACTIONS)."""
    ordered = sorted(set(families), key=_family_hash)
    n = len(ordered)
    n_test = max(1, round(SPLIT_FRACTIONS["test"] * n)) if n >= 3 else 0
    n_val = max(1, round(SPLIT_FRACTIONS["val"] * n)) if n >= 3 else 0
    out = {}
    for i, fam in enumerate(ordered):
        out[fam] = "test" if i < n_test else "val" if i < n_test + n_val else "train"
    return out


def in_family_split(task_ids: Iterable[str], seed: int = 0,
                    fraction: float = IN_FAMILY_VAL_FRACTION) -> dict[str, str]:
    """{task_id: "train" | "val"} for the tasks of ONE family (see the module docstring)."""
    ordered = sorted(set(task_ids), key=lambda t: hashlib.sha256(f"{seed}:{t}".encode()).hexdigest())
    n = len(ordered)
    n_val = max(1, round(fraction * n)) if n >= 2 else 0
    return {t: "val" if i < n_val else "train" for i, t in enumerate(ordered)}


# --------------------------------------------------------------------------- normalisation

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFlLuU]*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<op><<<|>>>|>>=|<<=|->|\+\+|--|<<|>>|&&|\|\||[-+*/%&|^!=<>]=|\#\#|\S)
""", re.S | re.X)

_C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int
long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while _Bool _Complex bool true false define include ifdef ifndef endif undef pragma elif
""".split())
# Names a reference gets from the standard headers: they carry meaning (expf is not fabsf), so
# they are never renamed. Anything else is named by the program itself and is renamed.
_STD_NAMES = frozenset("""
NULL size_t ptrdiff_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t
uintptr_t FLT_MAX FLT_MIN FLT_EPSILON DBL_MAX DBL_MIN DBL_EPSILON INT_MAX INT_MIN UINT_MAX LONG_MAX
LONG_MIN LLONG_MAX LLONG_MIN ULLONG_MAX SHRT_MAX SHRT_MIN USHRT_MAX CHAR_MAX CHAR_MIN UCHAR_MAX
SCHAR_MAX SCHAR_MIN INT8_MAX INT16_MAX INT32_MAX INT64_MAX UINT8_MAX UINT16_MAX UINT32_MAX UINT64_MAX
INT32_MIN INT64_MIN INFINITY NAN HUGE_VAL HUGE_VALF M_PI M_PI_2 M_PI_4 M_1_PI M_2_PI M_E M_LN2 M_LN10
M_LOG2E M_LOG10E M_SQRT2 M_SQRT1_2 M_2_SQRTPI isnan isinf isfinite signbit fpclassify abs labs llabs
div malloc calloc realloc free memcpy memmove memset memcmp qsort bsearch printf assert rand srand
sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 expm1 log log2 log10
log1p pow sqrt cbrt hypot fabs fmin fmax fmod floor ceil round lround llround trunc rint lrint
llrint nearbyint fma erf erfc tgamma lgamma copysign ldexp frexp modf remainder fdim scalbn logb
""".split())


def _is_std(name: str) -> bool:
    if name in _C_KEYWORDS or name in _STD_NAMES or name.startswith("__builtin"):
        return True
    # float / long double forms of the math functions: expf, sqrtl, ...
    return name[-1:] in ("f", "l") and name[:-1] in _STD_NAMES


def c_tokens(source: str) -> list[tuple[str, str]]:
    """(kind, text) tokens of C source, comments and whitespace dropped.

    kind is one of str, num, id, op (CUDA's launch brackets <<< >>> are single tokens). Good enough for comparing and rewriting programs (it is
    not a preprocessor: macro bodies are tokens like any other).
    """
    return [(m.lastgroup, m.group()) for m in _TOKEN.finditer(source)
            if m.lastgroup not in ("ws", "comment")]


def normalized_reference(source: str) -> str:
    """Canonical text of a C program up to comments, layout and the names it chooses itself.

    Every identifier that is not a C keyword or a standard-library name becomes ``_<k>`` with k
    the order of its first appearance, so ``void f(int n, float *x)`` and
    ``void g(int len, float *v)`` with the same body normalise identically.
    """
    names: dict[str, str] = {}
    out = []
    for kind, text in c_tokens(source):
        if kind == "id" and not _is_std(text):
            text = names.setdefault(text, f"_{len(names)}")
        out.append(text)
    return " ".join(out)


def reference_key(source: str) -> str:
    return hashlib.sha256(normalized_reference(source).encode()).hexdigest()[:24]


# --------------------------------------------------------------------------- build


@dataclass
class BuildReport:
    """What `build` generated, dropped and kept."""

    seed: int
    generated: int = 0
    kept: int = 0
    duplicates: list[dict[str, str]] = field(default_factory=list)  # task_id, duplicate_of

    @property
    def duplicates_by_family(self) -> dict[str, int]:
        return dict(sorted(collections.Counter(d["family"] for d in self.duplicates).items()))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "duplicates_by_family": self.duplicates_by_family}


def generate_family(mod: ModuleType, seed: int = 0, split: str = "train") -> list[Task]:
    rng = random.Random(f"{seed}:{mod.FAMILY}")
    tasks = []
    for rec in mod.generate(rng):
        rec = dict(rec)
        rec.setdefault("family", mod.FAMILY)
        rec["split"] = split
        rec.setdefault("meta", {})
        rec["meta"] = {**rec["meta"], "category": getattr(mod, "CATEGORY", "")}
        tasks.append(task_from_dict(rec))
    return tasks


def build(families: Iterable[str] | None = None, seed: int = 0, *,
          dedup: bool = True) -> tuple[list[Task], BuildReport]:
    """(tasks, report): generate, de-duplicate and split (see the module docstring).

    A subset build (`families`) keeps the full build's held-out splits; its de-duplication
    only sees the families it builds.
    """
    mods = family_modules()
    names = sorted(families) if families else sorted(mods)
    unknown = [n for n in names if n not in mods]
    if unknown:
        raise TaskError(f"unknown families {unknown}; known: {sorted(mods)}")
    splits = assign_splits(mods)  # over ALL families, so a subset build keeps the same splits
    report = BuildReport(seed=seed)
    tasks: list[Task] = []
    seen_ids: set[str] = set()
    seen_refs: dict[str, str] = {}
    for n in names:
        fam_tasks = []
        for t in generate_family(mods[n], seed, splits[n]):
            report.generated += 1
            if t.task_id in seen_ids:
                raise TaskError(f"duplicate task id {t.task_id!r} (family {n})")
            seen_ids.add(t.task_id)
            if dedup:
                key = reference_key(t.reference)
                if key in seen_refs:
                    report.duplicates.append({"task_id": t.task_id, "family": n,
                                              "duplicate_of": seen_refs[key]})
                    continue
                seen_refs[key] = t.task_id
            fam_tasks.append(t)
        if splits[n] == "train":
            inner = in_family_split([t.task_id for t in fam_tasks], seed)
            for t in fam_tasks:
                t.meta["in_family_split"] = inner[t.task_id]
        tasks.extend(fam_tasks)
    report.kept = len(tasks)
    return tasks, report


def build_dataset(families: Iterable[str] | None = None, seed: int = 0, *, dedup: bool = True) -> list[Task]:
    """The tasks of `build` (without its report)."""
    return build(families, seed, dedup=dedup)[0]


# --------------------------------------------------------------------------- output


def task_dtype(task: Task) -> str:
    """Element type(s) of a task's outputs, e.g. "float", "double", "int+unsigned char"."""
    outs = sorted({p.base_ctype for p in task.signature if p.role in ("out", "inout")})
    return "+".join(outs) or "none"


def dataset_stats(tasks: list[Task], report: BuildReport | None = None) -> dict[str, Any]:
    """Counts by family, category, dtype, split and in-family split (+ dedup counts)."""
    def count(key) -> dict[str, int]:
        return dict(sorted(collections.Counter(key(t) for t in tasks).items()))

    stats: dict[str, Any] = {
        "tasks": len(tasks),
        "families": len({t.family for t in tasks}),
        "variants": sum(len(t.variants) for t in tasks),
        "by_family": count(lambda t: t.family),
        "by_category": count(lambda t: t.meta.get("category", "")),
        "by_dtype": count(task_dtype),
        "by_split": count(lambda t: t.split),
        "by_in_family_split": count(lambda t: t.meta.get("in_family_split", "held-out family")),
        "variants_per_task": count(lambda t: str(len(t.variants))),
        "family_split": dict(sorted({t.family: t.split for t in tasks}.items())),
    }
    if report is not None:
        stats["seed"] = report.seed
        stats["dedup"] = {"generated": report.generated, "kept": report.kept,
                          "duplicates": len(report.duplicates),
                          "duplicates_by_family": report.duplicates_by_family}
    return stats


def write_dataset(tasks: Iterable[Task], path: str | Path) -> Path:
    """Write JSONL (gzip when the name ends in .gz). Same tasks -> same bytes: the gzip header
    carries no file name or time stamp, so a rebuild leaves a committed file untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(t.to_dict()) + "\n" for t in tasks).encode()
    if path.suffix == ".gz":
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
            gz.write(text)
        text = buf.getvalue()
    if path.exists() and path.read_bytes() == text:
        return path  # unchanged: leave the file (and its time stamp) alone
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(text)
    tmp.replace(path)
    return path


def write_stats(stats: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(stats, indent=1, sort_keys=False) + "\n"
    if not (path.exists() and path.read_text() == text):
        path.write_text(text)
    return path


def committed_or_built(path: str | Path | None = None) -> list[Task]:
    """The committed dataset file (default: the profiles' `data.tasks_path` under the repo) if it
    exists, else a fresh build -- the same tasks, since the build is deterministic."""
    if path is None:
        from cudaperf.config import DataConfig

        path = Path(__file__).resolve().parents[2] / DataConfig().tasks_path
    if Path(path).exists():
        from cudaperf.tasks import load_tasks

        return load_tasks(path)
    return build_dataset()


def verified_tasks(path: str | Path | None = None, measurements: str | Path | None = None) -> list[Task]:
    """The tasks the policy stages use (SFT, sampling, GRPO): `committed_or_built`, and, once GPU
    verification is committed (``<measurements>/c2cuda_*.parquet``, default data/measurements),
    only what it verified: `cudaperf.measurements.verified_dataset` drops every variant that is
    not measured correct and timed, and every task left without its naive variant or with fewer
    than three variants. Without measurement files (a fresh fork) every task is returned."""
    from cudaperf import measurements as M

    tasks = committed_or_built(path)
    d = Path(measurements) if measurements is not None else Path(__file__).resolve().parents[2] / "data" / "measurements"
    files = M.measurement_files(d)
    if not files:
        return tasks
    return M.verified_dataset(tasks, M.merge(files))[0]
