"""Mini-profile multi-turn GRPO on the H200 (M policy), resumable, and its held-out evaluation.

Each stage fits in one 10-minute device call; run them in order, repeating `train` until done:

    python benchmarks/grpo_gpu.py train --run mini-M-both                 # -> runs/grpo/<run>/checkpoint-*,
                                                                          #    data/grpo/<run>/steps.parquet
    python benchmarks/grpo_gpu.py eval  --run mini-M-both --eval-tasks 120  # -> data/grpo/<run>/eval.parquet
    python benchmarks/grpo_gpu.py train --run mini-M-ver --ablation ver_only   # ablations, unchanged code

`train` starts from the SFT checkpoint data/models/sft-M (benchmarks/sft_gpu.py) when it exists (else a
fresh M model, said so in settings.json), uses the mini profile's GRPOSettings (16 tasks x 8 attempts,
up to 3 turns) and stops, checkpoints and exits after `--budget-s` seconds (default 480); the next call
resumes from the newest checkpoint (TRL `resume_from_checkpoint`), and the step log drops rows past
that checkpoint. R_str needs a ranker trained on GPU measurements (`--ranker`, default `cudaperf.ranker.reward_model`:
the static-feature ranker with the best in-family cross-validated accuracy); with none, only `--ablation ver_only` runs (the script says so).
`--probe-filter K` (GRPOSettings.probe_filter): before step 1, K attempts for each of `--probe-tasks`
candidate tasks are sampled at the rollout temperature and compiled, and the run trains only on tasks
where one compiled (grpo.probe_filter_tasks; the counts go to data/grpo/<run>/probe_tasks.json): with
a start policy that rarely compiles, the other groups have equal rewards and teach nothing.
`--split infamily_rest` trains on the in-family held-out programs outside the 64-task evaluation slice
(policy.infamily_rest: programs SFT never saw) instead of SFT's own programs; `eval` refuses an in-family
slice that overlaps that pool.
NOTE: runs/ is not versioned. A run spanning several *fresh* machines must carry runs/grpo/<run>
(the `carry` list of the device call) or it restarts from step 0.

`eval` samples `--n` completions (single turn, first attempt) for each task of `--split` (test: held-out
families; infamily: held-out programs of the train families; `--eval-tasks K` = a family-stratified slice) from the SFT start and from the GRPO policy
(newest checkpoint), runs them all through the harness, and writes per-sample records and one summary
row per policy (pass@1, pass@5, geometric-mean speedup, fast_p; cudaperf.policy.eval_summary) to
data/grpo/<run>/eval.parquet (+ eval_samples.parquet; eval_infamily*.parquet for --split infamily). Nothing is written for a stage that did not finish.
`sample --model DIR --out FILE` (same split and sampling options as `eval`) samples one policy once and
saves its completions (policy.save_samples); `eval --start-samples FILE` then takes the SFT start's
samples from that file, checked against the evaluation's settings and the run's start_from, and samples
only the GRPO checkpoints (session 22: sampling the start took 127 s of a 190 s evaluation call).

GPU machine needs (carry wheels in .whl/, installed to /tmp/site as benchmarks/gpu_harness_evidence.sh does):
trl, datasets (+ dill, multiprocess, xxhash, pyarrow if absent), tree-sitter + tree-sitter-cuda (static
features for R_str and the harness), lightgbm only when the ranker is a LightGBM one. No weights are
downloaded.
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
    print(f"[grpo_gpu {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _tasks():
    from cudaperf.families import verified_tasks

    return verified_tasks()


def _ranker(arg: str) -> str:
    """--ranker: a path, 'none', or empty for cudaperf.ranker.reward_model's choice (the static
    ranker with the best in-family cross-validated accuracy)."""
    if arg == "none":
        return ""
    if arg:
        return arg
    from cudaperf.ranker import reward_model

    found = reward_model(ROOT / "data/ranker")
    return str(found.relative_to(ROOT)) if found else ""


def train(args) -> None:
    from cudaperf import grpo

    over = {"ablation": args.ablation, "time_budget_s": float(args.budget_s),
            "ranker_path": _ranker(args.ranker)}
    if args.steps:
        over["steps"] = args.steps
    if args.turns:
        over["turns"] = args.turns
    # A smaller step than the profile's (a quick check, or a machine with less memory) is said so
    # in the run's settings.json, which records every setting used.
    for name in ("tasks_per_step", "group_size", "max_new_tokens", "temperature", "probe_filter", "probe_tasks",
                 "max_tasks", "keep_runners", "runners_per_gpu", "gen_cache", "gen_pad_multiple", "compile_ahead"):
        if getattr(args, name):
            over[name] = getattr(args, name)
    if args.start:
        over["start_from"] = args.start
    if args.lr:
        over["learning_rate"] = args.lr
    if args.scale_rewards:
        over["scale_rewards"] = args.scale_rewards
    if args.split:
        over["split"] = args.split
    if args.prepare_ahead is not None:
        over["prepare_ahead"] = args.prepare_ahead
    if args.micro_batch:
        over["micro_batch"] = args.micro_batch
    if args.alpha_speed is not None:
        if args.alpha_speed < 0:
            sys.exit(f"--alpha-speed must be >= 0, got {args.alpha_speed}")
        over["alpha_speed"] = args.alpha_speed
    if args.beta is not None:  # 0 is a setting (no reference model), so None means "the profile's"
        over["beta"] = args.beta
    try:
        s = grpo.GRPOSettings.for_profile("mini", **over)
    except ValueError as e:  # a setting out of range, said in one line
        sys.exit(f"grpo_gpu: {e}")
    if s.ablation != "ver_only" and not s.ranker_path:
        sys.exit("no ranker for R_str (cudaperf ranker train writes data/ranker/, or --ranker): train one on GPU "
                 "measurements first, or run --ablation ver_only")
    try:
        out = grpo.run_grpo(args.run, "mini", tasks=_tasks(), settings=s, root=ROOT, resume=True)
    except grpo.NoRewardSignal as e:  # said plainly; the probe's counts are in data/grpo/<run>/probe_tasks.json
        sys.exit(f"grpo_gpu: {e}")
    log = out.log
    _log(f"{out.steps_done}/{s.steps} steps (resumed from {out.resumed_from}); "
         f"{'stopped by budget' if out.stopped_by_budget else 'finished'} in {out.seconds:.0f}s")
    if len(log):
        cols = ["step", "r_ver", "r_str", "compile_rate", "correct_rate", "t_step", "t_prepare_wait", "schedule_match",
                "signal_mixed", "signal_correct", "signal_speed"]
        tail = log.tail(5)[[c for c in cols if c in log.columns]]
        _log("\n" + tail.to_string(index=False))


def start_folder(run: str, root: Path = ROOT) -> Path:
    """The run's SFT start: the float32 copy `train` saved (runs/grpo/<run>/start_policy), or, on a
    fresh machine that has only the run's checkpoint (gpu_grpo.sh RESUME_TAR), the checkpoint it was
    made from (settings.json `start_from`, committed): the same weights."""
    from cudaperf import policy

    saved = root / "runs/grpo" / run / "start_policy"
    if (saved / "config.json").is_file():
        return saved
    start_from = run_start(run, root)
    if not start_from or not policy.has_weights(root / start_from):
        sys.exit(f"no start policy for {run}: neither {saved.relative_to(root)} nor a start_from in "
                 f"data/grpo/{run}/settings.json with weights")
    return root / start_from


def _checkpoint_model(run: str):
    from cudaperf import grpo

    ck = grpo.last_checkpoint(ROOT / "runs/grpo" / run)
    if ck is None:
        sys.exit(f"no checkpoint under runs/grpo/{run}: run `train` first")
    return ck


def evaluate(args) -> None:
    import pandas as pd
    import torch

    from cudaperf import grpo, policy, refine_eval, runlog

    if args.turns < 1:
        sys.exit(f"--turns must be >= 1, got {args.turns}")

    run_dir = ROOT / "data/grpo" / args.run
    # First, before any loading: a run that trained on in-family held-out programs must not be
    # scored on them.
    every = _tasks()
    tasks = policy.evaluation_tasks(every, args.split, args.eval_tasks, args.seed)
    seen = grpo.trained_eval_overlap(runlog.load_settings(args.run, ROOT / "data/grpo"), tasks, every)
    if seen:
        sys.exit(f"{len(seen)} of the {len(tasks)} evaluation tasks are in the run's training pool (split "
                 f"infamily_rest), e.g. {seen[:3]}: evaluate on the slice the pool leaves out "
                 f"(--split infamily --eval-tasks <= its eval_reserve, --seed 0) or on --split test")
    start = start_folder(args.run)
    ck = _checkpoint_model(args.run)
    policies = {"sft_start": start, "grpo": ck}
    # --also-steps: earlier checkpoints of the run, sampled and judged in the same batch (the SFT
    # start is sampled once), so one call gives the held-out curve over training.
    for step in _steps_arg(args.also_steps):
        earlier = ROOT / "runs/grpo" / args.run / f"checkpoint-{step}"
        if not earlier.is_dir():
            sys.exit(f"--also-steps {step}: no {earlier.relative_to(ROOT)}")
        if earlier != ck:
            policies[f"grpo_step{step}"] = earlier
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if args.turns > 1:
        if args.start_samples:
            sys.exit("--start-samples holds first attempts only: with --turns > 1 the start is sampled here too")
        recs, turn_recs = _refine_all(policies, start, tasks, args, dev)
    else:
        recs, turn_recs = _single_turn(policies, start, tasks, args, dev), []
    per = pd.DataFrame(recs)
    summary = {}
    for name in policies:
        s = policy.eval_summary([r for r in recs if r["policy"] == name])
        if args.turns > 1:  # share of chains correct by each turn, with feedback between (cudaperf.refine_eval)
            by = refine_eval.pass_by_turn([r for r in turn_recs if r["policy"] == name], args.turns)
            s.update({f"pass_by_turn{t}": v for t, v in by.items()})
        summary[name] = {"policy": name, "split": args.split, "checkpoint": str(policies[name].relative_to(ROOT)),
                         "samples_from": args.start_samples if name == "sft_start" and args.start_samples else "",
                         "n": args.n, "temperature": args.temperature, "turns": args.turns, **s,
                         "gpu": torch.cuda.get_device_name(0) if dev == "cuda" else None}
    run_dir.mkdir(parents=True, exist_ok=True)
    stem = eval_stem(args.split, args.turns)
    keep_earlier_eval(run_dir, stem, str(ck.relative_to(ROOT)))
    for out, rows, pair in write_evals(run_dir, stem, per, summary):
        _log(f"{out}: " + json.dumps(rows, indent=1, default=str))
        # Task by task: speed compared only where both policies have a correct sample (cudaperf.runlog).
        _log(f"{out} paired: " + json.dumps(runlog.paired_eval(pair), default=str))
    if turn_recs:
        pd.DataFrame(turn_recs).to_parquet(run_dir / f"{stem}_turns.parquet", index=False)
        _log(f"{stem}_turns.parquet: {len(turn_recs)} attempts; pass by turn: " + json.dumps(
            {name: [summary[name][f"pass_by_turn{t}"] for t in range(1, args.turns + 1)] for name in policies}))


def _refine_all(policies: dict, start: Path, tasks, args, dev: str) -> tuple[list[dict], list[dict]]:
    """`eval --turns T`: every policy's n chains per task through `refine_eval.refine`, judged between
    turns. Returns (turn-1 records, as a one-turn evaluation has them; every attempt's record)."""
    import torch
    from transformers import AutoTokenizer

    from cudaperf import grpo, policy, refine_eval

    s = grpo.GRPOSettings.for_profile("mini")
    harness = policy.judge_harness()
    harness.prepare(tasks)
    turn_recs: list[dict] = []
    tok = AutoTokenizer.from_pretrained(str(start))
    try:
        for name, path in policies.items():
            model = _sampling_model(path, dev)
            t0 = time.perf_counter()
            got = refine_eval.refine(model, tok, tasks, harness, n=args.n, turns=args.turns,
                                     temperature=args.temperature, max_new_tokens=args.max_new_tokens,
                                     max_prompt_tokens=s.max_prompt_tokens, batch_size=args.sample_batch,
                                     gen_cache=args.gen_cache, seed=args.seed,
                                     log=lambda m, name=name: _log(f"{name}: {m}"))
            _log(f"{name}: {len(got)} attempts over {args.turns} turns in {time.perf_counter() - t0:.0f}s")
            turn_recs += [{"policy": name, **r, "split": args.split} for r in got]
            del model
            if dev == "cuda":
                torch.cuda.empty_cache()
    finally:
        harness.close()
    first = [{k: v for k, v in r.items() if k != "turn"} for r in turn_recs if r["turn"] == 1]
    return first, turn_recs


def _single_turn(policies: dict, start: Path, tasks, args, dev: str) -> list[dict]:
    """One sample per (task, n): every policy sampled (or the start read from --start-samples),
    then all judged in one batch. One record per sample."""
    import torch
    from transformers import AutoTokenizer

    from cudaperf import policy

    samples = {}
    if args.start_samples:
        # The SFT start's samples drawn once (`grpo_gpu.py sample`), checked against this evaluation's
        # settings and the run's start_from; only the GRPO checkpoints are sampled here.
        try:
            samples["sft_start"] = policy.stored_samples(ROOT / args.start_samples, tasks,
                                                         _sample_settings(args, run_start(args.run)))
        except ValueError as e:
            sys.exit(f"--start-samples: {e}")
        _log(f"sft_start: {args.n} x {len(tasks)} samples from {args.start_samples}")
    tok = AutoTokenizer.from_pretrained(str(start))
    for name, path in policies.items():
        if name in samples:
            continue
        model = _sampling_model(path, dev)
        t0 = time.perf_counter()
        samples[name] = _draw(model, tok, tasks, args)
        _log(f"{name}: sampled {args.n} x {len(tasks)} in {time.perf_counter() - t0:.0f}s")
        del model
        if dev == "cuda":
            torch.cuda.empty_cache()
    harness = policy.judge_harness()  # shared runners, JUDGE_RUNNERS_PER_GPU slots
    harness.prepare(tasks)
    items, keys = [], []
    for name, rows in samples.items():
        for t, row in zip(tasks, policy.extract_codes(rows)):
            for j, code in enumerate(row):
                items.append((t, code))
                keys.append((name, t, j))
    t0 = time.perf_counter()
    results = harness.evaluate_many(items)
    _log(f"evaluated {len(items)} samples in {time.perf_counter() - t0:.0f}s")
    harness.close()
    return [{"policy": name, **policy.judged_sample(t, j, r, code), "split": args.split}
            for (name, t, j), r, (_, code) in zip(keys, results, items)]


def eval_stem(split: str, turns: int = 1) -> str:
    """File stem of an evaluation: eval (held-out families), eval_<split>, and _t<T> for a multi-turn one,
    so that `eval --turns 3` never replaces the one-turn evaluation of the same checkpoint."""
    stem = "eval" if split == "test" else f"eval_{split}"
    return f"{stem}_t{turns}" if turns > 1 else stem


def run_start(run: str, root: Path = ROOT) -> str:
    """The run's start_from as settings.json records it (a path relative to the repository); "" when
    the run has no settings.json or records none."""
    from cudaperf import runlog

    return runlog.load_settings(run, root / "data/grpo").get("start_from", "")


def _sampling_model(path: Path, dev: str):
    """A policy loaded for sampling as `eval` and `sample` both do: bfloat16 on the GPU, float32 on the CPU."""
    import torch
    from transformers import AutoModelForCausalLM

    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    return AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype).to(dev)


