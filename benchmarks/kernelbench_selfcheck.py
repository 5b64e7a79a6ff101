"""KernelBench self-check of the harness (issue 5's evidence), on a GPU.

For every converted KernelBench problem of the chosen levels it submits two ModelNew candidates
through `Harness.evaluate_many` (the sandboxed torch worker):

  * ``reference``: the problem's own Model renamed ModelNew -- must be judged correct with a
    speedup over PyTorch eager of about 1;
  * ``zeros``: a ModelNew returning zeros of the right shapes -- must fail on every problem,
    including those whose outputs are near zero (where a pure tolerance check is fooled).

One JSON row per (problem, candidate) is appended to --out (rows already there are skipped,
so a run resumes; so are those in the --skip-done files, e.g. another GPU's); the summary printed
at the end covers --out and the --skip-done files together.

    python benchmarks/kernelbench_selfcheck.py --source ../shared/data/kernelbench/kernelbench_l1_l3.jsonl \\
        --levels 1 --out data/bench/kernelbench_selfcheck_<gpu>.jsonl --max-seconds 500
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaperf import envinfo, kernelbench  # noqa: E402
from cudaperf.config import get_profile  # noqa: E402

CANDIDATES = {"reference": kernelbench.reference_as_modelnew, "zeros": kernelbench.zeros_modelnew}


def main(argv: list[str] | None = None) -> int:
    # --max-seconds counts from here, as the caller's outer timeout does: loading and converting
    # the problems and starting the harness come out of it too.
    start = time.monotonic()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True, help="KernelBench JSONL, checkout or hub dataset name")
    ap.add_argument("--levels", type=int, nargs="+", default=[1])
    ap.add_argument("--out", required=True)
    ap.add_argument("--skip-done", nargs="*", default=[],
                    help="more result files (e.g. another GPU's): their (problem, candidate) pairs are not run again")
    ap.add_argument("--limit", type=int, default=0, help="at most this many problems (0 = all)")
    ap.add_argument("--chunk", type=int, default=4, help="problems per prepare/evaluate round (a progress line each)")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="start no chunk that may not finish within this many seconds of the command's start")
    ap.add_argument("--workers-per-gpu", type=int, default=4)
    ap.add_argument("--retry-harness-failures", action="store_true",
                    help="first drop --out's rows where the problem's own Model crashed or met an internal error "
                         "(kernelbench.harness_failure: a fault of the harness, not of the candidate), so they run again")
    a = ap.parse_args(argv)
    # KernelBench's float64 references of big problems are computed on the GPU during prepare.
    # Set here, not at import: importing this module (tests do) must not change the process.
    os.environ.setdefault("CUDAPERF_TORCH_REF_DEVICE", "cuda")
    if not envinfo.gpu_available():
        print("no GPU visible: ModelNew candidates are built and run only on a GPU", file=sys.stderr)
        return 2
    from cudaperf.harness import Harness

    problems = kernelbench.load_problems(a.source, levels=tuple(a.levels))
    tasks, report = kernelbench.convert_all(problems)
    print(f"{report.converted} of {report.total} problems converted; not convertible: {report.reasons}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if a.retry_harness_failures:
        gone = kernelbench.drop_selfcheck_rows(out, kernelbench.harness_failure)
        print(f"retrying {len(gone)} harness failures: {[r['task_id'] for r in gone][:10]}")
    # the output file itself resumes the run; other files (another GPU's rows) are skipped too
    others = [p for p in a.skip_done if Path(p).resolve() != out.resolve()]
    # With the retry, a harness failure in another file (e.g. the committed copy of --out) is not done either;
    # the summary reads --out first, so the new row is the one counted.
    done = {(r["task_id"], r["candidate"]) for r in kernelbench.selfcheck_rows([out, *others])
            if not (a.retry_harness_failures and kernelbench.harness_failure(r))}
    todo = [t for t in tasks if any((t.task_id, c) not in done for c in CANDIDATES)]
    if a.limit:
        todo = todo[: a.limit]
    cfg = get_profile("mini", **{"harness.modelnew_require_kernel": False}).harness
    h = Harness(cfg, workers_per_gpu=a.workers_per_gpu, use_store=False)
    slowest = 0.0
    try:
        for i in range(0, len(todo), a.chunk):
            left = None if a.max_seconds is None else a.max_seconds - (time.monotonic() - start)
            if left is not None and slowest > left:
                print(f"time budget: stopping with {len(todo) - i} problems left (run again to resume)")
                break
            t0 = time.monotonic()
            chunk = todo[i:i + a.chunk]
            errors = h.prepare(chunk)
            # Stage times per chunk: session 12's run spent 230 s inside its first chunk without a
            # row, so the next run must show whether prepare (references, baselines) or the
            # candidates take the time.
            print(f"chunk {i // a.chunk}: prepared {len(chunk)} problems in {time.monotonic() - t0:.1f} s "
                  f"({len(errors)} failed: {sorted(errors)[:3]})", flush=True)
            items, keys = [], []
            for t in chunk:
                for name, make in CANDIDATES.items():
                    if (t.task_id, name) not in done:
                        items.append((t, make(t.reference)))
                        keys.append((t, name))
            results = h.evaluate_many(items)
            with out.open("a") as fh:
                for (t, name), r in zip(keys, results):
                    fh.write(json.dumps({
                        "task_id": t.task_id, "level": t.meta["level"], "candidate": name, "status": r.status,
                        "speedup": r.speedup, "runtime_ms": r.runtime_ms, "cv": r.cv, "eager_ms": r.eager_ms,
                        "baseline_ms": r.baseline_ms, "flags": r.flags, "message": r.message[:300],
                        "prepare_error": errors.get(t.task_id), "gpu": r.gpu,
                        "failure": (r.failures[0] if r.failures else None),
                        # seconds per stage (build, checks, timing, the eager baseline's worker):
                        # session 13 measured ~100 s per candidate without saying where
                        "timings": r.timings}, default=str) + "\n")
            slowest = max(slowest, time.monotonic() - t0)
            print(f"{i + len(chunk)}/{len(todo)} problems, {time.monotonic() - start:.0f} s", flush=True)
    finally:
        h.close()
    rows = kernelbench.selfcheck_rows([out, *others])
    print(json.dumps(kernelbench.selfcheck_summary(rows), indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
