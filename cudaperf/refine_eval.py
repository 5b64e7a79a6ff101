"""Multi-turn evaluation of a policy: n chains per task, each up to T attempts with feedback.

Why: GRPO trains multi-turn chains (`cudaperf.rollout`), and Kevin and CUDA Agent report how often
a model gets a kernel right within several turns of execution feedback; a single-turn pass@1 alone
cannot show whether a policy uses the feedback. Held-out evaluations of sessions 21-28 found most
of the GRPO policies' failures to be nvcc errors of the kind that feedback names (an identifier
from another program, a duplicated parameter).

Guarantees of `refine`:
- Attempts are prompted, sampled and judged as the GRPO rollout does it: the task prompt first,
  then `prompts.refine_prompt` with the harness feedback on the attempt before (older turns dropped
  first over `max_prompt_tokens`: `MultiTurnRollout.context`), decoding through
  `MultiTurnRollout.generate`, verdicts only from the harness given.
- One record per attempt: policy-independent fields ``task_id, family, sample, turn, status,
  compiled, correct, pass_rate, speedup, cv, flags, code, error_class, first_error``.
- A chain ends at its first correct attempt (a ``hack:`` flag never counts as correct,
  `metrics.is_correct`) or after `turns` attempts. Turn 1 of every chain is an ordinary sample, so
  the turn-1 records give the same single-turn metrics as a one-turn evaluation.

`pass_by_turn(records, turns)`: for t = 1..T, the share of a task's chains correct at some turn
<= t, averaged over tasks (t = 1: pass@1 of the first attempts).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from cudaperf.config import RewardConfig
from cudaperf.metrics import is_correct
from cudaperf.rewards import extract_code
from cudaperf.tasks import Task


def refine(model, tokenizer, tasks: Sequence[Task], harness: Any, *, n: int, turns: int,
           temperature: float, max_new_tokens: int, max_prompt_tokens: int = 3072, top_p: float = 1.0,
           batch_size: int = 256, gen_cache: str = "graph", seed: int | None = None,
           log: Callable[[str], Any] | None = None) -> list[dict[str, Any]]:
    """Every attempt of n chains per task, at most `turns` each (see the module docstring)."""
    from cudaperf.policy import judged_sample
    from cudaperf.rollout import MultiTurnRollout, _Chain

    if n < 1 or turns < 1:
        raise ValueError(f"n and turns must be >= 1, got n={n}, turns={turns}")
    if seed is not None:
        import torch

        torch.manual_seed(seed)
    ro = MultiTurnRollout(tasks, harness, RewardConfig(), None, turns=turns, max_new_tokens=max_new_tokens,
                          max_prompt_tokens=max_prompt_tokens, temperature=temperature, top_p=top_p,
                          gen_batch_size=batch_size, gen_cache=gen_cache)
    chains = [_Chain(t, j, i * n + j) for i, t in enumerate(tasks) for j in range(n)]
    records: list[dict[str, Any]] = []
    for turn in range(1, turns + 1):
        active = [ch for ch in chains if not ch.done]
        if not active:
            break
        gen = ro.generate(model, tokenizer, [ro.context(ch, tokenizer) for ch in active])
        codes = [extract_code(x) for x in tokenizer.batch_decode([c for _, c in gen], skip_special_tokens=True)]
        results = harness.evaluate_many([(ch.task, c) for ch, c in zip(active, codes)])
        for ch, code, r in zip(active, codes, results):
            rec = {**judged_sample(ch.task, ch.lane, r, code), "turn": turn}
            records.append(rec)
            ch.attempts.append((code, r))
            ch.done = is_correct(rec) or len(ch.attempts) >= turns
        if log is not None:
            ok = sum(is_correct(r) for r in records if r["turn"] == turn)
            log(f"turn {turn}: {len(active)} attempts, {ok} correct")
    return records


def pass_by_turn(records: Sequence[dict[str, Any]], turns: int) -> dict[int, float | None]:
    """{t: share of each task's chains correct by turn t, averaged over tasks} for t = 1..turns;
    None for every t when there are no records."""
    first: dict[str, dict[int, int | None]] = {}  # task -> chain -> first correct turn
    for r in records:
        chains = first.setdefault(r["task_id"], {})
        chains.setdefault(r["sample"], None)
        if is_correct(r) and (chains[r["sample"]] is None or r["turn"] < chains[r["sample"]]):
            chains[r["sample"]] = r["turn"]
    out: dict[int, float | None] = {}
    for t in range(1, turns + 1):
        per_task = [sum(1 for v in ch.values() if v is not None and v <= t) / len(ch) for ch in first.values()]
        out[t] = sum(per_task) / len(per_task) if per_task else None
    return out


__all__ = ["pass_by_turn", "refine"]