def _draw(model, tok, tasks, args) -> list[list[str]]:
    """`policy.sample` with the sampling options `eval` and `sample` share."""
    from cudaperf import policy

    return policy.sample(model, tok, tasks, n=args.n, temperature=args.temperature,
                         max_new_tokens=args.max_new_tokens, batch_size=args.sample_batch, seed=args.seed,
                         cache=args.gen_cache, pad_multiple=args.gen_pad_multiple)


def _sample_settings(args, model: str) -> dict:
    return {"model": model, "split": args.split, "n": args.n, "temperature": args.temperature,
            "max_new_tokens": args.max_new_tokens, "seed": args.seed}


def sample_policy(args) -> None:
    """Sample a policy once on an evaluation split and save the completions (policy.save_samples),
    for `eval --start-samples`: on the GPU (bfloat16, as `eval` samples) or on this CPU (float32)."""
    import torch
    from transformers import AutoTokenizer

    from cudaperf import policy

    model_dir = (ROOT / args.model).resolve()
    if not policy.has_weights(model_dir):
        sys.exit(f"--model {args.model}: no weights there")
    rel = str(model_dir.relative_to(ROOT)) if model_dir.is_relative_to(ROOT) else str(model_dir)
    tasks = policy.evaluation_tasks(_tasks(), args.split, args.eval_tasks, args.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = _sampling_model(model_dir, dev)
    t0 = time.perf_counter()
    rows = _draw(model, tok, tasks, args)
    secs = time.perf_counter() - t0
    device = torch.cuda.get_device_name(0) if dev == "cuda" else f"cpu ({os.cpu_count()} cores)"
    out = policy.save_samples(ROOT / args.out, tasks, rows, _sample_settings(args, rel),
                              device=device, dtype=str(model.dtype).removeprefix("torch."), seconds=round(secs, 1))
    _log(f"{rel}: sampled {args.n} x {len(tasks)} on {device} in {secs:.0f}s -> {out}")


def write_evals(run_dir: Path, stem: str, per, summary: dict) -> list:
    """Every file holds the SFT start and one GRPO checkpoint, named "grpo", as a single evaluation
    would write it: policy "grpo" (the newest) under <stem>, each "grpo_step<N>" under <stem>_step<N>.
    Returns (file stem, summary rows, samples) per file written."""
    import pandas as pd

    written = []
    for name in summary:
        if name == "sft_start":
            continue
        out = stem if name == "grpo" else f"{stem}_{name.removeprefix('grpo_')}"
        pair = per[per["policy"].isin(["sft_start", name])].replace({"policy": {name: "grpo"}})
        pair.to_parquet(run_dir / f"{out}_samples.parquet", index=False)
        rows = [summary["sft_start"], {**summary[name], "policy": "grpo"}]
        pd.DataFrame(rows).to_parquet(run_dir / f"{out}.parquet", index=False)
        written.append((out, rows, pair))
    return written


def _steps_arg(text: str) -> list[int]:
    """'20,40' -> [20, 40]; '' -> []. A clear error for anything else."""
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        sys.exit(f"--also-steps takes step numbers separated by commas, got {text!r}")


def keep_earlier_eval(run_dir: Path, stem: str, checkpoint: str) -> None:
    """An evaluation of an earlier checkpoint of the run is renamed <stem>_step<N>(_samples).parquet
    before the new one is written, not overwritten (session 21 kept its step-38 evaluation by hand)."""
    import pandas as pd

    f = run_dir / f"{stem}.parquet"
    if not f.exists():
        return
    old = pd.read_parquet(f)
    prev = str(old.loc[old["policy"] == "grpo", "checkpoint"].iloc[0]) if (old["policy"] == "grpo").any() else ""
    if not prev or prev == checkpoint:
        return
    step = prev.rstrip("/").rsplit("-", 1)[-1]
    for suffix in ("", "_samples", "_turns"):
        src = run_dir / f"{stem}{suffix}.parquet"
        if src.exists():
            src.rename(run_dir / f"{stem}_step{step}{suffix}.parquet")


def main(argv=None) -> None:
    from cudaperf.policy import EVAL_SPLIT_MEANING

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="GRPO for at most --budget-s seconds, resuming the run")
    t.add_argument("--run", default="mini-M-both")
    t.add_argument("--ablation", default="both", choices=["both", "ver_only", "str_only"])
    t.add_argument("--ranker", default="", help="saved ranker for R_str ('none' = absent)")
    t.add_argument("--steps", type=int, default=0, help="total steps of the run (0 = profile)")
    t.add_argument("--turns", type=int, default=0, help="turns per chain (0 = profile)")
    t.add_argument("--budget-s", type=float, default=480.0)
    t.add_argument("--tasks-per-step", type=int, default=0, help="tasks per step (0 = profile: 16)")
    t.add_argument("--group-size", type=int, default=0, help="attempts per task per step (0 = profile: 8)")
    t.add_argument("--max-new-tokens", type=int, default=0, help="longest attempt (0 = profile: 1024)")
    t.add_argument("--temperature", type=float, default=0.0,
                   help="rollout sampling temperature (0 = profile: 1.0); session 14's SFT-M start compiled "
                        "1 of 1,152 rollouts at 1.0 and 9 %% of its seen tasks' samples at 0.2 (CPU probe)")
    t.add_argument("--probe-filter", type=int, default=0, help="attempts per candidate task sampled and compiled "
                   "before step 1; train only on tasks where one compiled (grpo.probe_filter_tasks; 0 = off)")
    t.add_argument("--max-tasks", type=int, default=0,
                   help="train on this many tasks, stratified over families (0 = all): a pool that steps revisit, "
                        "so the reward of later epochs is measured on the same tasks as the first")
    t.add_argument("--keep-runners", type=int, default=0,
                   help="keep shared runners from task to task for this many attempts each (0 = a runner per task)")
    t.add_argument("--runners-per-gpu", type=int, default=0,
                   help="runner slots per GPU judging the rollouts (0 = profile: 12); session 23's harness bench ran "
                        "kept runners with 16 slots 11 %% faster than shared ones with 12 on one H100")
    t.add_argument("--gen-cache", default="", choices=["", "dynamic", "static", "graph"],
                   help="KV cache of the rollouts ('' = profile: dynamic; static: transformers compiles the "
                        "decoding step on a GPU; graph: cudaperf.fastgen replays one CUDA graph per decoding "
                        "step; benchmarks/gen_speed.py measures them)")
    t.add_argument("--gen-pad-multiple", type=int, default=0,
                   help="left-pad rollout prompts to a multiple of this many tokens (0 = no rounding)")
    t.add_argument("--compile-ahead", type=int, default=0,
                   help="threads compiling attempts that end while their batch still generates (0 = off)")
    t.add_argument("--prepare-ahead", type=int, default=None,
                   help="threads preparing the next step's tasks while this step is judged (profile: 8; 0 = off)")
    t.add_argument("--micro-batch", type=int, default=0,
                   help="rows per forward/backward pass of the update, accumulated into one optimiser step "
                        "(0 = the whole step at one turn, up to 32 with --turns > 1: session 30's 3-turn step ran out "
                        "of an H100's memory in one pass)")
    t.add_argument("--lr", type=float, default=0.0, help="peak learning rate of the update (0 = profile: 2e-5)")
    t.add_argument("--scale-rewards", default="", choices=["", "group", "batch", "none"],
                   help="TRL scale_rewards ('' = profile: group). group divides each task's advantages by that "
                        "group's std, so in a group where every attempt is correct, timing differences weigh as "
                        "much as correct-against-wrong does elsewhere; batch uses one std for the whole step")
    t.add_argument("--beta", type=float, default=None, help="KL coefficient against the start (profile: 0.02)")
    t.add_argument("--probe-tasks", type=int, default=0, help="candidate tasks of the probe filter (0 = profile: 256)")
    t.add_argument("--alpha-speed", type=float, default=None,
                   help="scale of R_speed and R_str (default: the profile's, DESIGN's 1.0); e.g. 0.25 to make "
                        "correctness weigh more against speed (with --scale-rewards batch: per-group scaling "
                        "undoes it in all-correct groups)")
    t.add_argument("--split", default="", choices=["", "train", "infamily_rest"],
                   help="task pool ('' = profile: train, the programs SFT trained on; infamily_rest: the in-family "
                        "held-out programs outside the 64-task evaluation slice, unseen by SFT, so that GRPO "
                        "learns to write correct code for programs it has not memorised; `eval` then refuses "
                        "an in-family slice that overlaps the pool)")
    t.add_argument("--start", default="", help="SFT checkpoint to start from (default: the profile's, "
                   "data/models/sft-M; e.g. runs/models/sft-M as benchmarks/gpu_sft.sh leaves it)")
    e = sub.add_parser("eval", help="held-out pass@1 / geomean speedup: SFT start vs GRPO policy")
    e.add_argument("--run", default="mini-M-both")
    e.add_argument("--eval-tasks", type=int, default=120, help="tasks of --split (0 = all)")
    e.add_argument("--split", choices=sorted(EVAL_SPLIT_MEANING), default="test",
                   help="test: held-out families; infamily: held-out programs of the train families; "
                    "seen: programs SFT trained on")
    e.add_argument("--n", type=int, default=5)
    e.add_argument("--turns", type=int, default=1,
                   help="attempts per chain with the harness feedback between them (cudaperf.refine_eval); "
                        "> 1 adds pass_by_turn<t> to the summary and writes <stem>_turns.parquet; pass@1 and "
                        "the rest come from the first attempts")
    e.add_argument("--temperature", type=float, default=0.8)
    e.add_argument("--max-new-tokens", type=int, default=1024)
    e.add_argument("--sample-batch", type=int, default=256)
    e.add_argument("--seed", type=int, default=0)
    # How the KV cache is kept, not what is sampled (policy.generation_kwargs): stored samples do not
    # record it. benchmarks/gen_speed.py says which is faster on the GPU at hand. graph by default:
    # on the H100 (session 28) a GRPO checkpoint's 5 x 64 samples took 8 s with it, 147 s with the
    # dynamic cache (a batch decodes as long as its longest sample, and each step is launch-bound).
    e.add_argument("--gen-cache", default="graph", choices=["dynamic", "static", "graph"],
                   help="KV cache of the sampling (graph: cudaperf.fastgen, Qwen3 policies only; dynamic: "
                        "transformers' generate)")
    e.add_argument("--gen-pad-multiple", type=int, default=0,
                   help="left-pad prompts to a multiple of this many tokens (fewer static-cache shapes)")
    e.add_argument("--also-steps", default="", help="earlier checkpoints to evaluate as well, e.g. '20,40' "
                   "(written as <stem>_step<N>.parquet beside the newest's)")
    e.add_argument("--start-samples", default="",
                   help="the SFT start's samples saved by `sample` (same split, tasks, n, temperature, "
                        "max length, seed and model as the run's start_from): only the GRPO checkpoints are sampled")
    s = sub.add_parser("sample", help="sample a policy once on an evaluation split and save the completions")
    s.add_argument("--model", required=True, help="policy folder, e.g. data/models/sft-M-s18")
    s.add_argument("--out", required=True, help="parquet file to write")
    for a in ("--eval-tasks", "--split", "--n", "--temperature", "--max-new-tokens", "--sample-batch", "--seed",
              "--gen-cache", "--gen-pad-multiple"):
        act = next(x for x in e._actions if a in x.option_strings)
        s.add_argument(a, type=act.type, default=act.default, choices=act.choices, help=act.help)
    args = ap.parse_args(argv)
    {"train": train, "eval": evaluate, "sample": sample_policy}[args.cmd](args)


if __name__ == "__main__":
    main()
