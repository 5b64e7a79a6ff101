"""Static features phi(y) of every variant of a dataset, as one table (DESIGN §1, issue 6).

Guarantees:
- `static_table(tasks)` has exactly one row per (task, variant), in task then variant order, with
  the identity columns (`ID_COLUMNS`), the eleven raw features (`FEATURE_NAMES`), ``parse_ok``,
  the compiler-resource columns and the normalised ``hat_<name>`` columns: phi_hat of the
  variant against its task's ``naive`` variant (`cudaperf.features.phi_hat`; a task without a
  naive variant gets absolute values and ``has_naive = False``). Features are computed with the
  task's perf-test sizes bound, so block sizes and dynamic shared memory written as expressions
  of size parameters evaluate.
- With ``resources=True`` registers, static shared memory and spills come from the compiler
  (`cudaperf.compile.compile_batch`: all variants of one task in one nvcc call, the compile
  cache makes a rerun free); a batch that fails is retried one variant at a time, and a variant
  that still does not compile keeps ``resources_ok = False`` and the feature extractor's
  defaults (32 registers, declared shared memory). With ``resources=False`` nothing is compiled
  and every row says ``resources_ok = False``.
- `save` writes zstd parquet with a JSON metadata record (key ``cudaperf``) saying how the table
  was made; `load` returns the frame with that record in ``df.attrs["cudaperf"]``.
- `compare_tables`, `speedup_correlation` and `static_vs_profiled` are the notebook's analyses
  (reproducibility of a committed table, Spearman rho of each feature with log2 speedup pooled
  and within tasks, static-vs-profiled rank agreement); each returns one row per feature.
- `probe_validation()` recomputes, from the probe kernels in cudaperf/probes, whether each
  feature moves the way its probe pair says it must; nothing in it is stored or hard-coded
  except which probe is expected to be higher.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from cudaperf.features import DEFAULT_REGS, FEATURE_NAMES, phi_hat, static_features
from cudaperf.tasks import Task, shuffled_families

FEATURES_DIR = Path("data/features")
STATIC_NAME = "static_c2cuda"
ID_COLUMNS = ["task_id", "family", "category", "split", "variant"]
RESOURCE_COLUMNS = ["resources_ok", "registers", "smem_static", "spill_bytes"]
HAT_COLUMNS = [f"hat_{n}" for n in FEATURE_NAMES]
META_KEY = b"cudaperf"
PROBES_DIR = Path(__file__).with_name("probes")


# ---------------------------------------------------------------------------- resources


def _ns_prefix(variant: str) -> str:
    # Mirrors cudaperf.compile.batch_source, which wraps each variant in this namespace.
    return "v_" + re.sub(r"[^0-9A-Za-z_]", "_", variant) + "::"


def split_batch_resources(resources: dict[str, dict], variants: Iterable[str]) -> dict[str, dict]:
    """{variant: {kernel: figures}} from a batch build's ptxas report (namespaced kernel names).

    Demangled keys look like ``v_naive::k(int, float*)`` or ``void v_naive::k<4>(int)``; the
    namespace prefix is stripped so that `static_features` matches kernels by their own name.
    """
    out: dict[str, dict] = {v: {} for v in variants}
    prefixes = {v: _ns_prefix(v) for v in out}
    for key, figures in resources.items():
        for v, pre in prefixes.items():
            i = key.find(pre)
            if i == 0 or (i > 0 and key[i - 1] in " *&"):
                out[v][key[:i] + key[i + len(pre):]] = figures
                break
    return out


def variant_resources(task: Task, *, arch: str = "sm_90", cache_dir: str | Path = ".cache/cudaperf",
                      timeout_s: float = 120) -> dict[str, dict | None]:
    """{variant: ptxas figures per kernel, or None when it does not compile} for one task."""
    from cudaperf.compile import compile_batch, compile_candidate

    names = [v.name for v in task.variants]
    kw = dict(arch=arch, cache_dir=cache_dir, timeout_s=timeout_s)
    try:
        res, _ = compile_batch({v.name: v.source for v in task.variants}, task.entry, **kw)
    except ValueError:  # two variant names map to one symbol: build them one by one
        res = None
    if res is not None and res.ok:
        split = split_batch_resources(res.resources, names)
        if all(split[n] for n in names):
            return split
    out: dict[str, dict | None] = {}
    for v in task.variants:
        r = compile_candidate(v.source, **kw)
        out[v.name] = r.resources if r.ok else None
    return out


def _resource_summary(res: dict | None) -> dict[str, Any]:
    if not res:
        return {"resources_ok": False, "registers": np.nan, "smem_static": np.nan, "spill_bytes": np.nan}
    vals = list(res.values())
    return {"resources_ok": True,
            "registers": float(max(int(r.get("registers") or 0) for r in vals)),
            "smem_static": float(max(int(r.get("smem_static") or 0) for r in vals)),
            "spill_bytes": float(sum(int(r.get("spill_stores") or 0) + int(r.get("spill_loads") or 0)
                                     for r in vals))}


# ---------------------------------------------------------------------------- rows


def task_rows(task: Task, *, resources: bool = True, cc: str = "9.0", arch: str = "sm_90",
              cache_dir: str | Path = ".cache/cudaperf") -> list[dict[str, Any]]:
    """The table rows of one task's variants (see module docstring)."""
    sizes = dict(task.perf_test.sizes)
    res = variant_resources(task, arch=arch, cache_dir=cache_dir) if resources else {}
    feats = {v.name: static_features(v.source, resources=res.get(v.name), cc=cc, sizes=sizes)
             for v in task.variants}
    naive = feats.get("naive")
    rows = []
    for v in task.variants:
        f = feats[v.name]
        row: dict[str, Any] = {
            "task_id": task.task_id, "family": task.family,
            "category": str(task.meta.get("category", "")), "split": task.split, "variant": v.name,
        }
        row.update({n: (np.nan if x is None else float(x)) for n, x in f.values().items()})
        row["parse_ok"] = bool(f.parse_ok)
        row["n_notes"] = len(f.notes)
        row.update(_resource_summary(res.get(v.name)))
        row["has_naive"] = naive is not None
        row.update(dict(zip(HAT_COLUMNS, phi_hat(f, naive).tolist())))
        rows.append(row)
    return rows


