"""BabelTower import report (issue 4): how many unit-test cases convert, and how many pass with
their own reference kernel.

Three numbers per run, written with the reasons to one JSON file (counts, case indices, task ids
and reasons only: the BabelTower data itself is never copied):

  1. converted: cases `cudaperf.babeltower.load_babeltower` turns into tasks of our format;
  2. reference agrees: for every given-input test of a converted task, the serial C reference
     (run in the sandbox) reproduces the outputs the case printed (CPU, runs anywhere);
  3. kernel passes (GPU only): the case's own CUDA kernel, as the task's ``naive`` variant, goes
     through the full harness (every test, the generated large one included) and is correct.
     Without a GPU this part is reported as not run, never guessed.

    python benchmarks/babeltower_eval.py --data ../shared/data/babeltower/unit_cases_sample.jsonl \\
        --out data/bench/
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaperf import babeltower as B, envinfo  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/data/babeltower/unit_cases_sample.jsonl"


def reference_agreement(tasks: list, cache_dir: str) -> list[dict]:
    """Per converted task: the fixed-input tests whose C reference output differs from the print."""
    rows = []
    for t in tasks:
        fixed = [x for x in t.tests if x.name in t.meta.get("expected_outputs", {})]
        bad: dict[str, list[str]] = {}
        for test in fixed:
            try:
                out = B.reference_outputs_fixed(t, test, cache_dir=cache_dir)
                miss = B.check_expected(t, test, out)
            except Exception as e:  # a reference that cannot run is a finding, not a crash
                miss = [f"reference failed: {type(e).__name__}: {str(e)[:200]}"]
            if miss:
                bad[test.name] = miss[:3]
        rows.append({"task_id": t.task_id, "case": t.meta.get("case_index"), "fixed_tests": len(fixed),
                     "agrees": not bad, "mismatches": bad})
    return rows


def kernel_results(tasks: list) -> list[dict]:
    """The case's own kernel through the harness (GPU)."""
    from cudaperf.config import get_profile
    from cudaperf.harness import Harness

    h = Harness(get_profile("mini").harness)
    try:
        res = h.evaluate_many([(t, t.variants[0].source) for t in tasks], progress=True)
    finally:
        h.close()
    return [{"task_id": t.task_id, "status": r.status, "correct": bool(r.correct), "runtime_ms": r.runtime_ms,
             "message": (r.message or "")[:300],
             "failures": [{k: str(v)[:300] for k, v in f.items()} for f in (r.failures or [])[:3]]}
            for t, r in zip(tasks, res)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="BabelTower unit-case JSONL")
    ap.add_argument("--out", default="data/bench", help="directory of babeltower_<machine>.json")
    ap.add_argument("--no-gpu", action="store_true", help="skip the kernel pass even on a GPU machine")
    a = ap.parse_args(argv)
    if not Path(a.data).is_file():
        print(f"babeltower_eval: no BabelTower file at {a.data} (pass --data)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    rep = B.ConversionReport()
    tasks = B.load_babeltower(a.data, report=rep)
    with tempfile.TemporaryDirectory(prefix="bt-ref-") as cache:
        ref = reference_agreement(tasks, cache)
    gpu = envinfo.gpu_available() and not a.no_gpu
    machine = envinfo.gpu_slug(envinfo.gpus()[0]["name"]) if gpu else "cpu"
    out = {"data": Path(a.data).name, "cases": rep.cases, "converted": len(rep.converted),
           "rejected": rep.rejected, "dropped_tests": rep.dropped_cases,
           "reference_agrees": sum(r["agrees"] for r in ref), "reference": ref,
           "command": envinfo.invocation(),
           "manifest": envinfo.machine_manifest(with_torch=False)}
    print(f"{rep.cases} cases: {len(rep.converted)} converted, {len(rep.rejected)} rejected; "
          f"C reference reproduces the printed outputs for {out['reference_agrees']} of {len(ref)}")
    if gpu:
        kr = kernel_results(tasks)
        out["kernel"] = kr
        out["kernel_correct"] = sum(r["correct"] for r in kr)
        print(f"own CUDA kernel correct through the harness: {out['kernel_correct']} of {len(kr)}")
        for r in kr:
            if not r["correct"]:
                print(f"  {r['task_id']}: {r['status']}: {r['message'][:160]}")
    else:
        out["kernel"] = None
        print("kernel pass: not run (no GPU here); correctness of the cases' kernels is unknown")
    out["seconds"] = round(time.perf_counter() - t0, 1)
    d = Path(a.out)
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"babeltower_{machine}.json"
    f.write_text(json.dumps(out, indent=1, default=str))
    print(f"-> {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
