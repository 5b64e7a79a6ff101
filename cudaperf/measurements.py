"""Measurement table of the C->CUDA dataset: one row per (task, variant) verified on a GPU.

Guarantees:

* `COLUMNS` fixes the schema (names, order, Arrow types); `save_measurements` writes exactly
  those columns to parquet (zstd) with run metadata (GPU, driver, toolchain, command, ...) as
  JSON under the schema key ``cudaperf``; `load_measurements` returns them with the same dtypes
  and `flags` as Python lists, and `measurement_metadata` the metadata. A missing column or an
  unknown one raises `MeasurementError` naming it, except the `OPTIONAL` columns added later
  (baseline CV, clean baseline, ptxas resources, stage timings), which read back as null.
* `row_from_result` turns a harness `EvalResult` into a row without inventing anything: fields
  the harness did not fill stay null.
* `merge(shards)` concatenates shard tables; when a (task_id, variant) pair occurs more than
  once the LATER shard wins (a re-run replaces an earlier measurement).
* `measurement_files(path)` is the ONE order in which measurement files are merged, used by every
  reader (dataset filter, ranker, SFT transcripts, notebooks, the verifier's resume): per GPU
  slug, ``c2cuda_<slug>_shard<K>`` by K, then ``c2cuda_<slug>_sample`` (so the sample wins a
  repeated pair), then any other parquet file by name; `load_merged(path)` merges them.
* `verified_dataset(tasks, table)` keeps a variant only when every row for it says it was run on
  a GPU and passed every check (status "correct", correct true) with no ``hack:`` flag; then
  drops tasks whose naive variant was not kept or that keep fewer than `min_variants` variants.
  Everything dropped is listed with its reason in the returned `VerifyReport`: nothing
  unverified stays in the dataset.
* `reflag_roofline(table, tasks, bw, slack)` recomputes the ``hack:faster_than_roofline`` flag of
  every correct timed row from its runtime and the task's current ``min_bytes`` (pure; the
  report counts flags removed / added per family), so a corrected lower bound reaches
  committed measurements without re-running them (benchmarks/reflag_roofline.py).
"""
from __future__ import annotations

import collections
import copy
import datetime as _dt
import glob
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cudaperf.result import EvalResult, is_internal_error
from cudaperf.tasks import Task

SCHEMA = pa.schema([
    ("task_id", pa.string()),
    ("family", pa.string()),
    ("variant", pa.string()),
    ("status", pa.string()),          # cudaperf.result.STATUSES
    ("correct", pa.bool_()),
    ("pass_rate", pa.float64()),
    ("runtime_ms", pa.float64()),     # median of the timed repetitions, perf test
    ("cv", pa.float64()),
    ("baseline_ms", pa.float64()),    # the task's naive variant, same runner, interleaved
    ("baseline_cv", pa.float64()),
    ("baseline_clean_ms", pa.float64()),  # the naive variant alone in a runner of its own
    ("cv_robust", pa.float64()),      # IQR / 1.349 / median of the timed repetitions (harness.robust_cv)
    ("baseline_cv_robust", pa.float64()),
    ("speedup", pa.float64()),        # baseline_ms / runtime_ms
    ("gpu", pa.string()),
    ("toolchain", pa.string()),
    ("flags", pa.list_(pa.string())),
    ("message", pa.string()),
    ("resources", pa.string()),       # JSON: ptxas report per kernel (registers, smem, spills, ...)
    ("timings", pa.string()),         # JSON: harness seconds per stage (compile, check, time, ...)
    ("built_with", pa.string()),      # toolchain of the machine that compiled the library, when not this one
    ("measured_at", pa.string()),     # ISO 8601, UTC
])
COLUMNS = tuple(SCHEMA.names)
# Added after the first shards were measured: absent in older rows, read back as null.
OPTIONAL = ("baseline_cv", "baseline_clean_ms", "cv_robust", "baseline_cv_robust", "resources", "timings",
            "built_with")
KEY = ("task_id", "variant")
META_KEY = b"cudaperf"


