"""Run the artifact's notebooks in order with papermill (the logic behind ./run_all.sh).

Guarantees:
- discovery: `notebooks/NN_*.ipynb`, sorted by the integer NN; two notebooks with one number are
  an error (their order would be undefined);
- parameters are validated for every selected notebook BEFORE anything executes: each `-p name
  value` must be declared in the `parameters` cell of at least one selected notebook (it is
  passed only to the notebooks that declare it) and its value must parse as the declared type;
  `profile` is passed to every notebook and every notebook must declare it;
- sources are never written: executed copies go to runs/<profile>/NN_name.ipynb;
- one progress line per notebook with its wall time; the run stops at the first failing notebook
  and names it and the failing cell (index in the source notebook, first source line, exception);
- the closing summary lists the files under figures/ and data/ created or modified during the run
  (by mtime), and runs/<profile>/summary.json records all of it; the exit status is 0 only when
  every selected notebook ran.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from cudaperf import envinfo

NB_RE = re.compile(r"^(\d+)_[^/]*\.ipynb$")
WATCHED = ("figures", "data")


class RunAllError(ValueError):
    """Bad command line, bad notebook set or bad parameter: raised before anything runs."""


@dataclass
class NotebookRun:
    number: int
    name: str
    source: str
    output: str
    status: str = "pending"  # pending | ok | failed | skipped
    seconds: float | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None


def discover(nb_dir: str | Path) -> list[tuple[int, Path]]:
    """(NN, path) of every notebooks/NN_*.ipynb, in numeric order."""
    found: dict[int, Path] = {}
    for p in Path(nb_dir).glob("*.ipynb"):
        m = NB_RE.match(p.name)
        if not m:
            continue
        nn = int(m.group(1))
        if nn in found:
            raise RunAllError(f"two notebooks share number {nn:02d}: {found[nn].name}, {p.name}")
        found[nn] = p
    return sorted(found.items())


def select(nbs: list[tuple[int, Path]], only: Sequence[int] = (), start: int | None = None
           ) -> list[tuple[int, Path]]:
    """Apply --only (a set of numbers) and --from (this number onwards)."""
    known = {n for n, _ in nbs}
    for n in list(only) + ([start] if start is not None else []):
        if n not in known:
            raise RunAllError(f"no notebook numbered {n:02d}; have {sorted(known)}")
    out = [(n, p) for n, p in nbs if (not only or n in only) and (start is None or n >= start)]
    if not out:
        raise RunAllError("the selection is empty")
    return out


def declared_parameters(path: str | Path) -> dict[str, dict[str, Any]]:
    """papermill's view of a notebook's parameters cell: {name: {inferred_type_name, default, help}}."""
    import papermill

    return dict(papermill.inspect_notebook(str(path)))


def parse_value(name: str, raw: str, type_name: str | None) -> Any:
    """Turn a command-line string into the declared type (papermill would guess instead)."""
    t = (type_name or "").replace("Optional[", "").rstrip("]").strip()
    if t.endswith("| None"):
        t = t[: -len("| None")].strip()
    if raw.lower() == "none" and ("None" in (type_name or "")):
        return None
    try:
        if t == "int":
            return int(raw)
        if t == "float":
            return float(raw)
        if t == "bool":
            if raw.lower() in ("true", "1", "yes"):
                return True
            if raw.lower() in ("false", "0", "no"):
                return False
            raise ValueError(raw)
        if t in ("str", ""):
            return raw
        if t in ("list", "dict", "tuple") or t.startswith(("list[", "dict[", "tuple[")):
            return json.loads(raw)
    except (ValueError, json.JSONDecodeError):
        raise RunAllError(f"parameter {name!r}: {raw!r} is not a valid {t}") from None
    return raw


def plan_parameters(selected: list[tuple[int, Path]], profile: str,
                    overrides: Sequence[tuple[str, str]]) -> dict[int, dict[str, Any]]:
    """Per notebook, the parameters to inject; raises RunAllError for unknown names or values."""
    decl = {n: declared_parameters(p) for n, p in selected}
    missing_profile = [p.name for n, p in selected if "profile" not in decl[n]]
    if missing_profile:
        raise RunAllError(f"notebook(s) {missing_profile} declare no 'profile' parameter")
    everything = sorted({k for d in decl.values() for k in d})
    plan = {n: {"profile": profile} for n, _ in selected}
    for name, raw in overrides:
        if name == "profile":
            raise RunAllError("set the profile with --profile, not -p profile")
        takers = [n for n, _ in selected if name in decl[n]]
        if not takers:
            raise RunAllError(f"unknown parameter {name!r}: no selected notebook declares it; "
                              f"declared parameters are {everything}")
        for n in takers:
            plan[n][name] = parse_value(name, raw, decl[n][name].get("inferred_type_name"))
    return plan


def _snapshot(root: Path) -> dict[str, float]:
    snap = {}
    for d in WATCHED:
        base = root / d
        if base.is_dir():
            for f in base.rglob("*"):
                if f.is_file():
                    snap[str(f.relative_to(root))] = f.stat().st_mtime
    return snap


def changed_files(before: dict[str, float], after: dict[str, float]) -> dict[str, list[str]]:
    created = sorted(set(after) - set(before))
    modified = sorted(k for k in set(after) & set(before) if after[k] != before[k])
    return {"created": created, "modified": modified}


def _failing_cell(src: Path, err: Exception) -> dict[str, Any]:
    """Locate a PapermillExecutionError's cell in the SOURCE notebook (papermill's own index
    counts its injected cell)."""
    import nbformat

    info: dict[str, Any] = {"ename": getattr(err, "ename", type(err).__name__),
                            "evalue": getattr(err, "evalue", str(err)),
                            "exec_count": getattr(err, "exec_count", None),
                            "cell_index": None, "first_line": None}
    source = getattr(err, "source", None)
    if source is None:
        return info
    nb = nbformat.read(str(src), as_version=4)
    hits = [i for i, c in enumerate(nb.cells) if c.source == source]
    if hits:
        info["cell_index"] = hits[0]
    else:
        idx = getattr(err, "cell_index", None)
        info["cell_index"] = None if idx is None else max(idx - 1, 0)
    lines = [ln for ln in source.splitlines() if ln.strip()]
    info["first_line"] = lines[0] if lines else ""
    return info


def execute(src: Path, out: Path, params: dict[str, Any], root: Path,
            kernel: str = "python3", timeout: int | None = None) -> None:
    import papermill

    out.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(src), str(out), parameters=params, kernel_name=kernel,
                               cwd=str(root), progress_bar=False, log_output=False,
                               execution_timeout=timeout)


def run(root: str | Path, profile: str, only: Sequence[int] = (), start: int | None = None,
        overrides: Sequence[tuple[str, str]] = (), out_dir: str | Path | None = None,
        kernel: str = "python3", cell_timeout: int | None = None, log=print) -> dict[str, Any]:
    """Run the selection; returns the summary (also written to <out_dir>/summary.json)."""
    from cudaperf.config import PROFILE_NAMES

    root = Path(root).resolve()
    if profile not in PROFILE_NAMES:
        raise RunAllError(f"unknown profile {profile!r}; choose one of {list(PROFILE_NAMES)}")
    selected = select(discover(root / "notebooks"), only, start)
    plan = plan_parameters(selected, profile, overrides)
    out_dir = Path(out_dir) if out_dir else root / "runs" / profile
    # The kernel spec runs `python`: make that this interpreter even when the venv is not active.
    bindir = os.path.dirname(sys.executable)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bindir:
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    os.environ.setdefault("MPLBACKEND", "Agg")

    runs = [NotebookRun(n, p.stem, str(p.relative_to(root)), str(out_dir / p.name),
                        parameters=plan[n]) for n, p in selected]
    started = _dt.datetime.now(_dt.timezone.utc)
    before = _snapshot(root)
    t_all = time.perf_counter()
    log(f"run_all: profile={profile}, {len(runs)} notebook(s), executed copies in {out_dir}")
    for i, (r, (_, src)) in enumerate(zip(runs, selected), 1):
        extra = {k: v for k, v in r.parameters.items() if k != "profile"}
        log(f"[{i}/{len(runs)}] {src.name}" + (f" {extra}" if extra else "") + " ...")
        t0 = time.perf_counter()
        try:
            execute(src, Path(r.output), r.parameters, root, kernel, cell_timeout)
            r.status = "ok"
        except Exception as err:  # noqa: BLE001 - any failure stops the run and is reported
            r.status = "failed"
            r.error = _failing_cell(src, err)
        r.seconds = round(time.perf_counter() - t0, 2)
        if r.status == "ok":
            log(f"    ok in {r.seconds:.1f} s")
        else:
            e = r.error
            where = f"cell {e['cell_index']}" if e["cell_index"] is not None else "before any cell"
            log(f"    FAILED after {r.seconds:.1f} s: {src.name}, {where}"
                + (f" ({e['first_line']!r})" if e["first_line"] else "")
                + f": {e['ename']}: {e['evalue']}")
            log(f"    executed copy with the traceback: {r.output}")
            break
    for r in runs:
        if r.status == "pending":
            r.status = "skipped"
    files = changed_files(before, _snapshot(root))
    ok = all(r.status == "ok" for r in runs)
    summary = {
        "profile": profile,
        "ok": ok,
        "started_utc": started.isoformat(timespec="seconds"),
        "seconds": round(time.perf_counter() - t_all, 2),
        "machine": envinfo.machine_tag(),
        "git": envinfo.git_state(root),
        "notebooks": [asdict(r) for r in runs],
        "files": files,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    _print_summary(summary, out_dir, log)
    return summary


def _print_summary(s: dict[str, Any], out_dir: Path, log) -> None:
    done = sum(r["status"] == "ok" for r in s["notebooks"])
    log(f"\nrun_all: {'OK' if s['ok'] else 'FAILED'} - {done}/{len(s['notebooks'])} notebooks "
        f"in {s['seconds']:.1f} s (profile {s['profile']})")
    for kind in ("created", "modified"):
        items = s["files"][kind]
        log(f"  {kind} ({len(items)}):" + ("" if items else " none"))
        for f in items:
            log(f"    {f}")
    log(f"  summary: {out_dir / 'summary.json'}")


def _number(s: str) -> int:
    if not s.isdigit():
        raise argparse.ArgumentTypeError(f"notebook numbers are digits, got {s!r}")
    return int(s)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="run_all.sh", description="Run notebooks/NN_*.ipynb in "
                                 "order with papermill; executed copies go to runs/<profile>/.")
    ap.add_argument("--profile", default=None, help="smoke | mini | paper (default: mini where "
                    "a GPU is visible, else smoke)")
    ap.add_argument("--only", type=_number, action="append", default=[], metavar="NN",
                    help="run only notebook NN (repeatable)")
    ap.add_argument("--from", dest="start", type=_number, default=None, metavar="NN",
                    help="run notebook NN and all after it")
    ap.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                    metavar=("NAME", "VALUE"), help="notebook parameter (repeatable)")
    ap.add_argument("--out-dir", default=None, help="where executed notebooks go "
                    "(default runs/<profile>)")
    ap.add_argument("--kernel", default="python3", help="Jupyter kernel name")
    ap.add_argument("--cell-timeout", type=int, default=None, help="seconds per cell")
    ap.add_argument("--list", action="store_true", help="list notebooks and their parameters")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root = envinfo.repo_root()
    try:
        if args.list:
            for n, p in discover(root / "notebooks"):
                params = declared_parameters(p)
                print(f"{n:02d} {p.name}: " + ", ".join(
                    f"{k}: {v.get('inferred_type_name')} = {v.get('default')}"
                    for k, v in params.items()))
            return 0
        if args.profile is None:
            from cudaperf.config import default_profile

            args.profile = default_profile()
        summary = run(root, args.profile, args.only, args.start,
                      [tuple(p) for p in args.parameter], args.out_dir, args.kernel,
                      args.cell_timeout, log=_log)
    except RunAllError as exc:
        print(f"run_all: error: {exc}", file=sys.stderr)
        return 2
    return 0 if summary["ok"] else 1


def _log(msg: str) -> None:
    print(msg, flush=True)  # progress must show while a long notebook runs


if __name__ == "__main__":
    raise SystemExit(main())
