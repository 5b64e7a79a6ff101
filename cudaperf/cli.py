"""`cudaperf` command line: evaluate candidates, browse tasks, extract features.

    cudaperf eval --task ID_OR_FILE --candidate FILE.cu [--json] [--profile P]
    cudaperf tasks list [--family F] [--split S] [--json]
    cudaperf tasks show ID [--json]
    cudaperf features --candidate FILE.cu [--task ID] [--json]
    cudaperf ranker train|evaluate [--json] [...]

Errors in the user's input (missing files, unknown task ids, malformed task files) print one
clear line to stderr and exit with status 2; evaluation outcomes (a candidate that fails) are
results, printed, with exit status 0.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from cudaperf.tasks import Task, TaskError, load_tasks

DEFAULT_TASK_FILES = ("data/tasks/c2cuda.jsonl.gz",)


def all_tasks(extra: str | None = None) -> list[Task]:
    """Dev tasks, the committed dataset (if present) and an optional extra task file."""
    from cudaperf.devtasks import dev_tasks

    tasks = dev_tasks()
    for f in ([extra] if extra else []) + list(DEFAULT_TASK_FILES):
        if f and Path(f).exists():
            tasks += load_tasks(f)
    return tasks


def resolve_task(ref: str, tasks_file: str | None = None) -> Task:
    p = Path(ref)
    if p.is_file():
        found = load_tasks(p)
        if len(found) != 1:
            raise TaskError(f"{p} holds {len(found)} tasks; pass --tasks-file {p} --task ID instead")
        return found[0]
    for t in all_tasks(tasks_file):
        if t.task_id == ref:
            return t
    raise TaskError(f"no task {ref!r}; try `cudaperf tasks list`")


def _cmd_eval(a: argparse.Namespace) -> int:
    from cudaperf.config import get_profile
    from cudaperf.harness import Harness

    task = resolve_task(a.task, a.tasks_file)
    src_path = Path(a.candidate)
    if not src_path.is_file():
        raise FileNotFoundError(f"no candidate file at {src_path}")
    prof = get_profile(a.profile)
    h = Harness(prof.harness, use_store=not a.no_store)
    try:
        res = h.evaluate(task, src_path.read_text(errors="replace"))
    finally:
        h.close()
    if a.json:
        print(res.to_json(indent=2))
        return 0
    print(f"task        {res.task_id}")
    print(f"status      {res.status}: {res.message}")
    print(f"compiled    {res.compiled}")
    if res.resources:
        for k, v in res.resources.items():
            print(f"  kernel    {k}: {v}")
    if not res.compiled:
        print(res.compile_log[-3000:])
    if res.status == "compiled":
        print("correctness not run (no GPU)\ntiming      not run (no GPU)")
    else:
        print(f"pass rate   {res.pass_rate}")
        for f in res.failures[:5]:
            print(f"  failure   {json.dumps(f)[:300]}")
        if res.runtime_ms is not None:
            print(f"runtime     {res.runtime_ms:.4f} ms (cv {res.cv:.3%}); naive {res.baseline_ms:.4f} ms; "
                  f"speedup {res.speedup:.2f}x")
    if res.flags:
        print(f"flags       {', '.join(res.flags)}")
    print(f"gpu         {res.gpu or 'none'}")
    return 0


def _cmd_tasks(a: argparse.Namespace) -> int:
    tasks = all_tasks(a.tasks_file)
    if a.action == "show":
        if not a.id:
            raise TaskError("tasks show needs a task id")
        t = resolve_task(a.id, a.tasks_file)
        if a.json:
            print(t.to_json())
            return 0
        print(f"{t.task_id}  [{t.track}, family {t.family}, split {t.split}]")
        print("signature:")
        for p in t.signature:
            print(f"  {p.role:6s} {p.ctype:16s} {p.name}" + (f"  [{p.shape}]" if p.shape else "")
                  + (f"  init={p.init}" if p.init else ""))
        print("tests:")
        for x in t.tests:
            print(f"  {x.name:10s} {x.sizes}{'  (perf)' if x.perf else ''}")
        print("variants: " + ", ".join(v.name for v in t.variants))
        print("reference:\n" + t.reference)
        return 0
    if a.family:
        tasks = [t for t in tasks if t.family == a.family]
    if a.split:
        tasks = [t for t in tasks if t.split == a.split]
    if a.json:
        print(json.dumps([{"task_id": t.task_id, "family": t.family, "split": t.split,
                           "variants": [v.name for v in t.variants]} for t in tasks]))
        return 0
    for t in tasks:
        print(f"{t.task_id:48s} {t.family:24s} {t.split:5s} {len(t.variants)} variants")
    print(f"{len(tasks)} tasks", file=sys.stderr)
    return 0


# Subcommands whose argument parsing lives in their own module (`<module>.main(argv) -> int`).
_DELEGATED = {"features": "cudaperf.features", "ranker": "cudaperf.ranker"}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in _DELEGATED:
        import importlib

        try:
            return importlib.import_module(_DELEGATED[argv[0]]).main(argv[1:])
        except (FileNotFoundError, TaskError) as e:
            print(f"cudaperf: error: {e}", file=sys.stderr)
            return 2
    ap = argparse.ArgumentParser(prog="cudaperf", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("eval", help="evaluate one candidate .cu for a task")
    e.add_argument("--task", required=True, help="task id or a file holding one task")
    e.add_argument("--candidate", required=True, help="CUDA translation unit")
    e.add_argument("--tasks-file", help="extra task file (JSONL / parquet)")
    e.add_argument("--profile", default="smoke", choices=("smoke", "mini", "paper"))
    e.add_argument("--no-store", action="store_true", help="ignore the result store")
    e.add_argument("--json", action="store_true")
    t = sub.add_parser("tasks", help="list or show tasks")
    t.add_argument("action", choices=("list", "show"))
    t.add_argument("id", nargs="?")
    t.add_argument("--family")
    t.add_argument("--split", choices=("train", "val", "test"))
    t.add_argument("--tasks-file")
    t.add_argument("--json", action="store_true")
    sub.add_parser("features", help="structural features of a candidate (see --help)")
    sub.add_parser("ranker", help="train or evaluate the pairwise ranker (see --help)")
    a = ap.parse_args(argv)
    try:
        return {"eval": _cmd_eval, "tasks": _cmd_tasks}[a.cmd](a)
    except (FileNotFoundError, TaskError) as ex:
        print(f"cudaperf: error: {ex}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
