"""Why the evaluated policy samples failed to compile: nvcc's first error, classified, and
whether they named the entry point and parameters as the prompt did.

Evaluations made before `sft_gpu.py eval` recorded `error_class` / `first_error` kept only
"nvcc failed". Compilation needs no GPU and is deterministic for a given nvcc, so this script
compiles those samples again on this machine (same arch and flags as the harness) and adds the
two columns to each eval*.parquet under --models, with `error_source` naming the nvcc used.
Evaluations made before `signature` existed get it too (`policy.signature_match`, text only),
and their summary JSON its two rates.

    python benchmarks/sft_compile_errors.py --models data/models
    python benchmarks/sft_compile_errors.py --models data/grpo --pattern "*/eval*_samples.parquet"
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> None:
    import pandas as pd
    from tqdm import tqdm

    from cudaperf import policy
    from cudaperf.compile import compile_candidate, toolchain_versions

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="data/models")
    ap.add_argument("--pattern", default="*/eval*.parquet",
                    help="per-sample files under --models (GRPO runs: '*/eval*_samples.parquet')")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--tasks", default=str(ROOT / "data" / "tasks" / "c2cuda.jsonl.gz"))
    a = ap.parse_args(argv)
    from cudaperf.tasks import load_tasks

    tasks = {t.task_id: t for t in load_tasks(a.tasks)}
    nvcc = next((ln.strip() for ln in toolchain_versions()["nvcc"].splitlines() if "release" in ln), "nvcc")
    for path in sorted(Path(a.models).glob(a.pattern)):
        df = pd.read_parquet(path)
        if "signature" not in df:
            _add_signature(df, path, tasks)
        if "first_error" in df and df.loc[df.status == "compile_error", "first_error"].ne("").all():
            # compiled before: only the classes are brought up to date with ERROR_CLASSES
            df["error_class"] = [policy.error_class_of(m) if st == "compile_error" else ""
                                 for m, st in zip(df["first_error"], df["status"])]
            df.to_parquet(path, index=False)
            print(path, df.loc[df.status == "compile_error", "error_class"].value_counts().to_dict())
            continue
        todo = df.index[df.status == "compile_error"].tolist()
        with tempfile.TemporaryDirectory() as cache, ThreadPoolExecutor(a.jobs) as pool:
            logs = list(tqdm(pool.map(lambda i: compile_candidate(df.at[i, "code"], arch=a.arch,
                                                                  cache_dir=cache).log, todo),
                             total=len(todo), desc=path.parent.name + "/" + path.name))
        df["error_class"], df["first_error"], df["error_source"] = "", "", ""
        for i, log in zip(todo, logs):
            cls, first = policy.compile_error_class(log)
            df.at[i, "error_class"], df.at[i, "first_error"] = cls, first[:300]
            df.at[i, "error_source"] = f"recompiled off the GPU machine: {nvcc}"
        df.to_parquet(path, index=False)
        print(path, df.loc[df.status == "compile_error", "error_class"].value_counts().to_dict())


def _add_signature(df, path: Path, tasks: dict) -> None:
    """The `signature` column and the summary's signature_exact_rate / entry_name_rate."""
    import json

    from cudaperf import policy

    df["signature"] = [policy.signature_match(c, tasks[t]) for c, t in zip(df["code"], df["task_id"])]
    summary = path.with_name(path.stem + "_summary.json")
    if summary.exists():
        d = json.loads(summary.read_text())
        d["signature_exact_rate"] = float((df["signature"] == "exact").mean())
        d["entry_name_rate"] = float(df["signature"].isin(["exact", "entry"]).mean())
        summary.write_text(json.dumps(d, indent=1))
    df.to_parquet(path, index=False)
    print(path, df["signature"].value_counts().to_dict())


if __name__ == "__main__":
    main()