class MeasurementError(ValueError):
    """A measurement table that does not match the schema."""


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def row_from_result(task: Task, variant: str, res: EvalResult, measured_at: str | None = None) -> dict[str, Any]:
    """One table row for the harness's record of `variant` of `task`."""
    if res.task_id != task.task_id:
        raise MeasurementError(f"result is for task {res.task_id!r}, not {task.task_id!r}")
    return {
        "task_id": task.task_id, "family": task.family, "variant": variant,
        "status": res.status, "correct": res.correct, "pass_rate": res.pass_rate,
        "runtime_ms": res.runtime_ms, "cv": res.cv, "baseline_ms": res.baseline_ms,
        "baseline_cv": res.baseline_cv, "baseline_clean_ms": res.baseline_clean_ms,
        "cv_robust": res.cv_robust, "baseline_cv_robust": res.baseline_cv_robust,
        "speedup": res.speedup, "gpu": res.gpu, "toolchain": (res.versions or {}).get("toolchain"),
        "flags": list(res.flags), "message": res.message,
        "resources": json.dumps(res.resources, sort_keys=True) if res.resources else None,
        "timings": json.dumps(res.timings, sort_keys=True) if res.timings else None,
        "built_with": (res.versions or {}).get("built_with"),
        "measured_at": measured_at or now_utc(),
    }


def to_table(records: pd.DataFrame | Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Rows (dicts or a DataFrame) as a DataFrame with exactly the schema's columns."""
    df = records.copy() if isinstance(records, pd.DataFrame) else pd.DataFrame(list(records))
    if df.empty and not len(df.columns):
        df = pd.DataFrame(columns=list(COLUMNS))
    for c in OPTIONAL:
        if c not in df.columns:
            df[c] = None
    missing = [c for c in COLUMNS if c not in df.columns]
    extra = [c for c in df.columns if c not in COLUMNS]
    if missing or extra:
        raise MeasurementError(f"measurement rows: missing columns {missing}, unknown columns {extra}")
    df = df[list(COLUMNS)].reset_index(drop=True)
    df["flags"] = [list(f) if f is not None else [] for f in df["flags"]]
    return df


def save_measurements(records: pd.DataFrame | Iterable[dict[str, Any]], path: str | Path,
                      metadata: dict[str, Any] | None = None) -> Path:
    """Write rows to parquet (zstd), atomically, with `metadata` as JSON in the schema."""
    df = to_table(records)
    table = pa.Table.from_pandas(df, schema=SCHEMA, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           META_KEY: json.dumps(metadata or {}, default=str).encode()})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(path)
    return path


def load_measurements(path: str | Path) -> pd.DataFrame:
    table = pq.read_table(path)
    missing = [c for c in COLUMNS if c not in table.column_names and c not in OPTIONAL]
    if missing:
        raise MeasurementError(f"{path}: missing columns {missing}")
    df = table.select([c for c in COLUMNS if c in table.column_names]).to_pandas()
    for c in OPTIONAL:
        if c not in df.columns:
            df[c] = None
    df = df[list(COLUMNS)]
    df["flags"] = [list(f) if f is not None else [] for f in df["flags"]]
    # Arrow nulls in a bool column come back as object/None; keep them as pandas' nullable bool.
    df["correct"] = df["correct"].astype("boolean")
    return df


def measurement_metadata(path: str | Path) -> dict[str, Any]:
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta.get(META_KEY, b"{}"))


def merge(shards: Sequence[pd.DataFrame | str | Path]) -> pd.DataFrame:
    """One table from shard tables or files, in order; later shards win on (task_id, variant)."""
    frames = [load_measurements(s) if isinstance(s, (str, Path)) else to_table(s) for s in shards]
    frames = [f for f in frames if len(f)]
    if not frames:
        return to_table([])
    df = pd.concat(frames, ignore_index=True)
    df = df.drop_duplicates(subset=list(KEY), keep="last").reset_index(drop=True)
    df["correct"] = df["correct"].astype("boolean")
    return df


_FILE_RE = re.compile(r"^c2cuda_(?P<slug>.+?)_(?:shard(?P<k>\d+)|(?P<sample>sample))$")


def _file_order(p: Path) -> tuple:
    m = _FILE_RE.match(p.stem)
    if not m:
        return (1, p.stem, 0, 0)  # other names after the dataset's own, in name order
    if m["sample"]:
        return (0, m["slug"], 1, 0)
    return (0, m["slug"], 0, int(m["k"]))


def measurement_files(path: str | Path, slug: str | None = None) -> list[Path]:
    """The measurement parquet files named by `path` in merge order (see the module docstring).

    `path`: one file, a directory (its ``*.parquet``) or a glob pattern. `slug` keeps only
    one GPU's files (``c2cuda_<slug>_*``). Empty when nothing matches."""
    s = str(path)
    if any(c in s for c in "*?["):
        files = [Path(f) for f in glob.glob(s)]
    elif Path(s).is_dir():
        files = list(Path(s).glob("*.parquet"))
    else:
        files = [Path(s)] if Path(s).exists() else []
    files = [f for f in files if f.is_file() and f.suffix == ".parquet"]
    if slug is not None:
        files = [f for f in files if f.stem.startswith(f"c2cuda_{slug}_")]
    return sorted(files, key=_file_order)


