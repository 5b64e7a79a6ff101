"""Generation speed of a policy at a GRPO step's shape, per KV-cache configuration (a benchmark, not a test).

A mini GRPO step generates 16 tasks x 8 attempts in one batch of 128 sequences, and the batch runs until
its longest sequence ends (up to `max_new_tokens`): in session 24 (H100) that took 11-18 s of a 32 s
fresh step, the larger half. Each decoding step of the 8M-parameter M model is a few hundred small
kernels, so the per-token cost is launch and Python overhead, which transformers' static KV cache
addresses: on a GPU `generate` then compiles the decoding step (torch.compile, mode reduce-overhead:
CUDA graphs) for each cache shape, i.e. for each (batch, prompt length + max_new_tokens). Rounding
the prompt length up (`--pad` / `GRPOSettings.gen_pad_multiple`) bounds how many shapes a run
compiles for.

GRPO hands the trainer's cached GPU memory back before every step's judging
(`rollout.release_cached_gpu_memory`, 16-44 GB a step in session 24), so each step's generation
allocates its growing dynamic KV cache afresh; a configuration does the same before each batch
unless it ends in ``:keep`` (then the allocator's blocks stay cached from the batch before: the
difference is what the per-step release costs generation).

CACHE `graph` decodes with `cudaperf.fastgen` instead of transformers: a preallocated KV cache and the
decoding step captured once per batch as a CUDA graph (milliseconds, where torch.compile of the static
cache outlasted 120 s in session 25), then replayed.

For each configuration CACHE:PAD[:keep] (e.g. dynamic:0 dynamic:0:keep static:256 graph:0) this generates `--batches`
batches of `--tasks` x `--n` from different tasks of `--split` (so prompt lengths differ, as they do
from step to step) and prints one JSON line per batch: seconds, longest and mean completion in
tokens, tokens generated per second, and the padded prompt width; then a summary line per
configuration (first batch, which holds any compilation, and the mean of the others), or an
error line for a configuration that failed (the others still run). Same seed
for every configuration, but sampling on different kernels need not give the same tokens: compare
tokens per second, not seconds alone.

    python benchmarks/gen_speed.py --model data/models/sft-M-s18 --configs dynamic:0 graph:0 static:0 static:256
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


def parse_config(text: str) -> tuple[str, int, bool]:
    """'static:256' -> ('static', 256, True); 'dynamic' -> ('dynamic', 0, True);
    'dynamic:0:keep' -> ('dynamic', 0, False): (cache, padding multiple, release before each batch)."""
    from cudaperf.policy import GEN_CACHES

    parts = text.split(":")
    cache, pad = parts[0], parts[1] if len(parts) > 1 else "0"
    if cache not in GEN_CACHES:
        raise argparse.ArgumentTypeError(f"{text!r}: cache must be one of {GEN_CACHES}")
    if len(parts) > 3 or (len(parts) == 3 and parts[2] != "keep"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected CACHE[:PAD[:keep]]")
    try:
        pad_n = int(pad or 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: the padding multiple must be an integer") from None
    if pad_n < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the padding multiple must be >= 0")
    return cache, pad_n, len(parts) < 3


def summarise(rows: list[dict]) -> dict:
    """First batch (compilation, if any) apart from the rest, which show the steady state."""
    later = rows[1:]
    tok = sum(r["tokens"] for r in later)
    secs = sum(r["seconds"] for r in later)
    return {"config": rows[0]["config"], "batches": len(rows), "first_s": rows[0]["seconds"],
            "later_mean_s": round(secs / len(later), 2) if later else None,
            "later_tokens_per_s": round(tok / secs, 1) if later and secs > 0 else None,
            "later_max_new": max((r["max_new"] for r in later), default=None)}


def run_batch(model, tok, tasks, n: int, cache: str, pad: int, release: bool, a) -> dict:
    import torch

    from cudaperf import policy, prompts
    from cudaperf.rollout import release_cached_gpu_memory

    released = release_cached_gpu_memory() if release else 0.0

    texts = [tok.apply_chat_template(prompts.task_prompt(t), tokenize=False, add_generation_prompt=True)
             for t in tasks]
    side, tok.padding_side = tok.padding_side, "left"
    try:
        width = policy.encode_prompts(tok, texts, "cpu", pad)["input_ids"].shape[1]  # n copies pad the same
    finally:
        tok.padding_side = side
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    sync()
    t0 = time.perf_counter()
    out = policy.sample(model, tok, tasks, n=n, temperature=a.temperature, max_new_tokens=a.max_new_tokens,
                        batch_size=len(tasks) * n, seed=a.seed, cache=cache, pad_multiple=pad)
    sync()
    secs = time.perf_counter() - t0
    lens = [len(tok(c, add_special_tokens=False)["input_ids"]) for row in out for c in row]
    return {"seconds": round(secs, 2), "released_gb": round(released, 2), "sequences": len(lens),
            "tokens": sum(lens), "max_new": max(lens), "mean_new": round(sum(lens) / len(lens), 1), "prompt_width": int(width),
            "tokens_per_s": round(sum(lens) / secs, 1)}


def main(argv=None) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cudaperf import policy
    from cudaperf.families import verified_tasks

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="data/models/sft-M-s18", help="a saved policy folder")
    ap.add_argument("--configs", nargs="+", type=parse_config,
                    default=[("dynamic", 0, True), ("dynamic", 0, False), ("static", 0, True), ("static", 256, True)],
                    help="CACHE:PAD[:keep], e.g. dynamic:0 dynamic:0:keep static:256 (keep: no release before a batch)")
    ap.add_argument("--split", default="seen", choices=sorted(policy.EVAL_SPLIT_MEANING))
    ap.add_argument("--tasks", type=int, default=16, help="tasks per batch (a mini GRPO step: 16)")
    ap.add_argument("--n", type=int, default=8, help="samples per task (a mini GRPO step: 8)")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=1024)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                    help="weights during generation (GRPO generates with its float32 training copy)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="", help="also write every line to this JSONL file, as it is printed")
    a = ap.parse_args(argv)
    if not policy.has_weights(a.model):
        sys.exit(f"{a.model}: no saved policy weights there")
    if a.batches < 1 or a.tasks < 1 or a.n < 1:
        sys.exit("--batches, --tasks and --n must be >= 1")
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=getattr(torch, a.dtype)).to(dev)
    pool = policy.evaluation_tasks(verified_tasks(), a.split, a.tasks * a.batches, a.seed)
    if len(pool) < a.tasks * a.batches:
        sys.exit(f"split {a.split} has {len(pool)} tasks, fewer than {a.tasks} x {a.batches}")
    header = {"model": a.model, "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
              "torch": torch.__version__, "dtype": a.dtype, "batch": a.tasks * a.n,
              "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
              "max_new_tokens": a.max_new_tokens, "temperature": a.temperature}
    out = Path(a.out) if a.out else None
    if out:
        out.write_text("")

    def emit(row: dict) -> None:
        # Each row reaches --out as soon as it exists: session 25's run was cut by its limit inside a
        # configuration, and a file written only at the end held nothing.
        print(json.dumps(row), flush=True)
        if out:
            with out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")

    emit(header)
    for cache, pad, release in a.configs:
        name = f"{cache}:{pad}" + ("" if release else ":keep")
        rows: list[dict] = []
        t_batch = time.perf_counter()  # bound even if the interrupt lands before the first batch starts
        try:
            for b in range(a.batches):
                t_batch = time.perf_counter()
                row = {"config": name, "batch": b,
                       **run_batch(model, tok, pool[b * a.tasks:(b + 1) * a.tasks], a.n, cache, pad, release, a)}
                rows.append(row)
                emit(row)
        except KeyboardInterrupt:  # the caller's time limit (timeout -s INT): say where it fell, stop
            emit({"config": name, "error": "interrupted", "batches_done": len(rows),
                  "seconds_in_batch": round(time.perf_counter() - t_batch, 1)})
            sys.exit(130)
        except Exception as e:  # noqa: BLE001 -- e.g. the compiled decoding step fails: say so, go on
            emit({"config": name, "error": f"{type(e).__name__}: {str(e)[:500]}", "batches_done": len(rows)})
            continue
        emit(summarise(rows))


if __name__ == "__main__":
    main()