def _rows_star(args: tuple) -> list[dict[str, Any]]:
    task, kw = args
    return task_rows(task, **kw)


def static_table(tasks: Sequence[Task], *, resources: bool = True, jobs: int = 0,
                 progress: bool = False, cc: str = "9.0", arch: str = "sm_90",
                 cache_dir: str | Path = ".cache/cudaperf") -> pd.DataFrame:
    """One row per task x variant: identity, raw features, parse_ok, resources, hat_<name>.

    ``jobs``: worker processes (0 = all cores). Compilation is nvcc-bound and feature extraction
    Python-bound, so processes (not threads) parallelise both.
    """
    kw = dict(resources=resources, cc=cc, arch=arch, cache_dir=str(cache_dir))
    jobs = jobs or os.cpu_count() or 1
    items = [(t, kw) for t in tasks]
    if jobs <= 1 or len(items) <= 1:
        it: Iterable = map(_rows_star, items)
        ex = None
    else:
        ex = ProcessPoolExecutor(max_workers=min(jobs, len(items)))
        it = ex.map(_rows_star, items, chunksize=max(1, min(64, len(items) // (4 * jobs))))
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, total=len(items), desc="features", unit="task")
    try:
        rows = [r for rs in it for r in rs]
    finally:
        if ex is not None:
            ex.shutdown()
    cols = ID_COLUMNS + FEATURE_NAMES + ["parse_ok", "n_notes"] + RESOURCE_COLUMNS + ["has_naive"] + HAT_COLUMNS
    return pd.DataFrame(rows, columns=cols)


# ---------------------------------------------------------------------------- slices


def stratified_tasks(tasks: Sequence[Task], n: int, seed: int = 0) -> list[Task]:
    """At most n tasks spread over families as evenly as possible (all when n <= 0).

    Families take turns (in a seeded order), each contributing its next task in a seeded
    shuffle, so a small slice still touches as many families as it can.
    """
    if n <= 0 or n >= len(tasks):
        return list(tasks)
    fams, by_fam = shuffled_families(tasks, seed)
    out: list[Task] = []
    depth = 0
    while len(out) < n:
        for f in fams:
            if depth < len(by_fam[f]) and len(out) < n:
                out.append(by_fam[f][depth])
        depth += 1
    keep = {id(t) for t in out}
    return [t for t in tasks if id(t) in keep]  # dataset order, for stable tables


# ---------------------------------------------------------------------------- storage


def default_path(name: str = STATIC_NAME, root: str | Path = ".") -> Path:
    return Path(root) / FEATURES_DIR / f"{name}.parquet"


def save(df: pd.DataFrame, path: str | Path | None = None, *, meta: dict[str, Any] | None = None) -> Path:
    """Write `df` as zstd parquet with `meta` (plus row count and time) under the key 'cudaperf'."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path) if path is not None else default_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {**(meta or {}), "rows": int(len(df)),
              "written_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    table = pa.Table.from_pandas(df.reset_index(drop=True), preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           META_KEY: json.dumps(record, default=str).encode()})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)
    return path


def load(path: str | Path | None = None) -> pd.DataFrame:
    """A table written by `save`; its metadata record is in ``df.attrs['cudaperf']``."""
    import pyarrow.parquet as pq

    path = Path(path) if path is not None else default_path()
    table = pq.read_table(path)
    raw = (table.schema.metadata or {}).get(META_KEY)
    df = table.to_pandas()
    df.attrs["cudaperf"] = json.loads(raw) if raw else {}
    return df


def table_meta(*, resources: bool, cc: str, arch: str, n_tasks: int, seed: int = 0,
               command: str = "") -> dict[str, Any]:
    """The metadata record that says how a static table was computed."""
    from cudaperf.compile import toolchain_versions

    nvcc = toolchain_versions().get("nvcc", "") if resources else ""
    return {
        "kind": "static_features", "resources": resources, "cc": cc,
        "arch": arch if resources else None, "dataset_seed": seed, "tasks": n_tasks,
        "occupancy": ("registers and static shared memory from ptxas -v (compile_batch)" if resources
                      else f"from default registers ({DEFAULT_REGS}/thread) and the declared static "
                           "shared memory: nothing was compiled"),
        "phi_hat": "relative to the task's naive variant (cudaperf.features.phi_hat)",
        "nvcc": nvcc.splitlines()[-1] if nvcc else None, "command": command,
    }


# ---------------------------------------------------------------------------- analyses


def compare_tables(committed: pd.DataFrame, fresh: pd.DataFrame,
                   columns: Sequence[str] = tuple(FEATURE_NAMES)) -> pd.DataFrame:
    """Per column: rows of `fresh` absent from `committed`, and rows whose value differs
    (NaN equals NaN; 1e-9 relative tolerance). A reproducibility check of a committed table."""
    key = ["task_id", "variant"]
    m = fresh.merge(committed, on=key, how="left", suffixes=("", "_c"), indicator=True)
    missing = int((m["_merge"] == "left_only").sum())
    both = m[m["_merge"] == "both"]
    rows = []
    for c in columns:
        a, b = both[c].astype(float).to_numpy(), both[f"{c}_c"].astype(float).to_numpy()
        same = np.isclose(a, b, rtol=1e-9, atol=0.0) | (np.isnan(a) & np.isnan(b))
        rows.append({"column": c, "rows_compared": int(len(both)), "rows_missing": missing,
                     "rows_differing": int((~same).sum())})
    return pd.DataFrame(rows)


def _spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    if len(a) < 3:
        return None
    ra, rb = pd.Series(a).rank().to_numpy(), pd.Series(b).rank().to_numpy()
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def speedups(measurements: pd.DataFrame) -> pd.DataFrame:
    """(task_id, variant, speedup) from measurement rows: a ``speedup`` column, or else
    ``runtime_ms`` relative to the same task's ``naive`` row; only correct rows when a
    ``correct`` column exists; non-positive or missing speedups dropped."""
    m = measurements
    if "correct" in m.columns:
        m = m[m["correct"].astype(bool)]
    if "speedup" in m.columns:
        out = m[["task_id", "variant", "speedup"]].copy()
    elif "runtime_ms" in m.columns:
        base = m[m["variant"] == "naive"].set_index("task_id")["runtime_ms"]
        out = m[["task_id", "variant"]].copy()
        out["speedup"] = m["task_id"].map(base).to_numpy() / m["runtime_ms"].to_numpy()
    else:
        raise ValueError("measurements need a 'speedup' or a 'runtime_ms' column; have "
                         f"{list(measurements.columns)}")
    out = out[np.isfinite(out["speedup"].astype(float)) & (out["speedup"].astype(float) > 0)]
    return out.drop_duplicates(["task_id", "variant"], keep="last")


def speedup_correlation(static: pd.DataFrame, measurements: pd.DataFrame) -> pd.DataFrame:
    """Per feature: Spearman rho of hat_<name> with log2 speedup, pooled over all variants and
    within tasks (mean over tasks with >= 3 measured variants), and the number of rows."""
    df = static.merge(speedups(measurements), on=["task_id", "variant"], how="inner")
    df["log2_speedup"] = np.log2(df["speedup"].astype(float))
    rows = []
    for name, col in zip(FEATURE_NAMES, HAT_COLUMNS):
        within = [_spearman(g[col].to_numpy(float), g["log2_speedup"].to_numpy())
                  for _, g in df.groupby("task_id") if len(g) >= 3]
        within = [w for w in within if w is not None]
        rows.append({"feature": name, "rho_pooled": _spearman(df[col].to_numpy(float), df["log2_speedup"].to_numpy()),
                     "rho_within_task": float(np.mean(within)) if within else None,
                     "tasks_within": len(within), "rows": int(len(df))})
    return pd.DataFrame(rows)


def static_vs_profiled(static: pd.DataFrame, profiled: pd.DataFrame) -> pd.DataFrame:
    """Per feature: Spearman rank agreement between static and profiled values
    (cudaperf.profiled.rank_agreement) over variants profiled with status ok."""
    from cudaperf.profiled import rank_agreement

    prof = profiled[profiled["status"] == "ok"] if "status" in profiled.columns else profiled
    df = static.merge(prof, on=["task_id", "variant"], how="inner", suffixes=("", "_p"))

    def recs(cols):
        return [{n: (None if pd.isna(r[c]) else float(r[c])) for n, c in zip(FEATURE_NAMES, cols)}
                for _, r in df[list(cols)].iterrows()]

    agree = rank_agreement(recs(FEATURE_NAMES), recs([f"prof_{n}" for n in FEATURE_NAMES]))
    return pd.DataFrame([{"feature": n, "rho": agree[n]["rho"], "pairs": agree[n]["n"]}
                         for n in FEATURE_NAMES])


# ---------------------------------------------------------------------------- probes

# (feature, lower probe, higher probe, resources of the lower / higher probe or None)
# The occ pair is one kernel under two compiler reports (32 vs 128 registers per thread):
# occupancy is the one feature that only the resource report, not the source, can move.
_MM = "_Z8mm_tilediPKfS0_Pf"
PROBE_PAIRS: list[tuple[str, str, str, dict | None, dict | None]] = [
    ("coal", "coal_strided", "coal_coalesced", None, None),
    ("ai", "smem_none", "smem_tiled", None, None),
    ("occ", "smem_tiled", "smem_tiled", {_MM: {"registers": 128, "smem_static": 2048}},
     {_MM: {"registers": 32, "smem_static": 2048}}),
    ("div", "branch_uniform", "branch_divergent", None, None),
    ("xfer", "xfer_none", "xfer_host_copy", None, None),
    ("atomics", "atomics_none", "atomics_used", None, None),
    ("syncthreads", "smem_none", "smem_tiled", None, None),
    ("kernels", "launches_fused", "launches_many", None, None),
    ("tpb", "tpb_64", "tpb_256", None, None),
    ("tpb", "tpb_256", "tpb_1024", None, None),
    ("gmem_access", "launches_fused", "launches_many", None, None),
    ("ops", "launches_fused", "launches_many", None, None),
]


def probe_validation(probes_dir: str | Path = PROBES_DIR) -> pd.DataFrame:
    """Per probe pair: the feature's value on both probes and whether it moved up as it must."""
    rows = []
    for feat, lo, hi, res_lo, res_hi in PROBE_PAIRS:
        f_lo = static_features((Path(probes_dir) / f"{lo}.cu").read_text(), resources=res_lo)
        f_hi = static_features((Path(probes_dir) / f"{hi}.cu").read_text(), resources=res_hi)
        a, b = getattr(f_lo, feat), getattr(f_hi, feat)
        label = lambda name, res: name + (f" ({next(iter(res.values()))['registers']} regs)" if res else "")  # noqa: E731
        rows.append({"feature": feat, "expected_lower": label(lo, res_lo),
                     "expected_higher": label(hi, res_hi), "lower_value": a, "higher_value": b,
                     "moves_right_way": a is not None and b is not None and b > a})
    return pd.DataFrame(rows)


__all__ = ["FEATURES_DIR", "HAT_COLUMNS", "ID_COLUMNS", "PROBE_PAIRS", "RESOURCE_COLUMNS",
           "STATIC_NAME", "compare_tables", "default_path", "load", "probe_validation", "save",
           "speedup_correlation", "speedups", "split_batch_resources", "static_table",
           "static_vs_profiled", "stratified_tasks", "table_meta", "task_rows", "variant_resources"]
