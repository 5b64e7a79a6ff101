"""Multi-process GRPO launched the standard way (accelerate), a few steps, weights checked per rank.

Issue 10's third item. Every rank runs `cudaperf.grpo.run_grpo` with the same profile (TRL's
GRPOTrainer shards the batch and all-reduces the gradients); each rank measures how far its own
copy of the policy moved (max |w_after - w_before|) and writes <out>/rank<r>.json. The step logs go
to <out>/rank<r>/ so the ranks never write the same file; checkpoints go to runs/grpo/<run>
(saved by the main process, as the Trainer does).

    accelerate launch --num_processes 2 benchmarks/grpo_multi.py --profile mini --steps 2 --out $OUT/multi
    torchrun --nproc_per_node 2 benchmarks/grpo_multi.py --profile smoke --steps 2 --out /tmp/multi --check

On CPU (torchrun's environment; accelerate's own launcher starts only one CPU process without MPI;
gloo backend) this runs the smoke profile's tiny model with compile-only rewards on the shortest dev
task (saxpy, on every rank), with R_str from the synthetic ranker (as tests/test_grpo.py's smoke run); the same trainer
code path is what runs on the GPUs with the mini profile. `--check` (rank 0, after the others wrote) exits 1 unless
every rank reports a weight change > 0 and the same number of steps.
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="smoke", choices=["smoke", "mini", "paper"])
    ap.add_argument("--run", default="multi-rank")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--ablation", default="both", choices=["both", "ver_only", "str_only"],
                    help="reward ablation; with compile-only rewards (CPU) R_ver alone can be the same for a "
                         "whole group, which gives GRPO no gradient")
    ap.add_argument("--ranker", default="", help="saved ranker for R_str (default: cudaperf.ranker.reward_model)")
    ap.add_argument("--temperature", type=float, default=None, help="rollout temperature (default: the profile's)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--check", action="store_true", help="fail unless every rank's weights moved")
    a = ap.parse_args(argv)
    from accelerate import PartialState

    from cudaperf import grpo
    from cudaperf.families import verified_tasks

    from cudaperf.ranker import reward_model

    import torch

    # cpu=True is how accelerate takes torchrun's WORLD_SIZE on a machine without GPUs (gloo);
    # the Trainer then joins this process group
    state = PartialState(cpu=not torch.cuda.is_available())
    ranker = a.ranker or str(reward_model(ROOT / "data/ranker") or "")
    rank, world = state.process_index, state.num_processes
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    structural, tasks = None, verified_tasks()
    over = {"steps": a.steps, "ablation": a.ablation, "ranker_path": ranker, "time_budget_s": 0.0}
    if a.temperature is not None:
        over["temperature"] = a.temperature
    if a.profile == "smoke":
        # As tests/test_grpo.py's smoke run: the shortest dev task, saxpy, on every rank (its warm
        # start makes the tiny policy emit near-copies of real kernels) and R_str from the synthetic
        # ranker with the gate 'always', so rewards differ within a group and the update has a
        # gradient. Not one task per rank: warm-started on two tasks, the tiny policy wrote text
        # without code for both, whose structural scores all tie (three steps without a gradient in
        # session 26's CI and again on session 27's machine; session 25's CI had had reward spread).
        from cudaperf.config import get_profile
        from cudaperf.devtasks import dev_tasks
        from cudaperf.structural import StructuralReward

        tasks = sorted(dev_tasks(), key=lambda t: sum(len(v.source) for v in t.variants))[:1]
        structural = StructuralReward({t.task_id: t for t in tasks}, grpo.synthetic_ranker(),
                                      get_profile("smoke").reward)
        over.update(tasks_per_step=1, max_tasks=1, ranker_path="")
    else:
        # every rank needs its own prompts each step: at least tasks_per_step x ranks tasks
        base = grpo.GRPOSettings.for_profile(a.profile)
        if base.max_tasks:
            over["max_tasks"] = max(base.max_tasks, base.tasks_per_step * world)
    s = grpo.GRPOSettings.for_profile(a.profile, **over)
    t0 = time.perf_counter()
    res = grpo.run_grpo(a.run, a.profile, tasks=tasks, settings=s, root=ROOT, resume=False, structural=structural,
                        data_dir=str(out / f"rank{rank}"), runs_dir=str(out / "runs"))
    rec = {"rank": rank, "world_size": world, "device": str(state.device), "steps": res.steps_done,
           "max_weight_change": res.max_param_change, "seconds": round(time.perf_counter() - t0, 1),
           "backend": str(state.backend), "pid": os.getpid(),
           # per step: 1 when this rank took the tasks cudaperf.schedule names for it (what the
           # next-step preparation relies on), nan when the schedule is off
           "schedule_match": [float(x) for x in res.log.get("schedule_match", [])] if res.log is not None else []}
    (out / f"rank{rank}.json").write_text(json.dumps(rec, indent=1))
    print(json.dumps(rec), flush=True)
    state.wait_for_everyone()
    if rank == 0:
        recs = [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]
        ok = all((r["max_weight_change"] or 0) > 0 for r in recs) and len({r["steps"] for r in recs}) == 1
        summary = {"world_size": world, "ranks": recs, "every_rank_updated": ok}
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        print(f"{world} ranks, steps {[r['steps'] for r in recs]}, max weight change "
              f"{[r['max_weight_change'] for r in recs]}: {'every rank updated' if ok else 'NOT every rank updated'}",
              flush=True)
        if a.check and not ok:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