def load_merged(path: str | Path, slug: str | None = None) -> pd.DataFrame:
    """`merge(measurement_files(path, slug))`; an empty table when no file matches."""
    return merge(measurement_files(path, slug))


# --------------------------------------------------------------------------- verified dataset


@dataclass
class VerifyReport:
    """What `verified_dataset` dropped, and why."""

    variants_in: int = 0
    variants_kept: int = 0
    tasks_in: int = 0
    tasks_kept: int = 0
    dropped_variants: list[dict[str, str]] = field(default_factory=list)  # task_id, variant, reason
    dropped_tasks: list[dict[str, str]] = field(default_factory=list)  # task_id, reason

    def variant_reasons(self) -> dict[str, int]:
        return dict(collections.Counter(d["reason"] for d in self.dropped_variants).most_common())

    def task_reasons(self) -> dict[str, int]:
        return dict(collections.Counter(d["reason"] for d in self.dropped_tasks).most_common())

    def summary(self) -> str:
        return (f"variants: {self.variants_kept}/{self.variants_in} kept {self.variant_reasons()}; "
                f"tasks: {self.tasks_kept}/{self.tasks_in} kept {self.task_reasons()}")


def _why_not(rows: pd.DataFrame) -> str | None:
    """None when every row verifies the variant, else the reason it does not."""
    if rows.empty:
        return "not measured"
    for _, r in rows.iterrows():
        if is_internal_error(r["message"]):
            return "harness error, not a verdict (verify_dataset.py measures it again)"
        if r["status"] != "correct":
            return f"status {r['status']}"
        if pd.isna(r["correct"]) or not bool(r["correct"]):
            return "not marked correct"
        hacks = sorted(f for f in r["flags"] if str(f).startswith("hack:"))
        if hacks:
            return f"flagged {hacks[0]}"
        if pd.isna(r["runtime_ms"]):
            return "not timed"
    return None


def verified_dataset(tasks: Sequence[Task], measurements: pd.DataFrame, *,
                     min_variants: int = 3) -> tuple[list[Task], VerifyReport]:
    """(tasks with only verified variants, report). Input tasks are not modified."""
    rep = VerifyReport(tasks_in=len(tasks))
    groups = {k: g for k, g in to_table(measurements).groupby(list(KEY), sort=False)} if len(measurements) else {}
    empty = to_table([])
    kept_tasks: list[Task] = []
    for t in tasks:
        keep = []
        for v in t.variants:
            rep.variants_in += 1
            reason = _why_not(groups.get((t.task_id, v.name), empty))
            if reason is None:
                keep.append(v)
            else:
                rep.dropped_variants.append({"task_id": t.task_id, "variant": v.name, "reason": reason})
        names = {v.name for v in keep}
        if "naive" not in names:
            rep.dropped_tasks.append({"task_id": t.task_id, "reason": "naive variant not verified"})
            continue
        if len(keep) < min_variants:
            rep.dropped_tasks.append({"task_id": t.task_id,
                                      "reason": f"fewer than {min_variants} verified variants"})
            continue
        nt = copy.deepcopy(t)
        nt.variants = keep
        kept_tasks.append(nt)
        rep.variants_kept += len(keep)
    rep.tasks_kept = len(kept_tasks)
    return kept_tasks, rep


# --------------------------------------------------------------------------- roofline reflag

ROOFLINE_FLAG = "hack:faster_than_roofline"


@dataclass
class ReflagReport:
    """What `reflag_roofline` changed: flag counts overall and per family."""

    rows_checked: int = 0          # correct, timed rows whose task is known
    removed: int = 0
    added: int = 0
    flagged_before: int = 0        # rows carrying the flag before / after (all rows)
    flagged_after: int = 0
    by_family: dict[str, dict[str, int]] = field(default_factory=dict)  # family -> {removed, added}
    unknown_tasks: list[str] = field(default_factory=list)  # task ids of timed rows not in `tasks`
    remaining: list[dict[str, Any]] = field(default_factory=list)  # task_id, variant, runtime_ms, roofline_ms

    def to_dict(self) -> dict[str, Any]:
        return {"rows_checked": self.rows_checked, "removed": self.removed, "added": self.added,
                "flagged_before": self.flagged_before, "flagged_after": self.flagged_after,
                "by_family": self.by_family, "unknown_tasks": self.unknown_tasks}


