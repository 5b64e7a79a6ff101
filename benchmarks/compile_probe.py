"""Compile-only probe of a saved policy: does it write code that compiles, and names the entry point?

Runs anywhere nvcc is (no GPU needed: nothing is executed). For each temperature it samples `--n`
completions for each of `--tasks` family-stratified tasks of `--split` (cudaperf.policy.evaluation_tasks),
extracts the CUDA translation unit, compiles it with nvcc (the harness's flags) and prints one JSON
line: compile rate, `policy.signature_match` counts (did it define the task's `extern "C"` entry
with the task's parameter names?) and the classes of nvcc's first error (`policy.compile_error_class`).

Why: GRPO learns only from reward differences inside a group, and R_ver of a sample that does not
compile is the same floor for all (R_str is gated on compiling), so a start policy whose rollouts
never compile gives GRPO nothing to learn from. This measures that before device time is spent
(session 14: the SFT-M start compiled 1 of 1,152 GRPO rollouts at temperature 1.0).

    python benchmarks/compile_probe.py --model runs/models/sft-M --split seen --tasks 16 --n 4 --temps 0.2 0.6
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def probe(model, tok, tasks, temperature: float, n: int, max_new_tokens: int, batch_size: int,
          seed: int = 0, jobs: int = 0) -> dict:
    """One temperature's figures (see the module docstring)."""
    from cudaperf import policy

    codes, results, (t_sample, t_compile) = policy.sample_and_compile(
        model, tok, tasks, n, temperature, max_new_tokens, batch_size, seed, jobs)
    flat = [(t, c) for t, row in zip(tasks, codes) for c in row]
    res = [r for row in results for r in row]
    ok = sum(r.ok for r in res)
    return {"temperature": temperature, "samples": len(flat), "compiled": ok,
            "compile_rate": ok / len(flat) if flat else None,
            "signature": dict(collections.Counter(policy.signature_match(c, t) for t, c in flat)),
            "first_error": dict(collections.Counter(policy.compile_error_class(r.log)[0] for r in res if not r.ok)),
            "sample_s": round(t_sample, 1), "compile_s": round(t_compile, 1)}


def main(argv=None) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cudaperf import policy
    from cudaperf.families import verified_tasks

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="a saved policy folder (weights + tokenizer)")
    ap.add_argument("--split", default="seen", choices=sorted(policy.EVAL_SPLIT_MEANING))
    ap.add_argument("--tasks", type=int, default=16)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--temps", type=float, nargs="+", default=[0.2, 0.6, 1.0])
    ap.add_argument("--max-new-tokens", type=int, default=1024)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if not policy.has_weights(a.model):
        sys.exit(f"{a.model}: no saved policy weights there")
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.bfloat16 if dev == "cuda" else torch.float32).to(dev)
    tasks = policy.evaluation_tasks(verified_tasks(), a.split, a.tasks, a.seed)
    print(json.dumps({"model": a.model, "split": a.split, "split_meaning": policy.EVAL_SPLIT_MEANING[a.split],
                      "tasks": len(tasks), "n": a.n, "device": dev, "max_new_tokens": a.max_new_tokens}), flush=True)
    for temp in a.temps:
        print(json.dumps(probe(model, tok, tasks, temp, a.n, a.max_new_tokens, a.batch_size, a.seed)), flush=True)


if __name__ == "__main__":
    main()
