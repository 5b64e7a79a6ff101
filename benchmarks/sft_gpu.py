"""SFT warm start of the mini policies (S / M / L) on the H200, and their base-policy evaluation.

Each stage fits in one 10-minute device call:

    python benchmarks/sft_gpu.py train --size L --budget-s 400      # -> data/models/sft-L/
    python benchmarks/sft_gpu.py eval  --size L --eval-tasks 0      # -> data/models/sft-L/eval.parquet
    python benchmarks/sft_gpu.py all   --size S --budget-s 240 --eval-tasks 120

`train` builds the dataset, loads the committed tokenizer (data/tokenizer; trains and saves it if
missing), builds SFT records from the TRAIN split (every variant + refinement transcripts; measured
variants from data/measurements/ or `--measurements` supply the attempts' speedups), drops records longer than
`max_length` (counted in train_log.json, never truncated), trains with TRL's SFTTrainer until
the epochs or the wall-clock budget run out, and saves fp16 safetensors in shards <= 16 MB plus
the tokenizer and train_log.json (loss curve, steps, seconds, parameters, dropped records).

`eval` samples `n` completions for each TEST-split task (held-out families; `--eval-tasks K`
takes a family-stratified slice of K tasks, 0 = all), extracts the code and runs every sample
through the harness (compile -> check -> time against the naive variant). Per-sample records go
to eval.parquet, the summary (compile rate, pass@1, pass@5, geomean speedup, fast_p) to
eval_summary.json. Nothing is written for a stage that did not finish. All 497 test tasks x 5
samples do not fit one call (sampling ~4 min for L, ~2,500 compiles ~4 min, references): split
them with `--shard 0/3`, `--shard 1/3`, `--shard 2/3`; eval.parquet is assembled when all shards
exist, and eval_summary.json always states how many shards it covers.

GPU machine needs (carry wheels in .whl/, installed to /tmp/site as benchmarks/gpu_harness_evidence.sh
does): trl, datasets (+ dill, multiprocess, xxhash, pyarrow if absent) for `train`;
tree-sitter + tree-sitter-cuda for the harness's features. `eval` needs no trl.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _log(msg: str) -> None:
    print(f"[sft_gpu {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _tasks():
    from cudaperf.families import committed_or_built

    return committed_or_built()


def _measurements(arg: str):
    """Measured variants for the refinement transcripts: --measurements, else data/measurements/."""
    from cudaperf import policy

    if arg == "none":
        return None
    if arg:
        return policy.load_variant_measurements(arg)
    d = ROOT / "data/measurements"
    return policy.load_variant_measurements(d) if any(d.glob("*.parquet")) else None


def train(args) -> None:
    import torch

    from cudaperf import policy

    cfg = policy.PolicyConfig.for_profile("mini", model_size=args.size, sft_time_budget_s=args.budget_s,
                                          sft_epochs=args.epochs, batch_size=args.batch_size,
                                          learning_rate=args.lr, seed=args.seed)
    out = Path(args.out or ROOT / "data/models" / f"sft-{args.size}")
    tasks = _tasks()
    tok = policy.get_tokenizer(cfg, tasks, ROOT)
    meas = _measurements(args.measurements)
    _log(f"{len(meas) if meas else 0} measured (task, variant) speedups for refinement feedback")
    train_tasks = [t for t in tasks if t.split == "train"]
    val_tasks = policy.stratified([t for t in tasks if t.split == "val"], args.val_tasks, cfg.seed)
    t0 = time.perf_counter()
    ex = policy.sft_examples(train_tasks, meas, refine=cfg.sft_refine)
    ex, dropped = policy.filter_by_length(ex, tok, cfg.max_length)
    vex, vdropped = policy.filter_by_length(policy.sft_examples(val_tasks, meas, refine=cfg.sft_refine),
                                            tok, cfg.max_length)
    _log(f"{len(ex)} SFT records ({dropped} longer than {cfg.max_length} tokens dropped), "
         f"{len(vex)} val records, {time.perf_counter() - t0:.1f}s")
    model = policy.build_model(cfg.model_size, tok, cfg.max_length, cfg.seed)
    n_params = policy.count_parameters(model)
    _log(f"model {cfg.model_size}: {n_params:,} parameters; budget {cfg.sft_time_budget_s:.0f}s")
    if torch.cuda.is_available():
        model = model.to("cuda")
    res = policy.train_sft(model, tok, ex, cfg, out / "_trainer", eval_examples=vex or None)
    _log(f"trained {res.steps} steps in {res.seconds:.0f}s (budget hit: {res.stopped_by_budget})")
    shards = policy.save_policy(model, tok, out)
    import shutil

    shutil.rmtree(out / "_trainer", ignore_errors=True)
    log = {"size": cfg.model_size, "parameters": n_params, "steps": res.steps, "seconds": res.seconds,
           "stopped_by_budget": res.stopped_by_budget, "train_records": len(ex),
           "dropped_too_long": dropped, "val_records": len(vex), "val_dropped_too_long": vdropped,
           "measured_variants": len(meas) if meas else 0, "losses": res.losses,
           "config": {k: v for k, v in cfg.__dict__.items()},
           "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
           "shards": [p.name for p in shards],
           "shard_mb": [round(p.stat().st_size / 2**20, 2) for p in shards]}
    (out / "train_log.json").write_text(json.dumps(log, indent=1, default=str))
    _log(f"saved {out} ({sum(log['shard_mb']):.1f} MB in {len(shards)} shard(s))")


def evaluate(args) -> None:
    import pandas as pd
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cudaperf import policy
    from cudaperf.config import get_profile
    from cudaperf.harness import Harness

    cfg = policy.PolicyConfig.for_profile("mini", model_size=args.size, n_samples=args.n,
                                          temperature=args.temperature, seed=args.seed,
                                          sample_batch_size=args.sample_batch,
                                          max_new_tokens=args.max_new_tokens)
    out = Path(args.out or ROOT / "data/models" / f"sft-{args.size}")
    tok = AutoTokenizer.from_pretrained(out)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(out, dtype=dtype).to(dev)
    tasks = [t for t in _tasks() if t.split == "test"]
    tasks = policy.stratified(tasks, args.eval_tasks or len(tasks), cfg.seed)
    shard_i, shard_k = (int(x) for x in args.shard.split("/"))
    tasks = tasks[shard_i::shard_k]
    t0 = time.perf_counter()
    samples = policy.sample(model, tok, tasks, n=cfg.n_samples, temperature=cfg.temperature,
                            max_new_tokens=cfg.max_new_tokens, batch_size=cfg.sample_batch_size,
                            top_p=cfg.top_p, seed=cfg.seed)
    t_sample = time.perf_counter() - t0
    codes = policy.extract_codes(samples)
    _log(f"sampled {cfg.n_samples} x {len(tasks)} in {t_sample:.0f}s")
    del model
    torch.cuda.empty_cache()
    harness = Harness(get_profile("mini").harness)
    t0 = time.perf_counter()
    bad = harness.prepare(tasks)
    items = [(t, c) for t, row in zip(tasks, codes) for c in row]
    results = harness.evaluate_many(items)
    t_eval = time.perf_counter() - t0
    _log(f"evaluated {len(items)} samples in {t_eval:.0f}s ({len(bad)} tasks failed to prepare)")
    rows = []
    k = 0
    for t, row, raw in zip(tasks, codes, samples):
        for j, (code, text) in enumerate(zip(row, raw)):
            r = results[k]
            k += 1
            rows.append({"model": f"sft-{args.size}", "task_id": t.task_id, "family": t.family,
                         "sample": j, "status": r.status, "compiled": r.compiled, "correct": bool(r.correct),
                         "pass_rate": r.pass_rate, "speedup": r.speedup, "cv": r.cv,
                         "runtime_ms": r.runtime_ms, "flags": list(r.flags), "message": r.message,
                         "completion_tokens": len(tok(text, add_special_tokens=False)["input_ids"]),
                         "code": code, "prepare_error": bad.get(t.task_id, "")})
    harness.close()
    df = pd.DataFrame(rows)
    # One file per shard; the summary covers every shard evaluated so far (and says how many).
    name = "eval.parquet" if shard_k == 1 else f"eval-{shard_i}of{shard_k}.parquet"
    df.to_parquet(out / name, index=False)
    parts = [out / "eval.parquet"] if shard_k == 1 else sorted(out.glob(f"eval-*of{shard_k}.parquet"))
    allrows = pd.concat([pd.read_parquet(p) for p in parts]).to_dict(orient="records")
    if shard_k > 1 and len(parts) == shard_k:
        pd.DataFrame(allrows).to_parquet(out / "eval.parquet", index=False)
    summary = policy.eval_summary(allrows)
    summary["shards"] = f"{len(parts)}/{shard_k}"
    summary.update(model=f"sft-{args.size}", temperature=cfg.temperature, n=cfg.n_samples,
                   sample_seconds=t_sample, eval_seconds=t_eval,
                   gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
    (out / "eval_summary.json").write_text(json.dumps(summary, indent=1))
    _log(json.dumps(summary))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("stage", choices=["train", "eval", "all"])
    ap.add_argument("--size", choices=["tiny", "S", "M", "L"], default="L")
    ap.add_argument("--out", default="", help="checkpoint folder (default data/models/sft-<size>)")
    ap.add_argument("--budget-s", type=float, default=400.0, help="SFT wall-clock budget")
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--val-tasks", type=int, default=48, help="val tasks for the eval loss")
    ap.add_argument("--measurements", default="", help="measured variants: a table or a folder of shards "
                    "(default: data/measurements/ when it holds parquet files; 'none' to ignore)")
    ap.add_argument("--eval-tasks", type=int, default=0, help="test tasks to evaluate (0 = all)")
    ap.add_argument("--shard", default="0/1", help="I/K: evaluate every K-th test task from the I-th, "
                    "to split the test split over several 10-minute calls")
    ap.add_argument("--n", type=int, default=5, help="samples per task")
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--sample-batch", type=int, default=256)
    ap.add_argument("--max-new-tokens", type=int, default=1536)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    if args.stage in ("train", "all"):
        train(args)
    if args.stage in ("eval", "all"):
        evaluate(args)


if __name__ == "__main__":
    main()
