"""Profiled (Nsight Compute) versions of the structural features phi(y) (DESIGN §1), GPU side.

Guarantees:
- `ncu_command(cmd)` builds the Nsight Compute command line that collects `METRICS` for every
  kernel of a process (and its children) in one run: ``ncu --clock-control none --csv
  --print-units base --metrics <list> --target-processes all <cmd>``. One process may run many
  candidates; kernels are attributed to candidates by a marker kernel (`MARKER_SOURCE`) that
  the driver launches with ``gridDim.x = candidate index + 1`` before each candidate.
- `parse_ncu_csv(text)` reads ncu's ``--csv`` output (the default "details" page: one row per
  kernel and metric, or ``--page raw``: one row per kernel, a units row second), skipping
  ``==PROF==`` and other non-CSV lines, converting thousands separators and scaled units
  (byte/Kbyte/Mbyte/Gbyte, nsecond/usecond/msecond/second, %) to base numbers. Missing or
  ``n/a`` values become None; it never raises on malformed rows (they are skipped).
- `profiled_features(kernels)` aggregates the kernels of one call into the eleven names of
  `cudaperf.features.FEATURE_NAMES`: sums for counts, duration-weighted means for rates.
  Features Nsight Compute cannot see (xfer, syncthreads) are None.

What each profiled feature is:
- coal: ideal / measured global sectors per request (loads and stores together), clipped to
  [0, 1]; ideal = 4 sectors (32 threads x 4 bytes = 128 bytes); pass `ideal_sectors` for wider
  element types. The raw sectors/request is kept as ``sectors_per_request``. Known bias: a
  vector access (float4: 16 bytes a lane) needs 16 sectors per request when perfectly coalesced,
  so it reads as 0.25 here -- on the H200 the 70 ``vectorized`` variants averaged 0.30 against
  the static extractor's 0.80, the largest static-vs-profiled disagreement left for coal.
- ai: (fadd + fmul + 2 ffma + dadd + dmul + 2 dfma) thread instructions / dram__bytes.sum.
- occ: achieved occupancy, sm__warps_active.avg.pct_of_peak_sustained_active / 100.
- div: 100 - smsp__sass_average_branch_targets_threads_uniform.pct, averaged over kernels
  weighted by smsp__sass_branch_targets.sum (0 = no divergence, also when no branch executes).
- atomics: global atom + red and shared atom warp instructions executed.
- kernels: number of kernels profiled for the call. tpb: mean launch__block_size.
- gmem_access: global ld + st warp instructions x 32 / launched threads (per thread).
- ops: fp32 + fp64 + integer thread instructions / launched threads (per thread).
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from cudaperf.features import FEATURE_NAMES

_FLOP_OPS = ("fadd", "fmul", "ffma", "dadd", "dmul", "dfma")
METRICS: list[str] = [
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__sass_average_branch_targets_threads_uniform.pct",
    "smsp__sass_branch_targets.sum",
    "dram__bytes.sum",
    *[f"smsp__sass_thread_inst_executed_op_{o}_pred_on.sum" for o in _FLOP_OPS],
    "smsp__sass_thread_inst_executed_op_fp32_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fp64_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_integer_pred_on.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_global_atom.sum",
    "smsp__sass_inst_executed_op_global_red.sum",
    "smsp__sass_inst_executed_op_shared_atom.sum",
    "launch__block_size",
    "launch__grid_size",
    "launch__thread_count",
    "gpu__time_duration.sum",
]

MARKER_KERNEL = "cudaperf_marker"
MARKER_SOURCE = (
    "// Launched as cudaperf_marker<<<index + 1, 1>>>() before candidate `index`; the profiler\n"
    "// records its grid size, which attributes the following kernels to that candidate.\n"
    f'extern "C" __global__ void {MARKER_KERNEL}() {{}}\n'
)

_UNIT_SCALE = {
    "": 1.0, "byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
    "kibyte": 1024.0, "mibyte": 1024.0 ** 2, "gibyte": 1024.0 ** 3,
    "nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9,  # durations in ns
    "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9,
    "%": 1.0, "sector": 1.0, "request": 1.0, "inst": 1.0, "warp": 1.0, "thread": 1.0,
    "block": 1.0, "cycle": 1.0, "register/thread": 1.0,
}


def ncu_command(cmd: Sequence[str], metrics: Iterable[str] = METRICS, *,
                ncu: str = "ncu", kernel_regex: str | None = None,
                extra: Sequence[str] = ()) -> list[str]:
    """The ncu argv that profiles every kernel launched by `cmd` (and its child processes)."""
    argv = [ncu, "--clock-control", "none", "--csv", "--print-units", "base",
            "--metrics", ",".join(metrics), "--target-processes", "all"]
    if kernel_regex:
        argv += ["--kernel-name", f"regex:{kernel_regex}"]
    return argv + list(extra) + list(cmd)


@dataclass
class KernelMetrics:
    """One profiled kernel launch: its identity and metric values (None = not reported)."""

    id: int
    name: str
    block_size: str = ""
    grid_size: str = ""
    metrics: dict[str, float | None] = field(default_factory=dict)

    def get(self, name: str, default: float = 0.0) -> float:
        v = self.metrics.get(name)
        return default if v is None else v

    @property
    def grid_x(self) -> int | None:
        m = re.match(r"\(?\s*(\d+)", self.grid_size or "")
        if m:
            return int(m.group(1))
        v = self.metrics.get("launch__grid_size")
        return int(v) if v is not None else None


def _number(value: str, unit: str = "") -> float | None:
    s = (value or "").strip().replace(",", "").replace("\u202f", "")
    if not s or s.lower() in ("n/a", "nan", "-", "(!)"):
        return None
    try:
        x = float(s)
    except ValueError:
        return None
    return x * _UNIT_SCALE.get((unit or "").strip().lower(), 1.0)


def _csv_rows(text: str) -> list[list[str]]:
    # ncu prefixes its own log lines with ==PROF== / ==WARNING== / ==ERROR==; the program's
    # stdout may interleave too. CSV rows of ncu always start with a quoted field.
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    return list(csv.reader(io.StringIO("\n".join(lines))))


def parse_ncu_csv(text: str) -> list[KernelMetrics]:
    """Kernels (in launch order) from ncu --csv output, details or raw page."""
    rows = _csv_rows(text)
    if not rows:
        return []
    header = rows[0]
    col = {h: i for i, h in enumerate(header)}
    kernels: dict[int, KernelMetrics] = {}
    if "Metric Name" in col and "Metric Value" in col:
        need = max(col["Metric Name"], col["Metric Value"], col.get("ID", 0))
        for r in rows[1:]:
            if len(r) <= need or r == header:
                continue
            try:
                kid = int(r[col["ID"]]) if "ID" in col else len(kernels)
            except ValueError:
                continue
            k = kernels.get(kid)
            if k is None:
                k = kernels[kid] = KernelMetrics(
                    id=kid, name=r[col["Kernel Name"]] if "Kernel Name" in col else "",
                    block_size=r[col["Block Size"]] if "Block Size" in col else "",
                    grid_size=r[col["Grid Size"]] if "Grid Size" in col else "")
            unit = r[col["Metric Unit"]] if "Metric Unit" in col else ""
            k.metrics[r[col["Metric Name"]]] = _number(r[col["Metric Value"]], unit)
    else:
        # raw page: header of metric names, then a row of units, then one row per kernel
        units = rows[1] if len(rows) > 1 and not _is_id(rows[1], col) else [""] * len(header)
        start = 2 if units is not rows[0] and len(rows) > 1 and not _is_id(rows[1], col) else 1
        for r in rows[start:]:
            if len(r) != len(header):
                continue
            try:
                kid = int(r[col["ID"]]) if "ID" in col else len(kernels)
            except ValueError:
                continue
            name = r[col["Kernel Name"]] if "Kernel Name" in col else ""
            k = KernelMetrics(id=kid, name=name,
                              block_size=r[col["Block Size"]] if "Block Size" in col else "",
                              grid_size=r[col["Grid Size"]] if "Grid Size" in col else "")
            for i, h in enumerate(header):
                if "__" in h:
                    k.metrics[h] = _number(r[i], units[i] if i < len(units) else "")
            kernels[kid] = k
    return [kernels[i] for i in sorted(kernels)]


def _is_id(row: list[str], col: dict[str, int]) -> bool:
    return "ID" in col and row[col["ID"]].strip().isdigit()


def split_by_marker(kernels: Sequence[KernelMetrics],
                    marker: str = MARKER_KERNEL) -> dict[int, list[KernelMetrics]]:
    """Group kernels by the marker launched before each candidate (index = grid x - 1)."""
    groups: dict[int, list[KernelMetrics]] = {}
    current: int | None = None
    for k in kernels:
        if k.name.split("(")[0].strip() == marker:
            gx = k.grid_x
            current = gx - 1 if gx else None
            if current is not None:
                groups.setdefault(current, [])
            continue
        if current is not None:
            groups[current].append(k)
    return groups


def profiled_features(kernels: Sequence[KernelMetrics], *, ideal_sectors: float = 4.0) -> dict:
    """The eleven features (FEATURE_NAMES) of one call from its profiled kernels."""
    out: dict[str, Any] = {k: None for k in FEATURE_NAMES}
    ks = [k for k in kernels if k.name.split("(")[0].strip() != MARKER_KERNEL]
    out["kernels"] = float(len(ks))
    if not ks:
        return out
    sectors = sum(k.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
                  + k.get("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum") for k in ks)
    requests = sum(k.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
                   + k.get("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum") for k in ks)
    if requests > 0:
        spr = sectors / requests
        out["sectors_per_request"] = spr
        out["coal"] = min(1.0, ideal_sectors / spr) if spr > 0 else 1.0
    flops = sum(sum(k.get(f"smsp__sass_thread_inst_executed_op_{o}_pred_on.sum")
                    * (2 if o.endswith("fma") else 1) for o in _FLOP_OPS) for k in ks)
    dram = sum(k.get("dram__bytes.sum") for k in ks)
    out["flops"], out["dram_bytes"] = flops, dram
    out["ai"] = flops / dram if dram > 0 else None
    # Rates: weight each kernel by its duration (equal weights when durations are missing).
    w = [k.get("gpu__time_duration.sum", 0.0) for k in ks]
    if sum(w) <= 0:
        w = [1.0] * len(ks)

    def wmean(metric: str) -> float | None:
        pairs = [(k.metrics.get(metric), wi) for k, wi in zip(ks, w)]
        pairs = [(v, wi) for v, wi in pairs if v is not None]
        tw = sum(wi for _, wi in pairs)
        return sum(v * wi for v, wi in pairs) / tw if pairs and tw > 0 else None

    occ = wmean("sm__warps_active.avg.pct_of_peak_sustained_active")
    out["occ"] = occ / 100.0 if occ is not None else None
    # ncu reports 0 % uniform for a kernel that executes no branch at all (predicated code):
    # weight each kernel's uniformity by its branch targets, and no branches means no divergence.
    bt = [(k.metrics.get("smsp__sass_average_branch_targets_threads_uniform.pct"),
           k.metrics.get("smsp__sass_branch_targets.sum")) for k in ks]
    if all(u is None for u, _ in bt):
        out["div"] = None
    elif all(n is not None for _, n in bt):
        tot = sum(n for u, n in bt if u is not None)
        out["div"] = (sum((100.0 - u) * n for u, n in bt if u is not None) / tot) if tot > 0 else 0.0
    else:
        uni = wmean("smsp__sass_average_branch_targets_threads_uniform.pct")
        out["div"] = 100.0 - uni if uni is not None else None
    out["atomics"] = sum(k.get("smsp__sass_inst_executed_op_global_atom.sum")
                         + k.get("smsp__sass_inst_executed_op_global_red.sum")
                         + k.get("smsp__sass_inst_executed_op_shared_atom.sum") for k in ks)
    bs = [k.metrics.get("launch__block_size") for k in ks]
    bs = [b for b in bs if b]
    out["tpb"] = sum(bs) / len(bs) if bs else None
    gmem = ops = 0.0
    have_threads = False
    for k in ks:
        threads = k.metrics.get("launch__thread_count")
        if not threads:
            continue
        have_threads = True
        gmem += 32.0 * (k.get("smsp__sass_inst_executed_op_global_ld.sum")
                        + k.get("smsp__sass_inst_executed_op_global_st.sum")) / threads
        ops += (k.get("smsp__sass_thread_inst_executed_op_fp32_pred_on.sum")
                + k.get("smsp__sass_thread_inst_executed_op_fp64_pred_on.sum")
                + k.get("smsp__sass_thread_inst_executed_op_integer_pred_on.sum")) / threads
    out["gmem_access"] = gmem if have_threads else None
    out["ops"] = ops if have_threads else None
    return out


def rank_agreement(static: Sequence[dict], profiled: Sequence[dict],
                   names: Iterable[str] = FEATURE_NAMES) -> dict[str, dict]:
    """Spearman rank correlation per feature between paired static and profiled records.

    Pairs where either side is None are dropped per feature; a feature with fewer than 3 pairs
    or no variation on one side gets ``rho: None``. Returns {name: {rho, n}}.
    """
    import numpy as np
    import pandas as pd

    out: dict[str, dict] = {}
    for name in names:
        pairs = [(s.get(name), p.get(name)) for s, p in zip(static, profiled)]
        pairs = [(float(a), float(b)) for a, b in pairs if a is not None and b is not None]
        rho = None
        if len(pairs) >= 3:
            a = pd.Series([x for x, _ in pairs]).rank().to_numpy()
            b = pd.Series([y for _, y in pairs]).rank().to_numpy()
            if a.std() > 0 and b.std() > 0:
                rho = float(np.corrcoef(a, b)[0, 1])
        out[name] = {"rho": rho, "n": len(pairs)}
    return out
