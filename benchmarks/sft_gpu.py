"""SFT warm start of the mini policies (S / M / L) on the H200, and their base-policy evaluation.

Each stage fits in one 10-minute device call:

    python benchmarks/sft_gpu.py train  --size L --budget-s 400 --epochs 1   # -> data/models/sft-L/
    python benchmarks/sft_gpu.py sample --size L --split test --eval-tasks 48  # -> sft-L/samples_test.jsonl.gz
    python benchmarks/sft_gpu.py eval   --size S M L --models runs/models --split test --eval-tasks 48

`train` builds the dataset, loads the committed tokenizer (data/tokenizer; trains and saves it if
missing), builds SFT records from the TRAIN split minus its in-family held-out programs
(meta in_family_split = val), i.e. every variant + refinement transcripts (measured variants from
data/measurements/ or `--measurements` supply the attempts' speedups), drops records longer than
`max_length` (counted in train_log.json, never truncated), trains with TRL's SFTTrainer until
the epochs or the wall-clock budget run out, and saves fp16 safetensors in shards <= 16 MB plus
the tokenizer and train_log.json (loss curve, steps, seconds, parameters, dropped records).
`--init DIR` continues from the weights saved in DIR (an earlier `train`, carried to a fresh
machine) instead of a new model: SFT can then add up over several 10-minute calls. The learning
rate schedule starts again (warm-up, cosine); no optimiser state travels (it is 6x the weights).

Two evaluation splits (`--split`): `test`, the held-out families (the issue's target), and
`infamily`, held-out programs of the train families. `sample` draws `n` completions per task of a
family-stratified slice (`--eval-tasks K`, 0 = all) and saves them; several models sample side by
side on one GPU. `eval` runs every saved sample of every `--size` through ONE harness (compile ->
check -> time against the naive variant; the tasks are prepared once for all models, and timing
never overlaps sampling), sampling first where samples are missing. Per-sample records go to
eval.parquet (eval_infamily.parquet), the summary (compile rate, pass@1, pass@5, geomean
speedup, fast_p) to eval_summary.json (eval_infamily_summary.json). Nothing is written for a
stage that did not finish. A whole split may not fit one call: `--shard 0/3`, `1/3`, `2/3`;
the parquet is assembled when all shards exist, and the summary states how many it covers.

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
    from cudaperf.families import verified_tasks

    return verified_tasks()


def _measurements(arg: str):
    """Measured variants for the refinement transcripts: --measurements, else data/measurements/."""
    from cudaperf import policy

    if arg == "none":
        return None
    if arg:
        return policy.load_variant_measurements(arg)
    d = ROOT / "data/measurements"
    return policy.load_variant_measurements(d) if any(d.glob("*.parquet")) else None


def _continued_model(path: Path, size: str):
    """The saved policy in `path` to continue training: its weights must exist and be of `size`
    (a model of another size would silently train the wrong thing)."""
    from transformers import AutoModelForCausalLM

    from cudaperf import policy

    if not policy.has_weights(path):
        sys.exit(f"--init {path}: no saved weights there (an earlier `train` writes them)")
    prev = json.loads((path / "train_log.json").read_text()) if (path / "train_log.json").exists() else {}
    if prev.get("size") not in (None, size):
        sys.exit(f"--init {path} holds a {prev['size']} model, not {size}")
    # fp32 master weights: the checkpoint is fp16 (save_policy); training runs in bf16 autocast.
    import torch

    return AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)


def _init_record(init: str) -> dict | None:
    """What a continued model started from: the folder and its own training (steps, seconds, and
    what it had continued from), so the chain of calls behind a checkpoint stays readable."""
    if not init:
        return None
    p = Path(init) / "train_log.json"
    prev = json.loads(p.read_text()) if p.exists() else {}
    return {"path": init, "steps": prev.get("steps"), "seconds": prev.get("seconds"),
            "init_from": prev.get("init_from")}


def train(args) -> None:
    import torch

    from cudaperf import policy

    size = args.size[0]

    cfg = policy.PolicyConfig.for_profile("mini", model_size=size, sft_time_budget_s=args.budget_s,
                                          sft_epochs=args.epochs, batch_size=args.batch_size,
                                          learning_rate=args.lr, seed=args.seed,
                                          **({"sft_renames": args.renames} if args.renames >= 0 else {}),
                                          **({"sft_copies": args.copies} if args.copies >= 0 else {}),
                                          **({"sft_refine": bool(args.refine)} if args.refine >= 0 else {}))
    out = _model_dir(args, size)
    # Samples and evaluations of an earlier model in this folder would be taken for this one's.
    for stale in [*out.glob("samples_*.jsonl.gz"), *out.glob("eval*.parquet"), *out.glob("eval*_summary.json")]:
        stale.unlink()
    tasks = _tasks()
    tok = policy.get_tokenizer(cfg, tasks, ROOT)
    meas = _measurements(args.measurements)
    _log(f"{len(meas) if meas else 0} measured (task, variant) speedups for refinement feedback")
    # The in-family held-out programs (meta in_family_split = val) stay out of SFT so that
    # `eval --split infamily` measures programs the policy has not seen, of families it has.
    train_tasks = policy.training_tasks(tasks)
    held = sum(1 for t in tasks if policy.in_family_heldout(t))
    val_tasks = policy.stratified([t for t in tasks if t.split == "val"], args.val_tasks, cfg.seed)
    t0 = time.perf_counter()
    ex = policy.sft_examples(train_tasks, meas, refine=cfg.sft_refine, renames=cfg.sft_renames, seed=cfg.seed)
    if cfg.sft_copies:
        ex += policy.copy_examples(train_tasks, cfg.sft_copies, seed=cfg.seed)
    ex, dropped = policy.filter_by_length(ex, tok, cfg.max_length)
    vex, vdropped = policy.filter_by_length(policy.sft_examples(val_tasks, meas, refine=cfg.sft_refine),
                                            tok, cfg.max_length)
    # A loss per epoch on held-out families (val) and on in-family held-out programs: the second
    # says whether more epochs help on programs like the training ones, the first on new families.
    inf_tasks = policy.evaluation_tasks(tasks, "infamily", args.val_tasks, cfg.seed)
    iex, _ = policy.filter_by_length(policy.sft_examples(inf_tasks, meas, refine=cfg.sft_refine),
                                     tok, cfg.max_length)
    _log(f"{len(ex)} SFT records ({dropped} longer than {cfg.max_length} tokens dropped), "
         f"{len(vex)} val records, {len(iex)} in-family eval records, {time.perf_counter() - t0:.1f}s")
    if args.init:
        model = _continued_model(Path(args.init), cfg.model_size)
    else:
        model = policy.build_model(cfg.model_size, tok, cfg.max_length, cfg.seed)
    n_params = policy.count_parameters(model)
    _log(f"model {cfg.model_size}: {n_params:,} parameters{' from ' + args.init if args.init else ''}; "
         f"budget {cfg.sft_time_budget_s:.0f}s")
    if torch.cuda.is_available():
        model = model.to("cuda")
    res = policy.train_sft(model, tok, ex, cfg, out / "_trainer", eval_examples={"val": vex, "infamily": iex},
                           profile_steps=tuple(args.profile_steps) if args.profile_steps else None)
    _log(f"trained {res.steps} steps in {res.seconds:.0f}s (budget hit: {res.stopped_by_budget})")
    if res.step_profile:
        _log("step profile (policy.StepProfiler):\n" + res.step_profile)
    shards = policy.save_policy(model, tok, out)
    import shutil

    shutil.rmtree(out / "_trainer", ignore_errors=True)
    log = {"size": cfg.model_size, "parameters": n_params, "train_tasks": len(train_tasks),
           "in_family_val_tasks_held_out": held, "steps": res.steps, "seconds": res.seconds,
           "stopped_by_budget": res.stopped_by_budget, "train_records": len(ex),
           "dropped_too_long": dropped, "val_records": len(vex), "val_dropped_too_long": vdropped,
           "measured_variants": len(meas) if meas else 0, "losses": res.losses,
           "init_from": _init_record(args.init),
           "config": {k: v for k, v in cfg.__dict__.items()},
           "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
           "shards": [p.name for p in shards],
           "shard_mb": [round(p.stat().st_size / 2**20, 2) for p in shards]}
    (out / "train_log.json").write_text(json.dumps(log, indent=1, default=str))
    _log(f"saved {out} ({sum(log['shard_mb']):.1f} MB in {len(shards)} shard(s))")


def _eval_tasks(split: str, k: int, seed: int, shard: str):
    """The evaluation tasks of `split` (policy.evaluation_tasks: k of them, family-stratified,
    0 = all), then shard I/K."""
    from cudaperf import policy

    pool = policy.evaluation_tasks(_tasks(), split, k, seed)
    shard_i, shard_k = (int(x) for x in shard.split("/"))
    return pool[shard_i::shard_k], shard_i, shard_k


def _model_dir(args, size: str) -> Path:
    if args.out and len(args.size) == 1:
        return Path(args.out)
    return Path(args.models) / f"sft-{size}"


def _samples_path(d: Path, split: str, shard_i: int, shard_k: int) -> Path:
    return d / (f"samples_{split}.jsonl.gz" if shard_k == 1 else f"samples_{split}-{shard_i}of{shard_k}.jsonl.gz")


def sample_stage(args, size: str) -> Path:
    """Sample n completions per evaluation task with the model in its folder; save them (gzipped JSONL)."""
    import gzip

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cudaperf import policy

    cfg = policy.PolicyConfig.for_profile("mini", model_size=size, n_samples=args.n,
                                          temperature=args.temperature, seed=args.seed,
                                          sample_batch_size=args.sample_batch,
                                          max_new_tokens=args.max_new_tokens)
    d = _model_dir(args, size)
    tok = AutoTokenizer.from_pretrained(d)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(d, dtype=dtype).to(dev)
    tasks, si, sk = _eval_tasks(args.split, args.eval_tasks, cfg.seed, args.shard)
    t0 = time.perf_counter()
    samples = policy.sample(model, tok, tasks, n=cfg.n_samples, temperature=cfg.temperature,
                            max_new_tokens=cfg.max_new_tokens, batch_size=cfg.sample_batch_size,
                            top_p=cfg.top_p, seed=cfg.seed, cache=args.cache)
    secs = time.perf_counter() - t0
    codes = policy.extract_codes(samples)
    path = _samples_path(d, args.split, si, sk)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt") as f:
        for t, raw, row in zip(tasks, samples, codes):
            for j, (text, code) in enumerate(zip(raw, row)):
                f.write(json.dumps({"task_id": t.task_id, "sample": j, "code": code,
                                    "completion_tokens": len(tok(text, add_special_tokens=False)["input_ids"]),
                                    "temperature": cfg.temperature, "max_new_tokens": cfg.max_new_tokens,
                                    "sample_seconds": secs, "kv_cache": args.cache}) + "\n")
    tmp.replace(path)  # whole file or none: an interrupted run leaves no half-written samples
    _log(f"sft-{size}: sampled {cfg.n_samples} x {len(tasks)} {args.split} tasks in {secs:.0f}s -> {path}")
    del model
    if dev == "cuda":
        torch.cuda.empty_cache()
    return path


def evaluate(args) -> None:
    """Harness evaluation of the saved samples of every model in --size, in ONE harness: the
    evaluation tasks are prepared (references, naive timing) once for all models. Models whose
    samples are missing are sampled first."""
    import gzip

    import pandas as pd
    import torch

    from cudaperf import policy

    tasks, si, sk = _eval_tasks(args.split, args.eval_tasks, args.seed, args.shard)
    by_id = {t.task_id: t for t in tasks}
    per_model: dict[str, list[dict]] = {}
    for size in args.size:
        path = _samples_path(_model_dir(args, size), args.split, si, sk)
        if not path.is_file():
            sample_stage(args, size)
        with gzip.open(path, "rt") as f:
            per_model[size] = [json.loads(line) for line in f]
        missing = {r["task_id"] for r in per_model[size]} - set(by_id)
        if missing:
            raise SystemExit(f"{path} holds tasks outside this evaluation slice (e.g. {sorted(missing)[0]}): "
                             "sample again with the same --split/--eval-tasks/--shard")
    harness = policy.judge_harness()  # shared runners, JUDGE_RUNNERS_PER_GPU slots
    t0 = time.perf_counter()
    bad = harness.prepare(tasks)
    items = [(size, r) for size in args.size for r in per_model[size]]
    results = harness.evaluate_many([(by_id[r["task_id"]], r["code"]) for _, r in items])
    t_eval = time.perf_counter() - t0
    harness.close()
    _log(f"evaluated {len(items)} samples of {len(args.size)} model(s) in {t_eval:.0f}s "
         f"({len(bad)} tasks failed to prepare)")
    stem = "eval" if args.split == "test" else f"eval_{args.split}"
    for size in args.size:
        d = _model_dir(args, size)
        rows = []
        for (s, r), res in zip(items, results):
            if s != size:
                continue
            t = by_id[r["task_id"]]
            rows.append({"model": f"sft-{size}", "split": args.split, **policy.judged_sample(t, r["sample"], res, r["code"]),
                         "runtime_ms": res.runtime_ms, "message": res.message,
                         "completion_tokens": r["completion_tokens"], "signature": policy.signature_match(r["code"], t),
                         "prepare_error": bad.get(t.task_id, "")})
        # One file per shard; the summary covers every shard evaluated so far (and says how many).
        name = f"{stem}.parquet" if sk == 1 else f"{stem}-{si}of{sk}.parquet"
        pd.DataFrame(rows).to_parquet(d / name, index=False)
        parts = [d / f"{stem}.parquet"] if sk == 1 else sorted(d.glob(f"{stem}-*of{sk}.parquet"))
        allrows = pd.concat([pd.read_parquet(p) for p in parts]).to_dict(orient="records")
        if sk > 1 and len(parts) == sk:
            pd.DataFrame(allrows).to_parquet(d / f"{stem}.parquet", index=False)
        summary = policy.eval_summary(allrows)
        first = per_model[size][0] if per_model[size] else {}
        summary.update(shards=f"{len(parts)}/{sk}", model=f"sft-{size}", split=args.split,
                       split_meaning=policy.EVAL_SPLIT_MEANING[args.split], temperature=first.get("temperature"),
                       max_new_tokens=first.get("max_new_tokens"), n=args.n,
                       sample_seconds=first.get("sample_seconds"), eval_seconds=t_eval,
                       gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
        (d / f"{stem}_summary.json").write_text(json.dumps(summary, indent=1))
        _log(json.dumps(summary))


def main(argv=None) -> None:
    from cudaperf.policy import EVAL_SPLIT_MEANING

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("stage", choices=["train", "sample", "eval", "all"])
    ap.add_argument("--size", choices=["tiny", "S", "M", "L"], nargs="+", default=["L"],
                    help="model size(s); eval takes several and prepares the tasks once for all")
    ap.add_argument("--out", default="", help="checkpoint folder of one --size (default data/models/sft-<size>)")
    ap.add_argument("--models", default="data/models", help="folder of sft-<size>/ when --size names several")
    ap.add_argument("--split", choices=sorted(EVAL_SPLIT_MEANING), default="test",
                    help="test: held-out families; infamily: held-out programs of the train families; "
                    "seen: programs SFT trained on")
    ap.add_argument("--budget-s", type=float, default=400.0, help="SFT wall-clock budget")
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--init", default="", help="continue from the policy saved in this folder (train)")
    ap.add_argument("--profile-steps", type=int, nargs=2, metavar=("SKIP", "N"), default=None,
                    help="train: torch.profiler over N steps after SKIP, its table in the log")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--renames", type=int, default=-1, help="renamed copies of each train task "
                    "(policy.renamed; -1 = the mini profile's sft_renames)")
    ap.add_argument("--copies", type=int, default=-1, help="identity-copy records per train task "
                    "(policy.copy_examples; -1 = the mini profile's sft_copies)")
    ap.add_argument("--cache", default="dynamic", choices=["dynamic", "static"],
                    help="KV cache for sampling (policy.generation_kwargs); the sample log gives the seconds")
    ap.add_argument("--refine", type=int, default=-1, choices=[-1, 0, 1],
                    help="refinement transcripts in SFT (1 / 0; -1 = the mini profile's sft_refine): they are a third "
                         "of the tokens, so a short budget without them gives the translations more passes")
    ap.add_argument("--val-tasks", type=int, default=48, help="val tasks for the eval loss")
    ap.add_argument("--measurements", default="", help="measured variants: a table or a folder of shards "
                    "(default: data/measurements/ when it holds parquet files; 'none' to ignore)")
    ap.add_argument("--eval-tasks", type=int, default=0, help="tasks of --split to evaluate, "
                    "family-stratified (0 = all)")
    ap.add_argument("--shard", default="0/1", help="I/K: evaluate every K-th test task from the I-th, "
                    "to split the test split over several 10-minute calls")
    ap.add_argument("--n", type=int, default=5, help="samples per task")
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--sample-batch", type=int, default=256)
    ap.add_argument("--max-new-tokens", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    if args.stage in ("train", "all"):
        if len(args.size) != 1:
            ap.error("train takes one --size")
        train(args)
    if args.stage == "sample":
        for size in args.size:
            sample_stage(args, size)
    if args.stage in ("eval", "all"):
        evaluate(args)


if __name__ == "__main__":
    main()
    # Every output is written and closed by now. On the H200 the interpreter's teardown after a
    # `train` hung in garbage collection until the call's hard limit (session 14: 80 s lost,
    # "Fatal Python error: Aborted ... Garbage-collecting"), so the process ends here.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