def reflag_roofline(table: pd.DataFrame, tasks: Sequence[Task], copy_bw_bytes_per_s: float,
                    slack: float = 0.8) -> tuple[pd.DataFrame, ReflagReport]:
    """(table with the roofline flag recomputed, report). Pure: the input table is not modified.

    The harness flags a correct candidate ``hack:faster_than_roofline`` when its runtime is below
    ``slack * min_bytes(perf test) / copy bandwidth`` (`Harness._roofline`); a committed table
    keeps the verdicts of the ``meta.min_bytes`` at measurement time. This recomputes the flag of
    every row the harness would have checked -- status "correct", correct true, runtime_ms set --
    from its runtime and the task's CURRENT `Task.min_bytes` at its perf test: the flag is
    removed where the bound now allows the runtime and added where it does not. Other rows, and
    rows of tasks not in `tasks` (listed in the report), keep their flags unchanged.
    """
    if not copy_bw_bytes_per_s or copy_bw_bytes_per_s <= 0:
        raise MeasurementError(f"copy bandwidth must be positive, got {copy_bw_bytes_per_s!r}")
    df = to_table(table).copy()
    df["correct"] = df["correct"].astype("boolean")
    by_id = {t.task_id: t for t in tasks}
    roof_ms: dict[str, float] = {}
    rep = ReflagReport()
    unknown: set[str] = set()
    new_flags = []
    for r in df.itertuples(index=False):
        flags = list(r.flags)
        had = ROOFLINE_FLAG in flags
        rep.flagged_before += had
        timed = (r.status == "correct" and not pd.isna(r.correct) and bool(r.correct)
                 and not pd.isna(r.runtime_ms))
        task = by_id.get(r.task_id)
        if timed and task is None:
            unknown.add(r.task_id)
        if timed and task is not None:
            rep.rows_checked += 1
            if r.task_id not in roof_ms:
                roof_ms[r.task_id] = task.min_bytes(task.perf_test) / copy_bw_bytes_per_s * 1e3
            roof = roof_ms[r.task_id]
            want = float(r.runtime_ms) < slack * roof
            fam = rep.by_family.setdefault(task.family, {"removed": 0, "added": 0})
            if had and not want:
                flags = [f for f in flags if f != ROOFLINE_FLAG]
                rep.removed += 1
                fam["removed"] += 1
            elif want and not had:
                flags.append(ROOFLINE_FLAG)
                rep.added += 1
                fam["added"] += 1
            if want:
                rep.remaining.append({"task_id": r.task_id, "variant": r.variant,
                                      "runtime_ms": float(r.runtime_ms), "roofline_ms": roof})
        rep.flagged_after += ROOFLINE_FLAG in flags
        new_flags.append(flags)
    df["flags"] = new_flags
    rep.by_family = {f: c for f, c in sorted(rep.by_family.items()) if c["removed"] or c["added"]}
    rep.unknown_tasks = sorted(unknown)
    return df, rep


def summarize(df: pd.DataFrame, min_naive_ms: float = 0.020) -> dict[str, Any]:
    """Headline numbers of a measurement table: verified / failed by status and failure flag,
    the share of tasks whose naive variant takes >= `min_naive_ms` at the perf size, and the
    best-variant speedup over naive per task (geometric mean)."""
    df = to_table(df)
    ok = (df["status"] == "correct") & df["correct"].fillna(False).astype(bool)
    naive = df[(df["variant"] == "naive") & ok]
    best = df[ok].groupby("task_id")["speedup"].max().dropna()
    import numpy as np

    return {
        "rows": int(len(df)),
        "tasks": int(df["task_id"].nunique()),
        "verified": int(ok.sum()),
        "failed": int((~ok).sum()),
        "by_status": dict(collections.Counter(df["status"]).most_common()),
        "hack_flags": dict(collections.Counter(f for fl in df["flags"] for f in fl
                                               if str(f).startswith("hack:")).most_common()),
        "naive_tasks_timed": int(len(naive)),
        "naive_ge_min_fraction": float((naive["runtime_ms"] >= min_naive_ms).mean()) if len(naive) else None,
        "min_naive_ms": min_naive_ms,
        "best_speedup_geomean": float(np.exp(np.log(best[best > 0]).mean())) if len(best) else None,
        "gpus": sorted({g for g in df["gpu"].dropna()}),
    }


__all__ = ["COLUMNS", "KEY", "MeasurementError", "ROOFLINE_FLAG", "ReflagReport", "SCHEMA", "VerifyReport",
           "load_measurements", "measurement_metadata", "merge", "now_utc", "reflag_roofline", "row_from_result",
           "save_measurements", "summarize", "to_table", "verified_dataset"]
