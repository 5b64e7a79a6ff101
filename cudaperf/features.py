"""Static structural features phi(y) of a CUDA candidate (DESIGN §1), without a GPU.

Guarantees:
- `static_features(source)` never raises on any input string (untrusted, possibly not C++): a
  parse with tree-sitter-cuda that contains error nodes gives ``parse_ok = False`` and the
  features of whatever parsed, with a note. It returns the eleven features of `FEATURE_NAMES`
  (None where the source gives no basis, e.g. ``coal`` with no global access; each None has a
  note), per-kernel and per-launch details, and runs in well under 50 ms for a typical
  candidate on one core (benchmarks/bench_features.py measures it).
- Counts are "loop-weighted": each enclosing loop multiplies by `LOOP_WEIGHT` (8), because
  trip counts are unknown statically and a constant keeps the ranking of "inside a loop" above
  "outside" without pretending to know sizes.
- Kernel-level features (coal, ai, div, atomics, syncthreads, gmem_access, ops) are per thread
  and summed over the kernels launched, each kernel weighted by its (loop-weighted) number of
  launch sites; a kernel never launched counts only if no launch was found at all.

Definitions (what each number means):
- coal: share of global accesses (loop-weighted) whose address is coalesced across a warp: the
  index is affine in threadIdx.x with |coefficient| <= 1 (``i``, ``row*ld + i``, ``n - 1 - i``),
  or warp-uniform (coefficient 0: one transaction per warp, e.g. ``x[blockIdx.x]``). A coefficient
  that is a constant > 1, a non-constant (``i*cols``) or not affine (``x[idx[i]]``) is uncoalesced.
  Derivations follow simple def-use of locals: ``tid / 32`` is warp-uniform, ``tid % 32`` and
  ``tid & 31`` keep the coefficient, ``idx % cols`` keeps it, ``idx / cols`` is piecewise uniform.
- ai: floating-point operations / estimated global bytes per thread (element size from the
  pointer's type, including casts to vector types such as float4). None without global accesses.
- occ: mean theoretical occupancy over launch sites (cudaperf.occupancy) from threads per block,
  registers and shared memory (the compiler's ``resources`` when given, else 32 registers and the
  static ``__shared__`` declarations plus any evaluable dynamic size, each with a note).
- div: thread-dependent branches (if, loops, switch whose condition depends on threadIdx or on
  data loaded at thread-dependent addresses) that are not bounds guards. ``c ? a : b`` is not a
  branch: nvcc emits a select for it, and on the H200 such kernels showed 100 % uniform branch
  targets (data/features/profiled_c2cuda_nvidia-h200.parquet). A guard compares a
  thread-dependent value with an expression of parameters, constants and block-level built-ins
  using <, <=, >, >= (possibly joined by && / ||), like ``if (i < n)`` or ``if (i >= n) return;``.
- xfer: host<->device copies (cudaMemcpy*/cudaMemcpy*Async with HostToDevice, DeviceToHost or
  Default kind, or a kind that is not a literal; cudaMemcpyToSymbol/FromSymbol), loop-weighted.
- atomics, syncthreads: atomic* calls and block/warp/group barriers in kernels and the device
  functions they call, loop-weighted.
- kernels: ``<<<...>>>`` and cudaLaunchKernel sites in host code, loop-weighted.
- tpb: mean threads per block over launch sites whose block size evaluates (literals, #defines,
  constant locals, ``dim3`` products, size parameters bound by ``sizes``); None when none does.
- gmem_access: global loads + stores per thread (an atomic on global memory counts once).
- ops: arithmetic operators and math-library calls in kernels (integer and floating point;
  a*b+c counts 2, fmaf counts 2); comparisons and logical operators are not counted.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from cudaperf.cuda_analysis import (LOOP_WEIGHT, _Counts, _FunctionAnalyzer, _functions,
                                    _HostAnalyzer, _macros, _parser)
from cudaperf.occupancy import occupancy as _occupancy

FEATURE_NAMES = ["coal", "ai", "occ", "div", "xfer", "atomics", "syncthreads", "kernels", "tpb",
                 "gmem_access", "ops"]
DEFAULT_REGS = 32  # assumed registers per thread when the compiler's report is not given
DEFAULT_TPB = 256  # assumed block size for occupancy when a launch's block size is unknown

_COUNT_FEATURES = ("div", "xfer", "atomics", "syncthreads", "kernels")
_RELATIVE_FEATURES = ("ai", "gmem_access", "ops")

# ---------------------------------------------------------------------------- results


@dataclass
class StaticFeatures:
    coal: float | None = None
    ai: float | None = None
    occ: float | None = None
    div: float = 0.0
    xfer: float = 0.0
    atomics: float = 0.0
    syncthreads: float = 0.0
    kernels: float = 0.0
    tpb: float | None = None
    gmem_access: float = 0.0
    ops: float = 0.0
    parse_ok: bool = True
    notes: list[str] = field(default_factory=list)
    kernel_details: dict[str, dict] = field(default_factory=dict)
    launches: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def values(self) -> dict[str, Any]:
        """The eleven features only, in canonical order."""
        return {k: getattr(self, k) for k in FEATURE_NAMES}


def _mangled_base(key: str) -> str | None:
    """Unqualified function name of an Itanium-mangled symbol (_Z4nameiPf, _ZN2ns4nameE...)."""
    if not key.startswith("_Z"):
        return None
    i, nested, last = 2, key[2:3] == "N", None
    if nested:
        i += 1
    while i < len(key) and key[i].isdigit():
        j = i
        while j < len(key) and key[j].isdigit():
            j += 1
        n = int(key[i:j])
        last = key[j:j + n]
        i = j + n
        if not nested:
            break
        if key[i:i + 1] == "I":  # template arguments of a nested component: stop here
            break
    return last


def _match_resources(name: str, resources: dict | None) -> dict | None:
    """The compiler report of kernel `name`; keys may be C names or Itanium-mangled names."""
    if not resources:
        return None
    if name in resources:
        return resources[name]
    from cudaperf.compile import kernel_base_name  # demangled keys: "k(int, float*)" -> "k"

    for key, val in resources.items():
        if _mangled_base(key) == name or kernel_base_name(key) == name:
            return val
    return None


def static_features(source: str, *, resources: dict | None = None, cc: str | float = "9.0",
                    sizes: dict | None = None) -> StaticFeatures:
    """Static features of one candidate translation unit (see module docstring)."""
    out = StaticFeatures()
    try:
        _extract(source, resources, cc, sizes or {}, out)
    except RecursionError:
        out.parse_ok = False
        out.notes.append("source nests too deeply to analyse; features are partial")
    return out


_RE_BLANK = re.compile(r"^[ \t]*#[ \t]*pragma\b[^\n]*|\b__align__[ \t]*\([ \t]*\w+[ \t]*\)", re.M)


def _blank_pragmas(source: str) -> str:
    # tree-sitter's grammar rejects a directive between a for-header and an unbraced body
    # (``for (...)\n#pragma unroll\nfor (...)``) and CUDA's ``__align__(8)`` specifier, both of
    # which nvcc accepts. No feature reads either, so they become spaces of the same length:
    # line numbers in notes stay right.
    return _RE_BLANK.sub(lambda m: " " * len(m.group(0)), source)


def _extract(source: str, resources: dict | None, cc, sizes: dict, out: StaticFeatures) -> None:
    if not isinstance(source, str):
        source = str(source)
    tree = _parser().parse(_blank_pragmas(source).encode("utf-8", "replace"))
    root = tree.root_node
    if root.has_error:
        out.parse_ok = False
        errs = []
        stack = [root]
        while stack and len(errs) < 3:
            n = stack.pop()
            if n.type == "ERROR" or n.is_missing:
                errs.append(f"line {n.start_point[0] + 1}")
            elif n.has_error:
                stack.extend(reversed(n.children))
        out.notes.append("syntax errors near " + ", ".join(errs) + "; features are partial")
    macros = _macros(root)
    funcs = _functions(root)
    kernels = [f for f in funcs if f["kind"] == "global"]
    if not kernels:
        out.notes.append("no __global__ kernel found")

    # Device functions first (callee summaries), in definition order; no recursion.
    dev_summaries: dict[str, _Counts] = {}
    for f in funcs:
        if f["kind"] == "device":
            dev_summaries[f["name"]] = _FunctionAnalyzer(f, macros, dev_summaries, False).run()

    host = _HostAnalyzer(macros, sizes, {k["name"] for k in kernels})
    for f in funcs:
        if f["kind"] == "host" and f["body"] is not None:
            host.walk(f["body"], 1.0)
    if root.has_error:
        # Calls outside any function definition survive only in a broken parse: host code
        # whose definition did not parse. Their launches and copies still count.
        stack = [root]
        while stack:
            n = stack.pop()
            if n.type == "function_definition":
                continue
            if n.type == "call_expression":
                host.call(n, 1.0)
            stack.extend(n.named_children)
    out.notes.extend(host.notes)
    out.xfer = host.xfer
    out.launches = host.launches
    out.kernels = float(sum(l["weight"] for l in host.launches))

    launch_w: dict[str, float] = {}
    for l in host.launches:
        launch_w[l["kernel"]] = launch_w.get(l["kernel"], 0.0) + l["weight"]
    any_launch = bool(host.launches)
    if not any_launch and kernels:
        out.notes.append("no launch site found; every kernel counts once")

    tot = {"ops": 0.0, "flops": 0.0, "atomics": 0.0, "syncs": 0.0, "div": 0.0, "acc": 0.0,
           "coal": 0.0, "bytes": 0.0}
    kinfo: dict[str, dict] = {}
    for k in kernels:
        an = _FunctionAnalyzer(k, macros, dev_summaries, True)
        c = an.run()
        kw = launch_w.get(k["name"], 0.0) if any_launch else 1.0
        acc = sum(a["weight"] for a in c.accesses)
        coal = sum(a["weight"] for a in c.accesses if a["class"] in ("unit", "uniform"))
        nbytes = sum(a["weight"] * a["bytes"] for a in c.accesses)
        static_smem = sum(v for v in an.shared.values() if v > 0)
        kinfo[k["name"]] = {
            "launch_weight": kw, "ops": c.ops, "flops": c.flops, "atomics": c.atomics,
            "syncthreads": c.syncs, "div": c.div, "guards": c.guards, "gmem_access": acc,
            "coal": coal / acc if acc else None, "gmem_bytes": nbytes,
            "accesses": c.accesses, "smem_static_est": static_smem,
            "extern_shared": an.extern_shared, "launch_bounds": k["launch_bounds"],
        }
        if kw == 0:
            out.notes.append(f"kernel {k['name']} is never launched from host code: not counted")
            continue
        tot["ops"] += c.ops * kw
        tot["flops"] += c.flops * kw
        tot["atomics"] += c.atomics * kw
        tot["syncs"] += c.syncs * kw
        tot["div"] += c.div * kw
        tot["acc"] += acc * kw
        tot["coal"] += coal * kw
        tot["bytes"] += nbytes * kw

    out.ops, out.atomics, out.syncthreads, out.div = tot["ops"], tot["atomics"], tot["syncs"], tot["div"]
    out.gmem_access = tot["acc"]
    if tot["acc"] > 0:
        out.coal = tot["coal"] / tot["acc"]
        out.ai = tot["flops"] / tot["bytes"] if tot["bytes"] else None
    else:
        out.notes.append("no global memory access found: coal and ai are undefined")

    # Threads per block and occupancy, per launch site.
    known = [l for l in host.launches if l["tpb"] is not None]
    if known:
        out.tpb = sum(l["tpb"] * l["weight"] for l in known) / sum(l["weight"] for l in known)
    elif host.launches:
        out.notes.append("block size of no launch site evaluates: tpb unknown")
    else:
        out.notes.append("no launch site: tpb unknown")
    occs, ws = [], []
    reg_note = smem_note = False
    for l in host.launches:
        info = kinfo.get(l["kernel"])
        if info is None:
            out.notes.append(f"launch of {l['kernel']!r}, which is not defined in this file")
            continue
        tpb = l["tpb"] or info["launch_bounds"] or (round(out.tpb) if out.tpb else None)
        if tpb is None:
            tpb = DEFAULT_TPB
            out.notes.append(f"occupancy of {l['kernel']}: block size unknown, assumed {DEFAULT_TPB}")
        res = _match_resources(l["kernel"], resources)
        if res is not None:
            regs = int(res.get("registers") or DEFAULT_REGS)
            smem = int(res.get("smem_static") or 0)
        else:
            regs, smem = DEFAULT_REGS, info["smem_static_est"]
            reg_note = True
        if info["extern_shared"] or l["dynamic_smem"]:
            if l["dynamic_smem"] is None:
                smem_note = True
            else:
                smem += l["dynamic_smem"]
        try:
            o = _occupancy(cc, tpb, regs, smem)
        except ValueError as e:
            out.notes.append(str(e))
            break
        l.update({"regs": regs, "smem": smem, "occupancy": o["occupancy"], "limiter": o["limiter"]})
        occs.append(o["occupancy"])
        ws.append(l["weight"])
    if occs:
        out.occ = float(np.average(occs, weights=ws))
    if reg_note and host.launches:
        out.notes.append(f"no compiler resource report for some kernels: assumed {DEFAULT_REGS} "
                         "registers and the declared static shared memory")
    if smem_note:
        out.notes.append("dynamic shared memory size does not evaluate (pass sizes=); ignored")
    out.kernel_details = kinfo


# ---------------------------------------------------------------------------- normalisation


def _get(f: Any, name: str) -> Any:
    if f is None:
        return None
    return f.get(name) if isinstance(f, dict) else getattr(f, name, None)


def phi_hat(features: Any, naive_features: Any = None) -> np.ndarray:
    """Normalised feature vector in `FEATURE_NAMES` order, consumed by the ranker.

    - coal, occ: as is (fractions in [0, 1]); unknown coal (no global access) -> 1.0 (nothing
      uncoalesced), unknown occ -> 0.0.
    - div, xfer, atomics, syncthreads, kernels: log1p(count).
    - ai, gmem_access, ops: log1p(x) - log1p(x_naive), i.e. the log ratio to the task's naive
      variant (smoothed by +1); absolute log1p(x) when no naive features are given. Unknown -> 0.
    - tpb: log2(tpb / 256); unknown -> 0 (the common default 256).
    `features` and `naive_features` are StaticFeatures or dicts with the eleven names (so
    profiled features normalise the same way).
    """
    v = np.zeros(len(FEATURE_NAMES), dtype=np.float64)
    for i, name in enumerate(FEATURE_NAMES):
        x = _get(features, name)
        if name == "coal":
            v[i] = 1.0 if x is None else float(x)
        elif name == "occ":
            v[i] = 0.0 if x is None else float(x)
        elif name == "tpb":
            v[i] = math.log2(float(x) / 256.0) if x else 0.0
        elif name in _COUNT_FEATURES:
            v[i] = math.log1p(max(float(x or 0.0), 0.0))
        else:
            if x is None:
                v[i] = 0.0
                continue
            base = _get(naive_features, name)
            v[i] = math.log1p(max(float(x), 0.0)) - (math.log1p(max(float(base), 0.0))
                                                     if base is not None else 0.0)
    return v


# ---------------------------------------------------------------------------- CLI


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def main(argv: Iterable[str] | None = None) -> int:
    """`cudaperf features --candidate FILE.cu [--task ID] [--json]`."""
    ap = argparse.ArgumentParser(prog="cudaperf features",
                                 description="Static structural features phi(y) of a CUDA candidate.")
    ap.add_argument("--candidate", required=True, help="CUDA source file (.cu)")
    ap.add_argument("--task", help="task id or task file; phi_hat is relative to its naive variant")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument("--cc", default="9.0", help="compute capability for occupancy (default 9.0)")
    ap.add_argument("--resources", help="JSON file {kernel: {registers, smem_static, ...}} from ptxas -v")
    args = ap.parse_args(list(argv) if argv is not None else None)
    path = Path(args.candidate)
    if not path.is_file():
        print(f"error: candidate file {path} not found", file=sys.stderr)
        return 2
    source = path.read_text(errors="replace")
    resources = None
    if args.resources:
        try:
            resources = json.loads(Path(args.resources).read_text())
        except (OSError, ValueError) as e:
            print(f"error: cannot read resources {args.resources}: {e}", file=sys.stderr)
            return 2
    sizes, naive = None, None
    if args.task:
        from cudaperf.devtasks import DEV_TASKS, dev_tasks
        from cudaperf.tasks import TaskError, find_task

        try:
            task = next((t for t in dev_tasks() if t.task_id == args.task), None) \
                or find_task(args.task)
        except TaskError as e:
            known = ", ".join(d["task_id"] for d in DEV_TASKS)
            print(f"error: {e} (dev tasks: {known})", file=sys.stderr)
            return 2
        sizes = dict(task.perf_test.sizes)
        naive = static_features(task.baseline_variant.source, cc=args.cc, sizes=sizes)
    try:
        feats = static_features(source, resources=resources, cc=args.cc, sizes=sizes)
    except ValueError as e:  # unknown compute capability
        print(f"error: {e}", file=sys.stderr)
        return 2
    hat = phi_hat(feats, naive)
    if args.json:
        d = feats.as_dict()
        d["phi_hat"] = dict(zip(FEATURE_NAMES, hat.tolist()))
        print(json.dumps(d, indent=2, default=str))
        return 0
    print(f"candidate: {path}   parse_ok: {feats.parse_ok}   cc: {args.cc}")
    print(f"{'feature':<12} {'value':>10} {'phi_hat':>9}" + (f" {'naive':>10}" if naive else ""))
    for i, name in enumerate(FEATURE_NAMES):
        row = f"{name:<12} {_fmt(getattr(feats, name)):>10} {hat[i]:>9.3f}"
        if naive:
            row += f" {_fmt(getattr(naive, name)):>10}"
        print(row)
    for name, k in feats.kernel_details.items():
        print(f"kernel {name}: launches={_fmt(k['launch_weight'])} coal={_fmt(k['coal'])} "
              f"gmem={_fmt(k['gmem_access'])} ops={_fmt(k['ops'])} div={_fmt(k['div'])}")
    for n in feats.notes:
        print(f"note: {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
