"""Multi-turn rollouts for TRL's GRPOTrainer (`rollout_func`), with discounted per-turn credit.

Guarantees of `MultiTurnRollout.__call__(prompts, trainer)` (TRL's rollout_func contract):
- Returns exactly one row per prompt it was given: ``prompt_ids`` / ``completion_ids`` (token
  ids, completion ends at EOS when the model stopped) and ``logprobs`` None (generation runs in
  the trainer's own model, so no importance correction is needed), plus extra per-row fields
  that TRL forwards to the reward functions: ``task_ids``, ``turn``, ``chain``, ``r_ver``,
  ``r_str``, ``ret_ver``, ``ret_str``, ``eval_result``.
- A row is ONE attempt (one turn). The rows TRL groups together (the copies of one task's
  prompt) are filled by chains of attempts: ``lanes = ceil(group / turns)`` chains run side by
  side; each attempt is evaluated by the harness, the result becomes the next user turn through
  `cudaperf.prompts.refine_prompt`, and the row's prompt is exactly the context the model saw
  (task + earlier attempts + feedback), so the policy gradient is taken on what was sampled.
- Credit: a row's reward is the discounted return of its chain from that turn on,
  ``G_t = r_t + gamma * G_{t+1}`` (per reward component; components are linear so TRL's weighted
  sum of the per-component returns is the return of the weighted reward). Default gamma 0.4:
  an attempt is mostly judged by its own outcome, but an attempt whose feedback leads to a fix
  shares part of the fix's reward (at 0.4 a turn-3 success is worth 0.16 at turn 1, so a chain
  of failures that ends well does not outscore a first-turn success). Group-relative advantages
  then compare all attempts at a task in this step, whatever their turn.
- Per-turn baseline (`turn_baseline`, default on): before TRL's group normalisation, each
  return is centred on the mean return of the same task's attempts at the same turn, so an
  attempt is compared with its peers at that turn and not penalised or favoured for how many
  discounted later terms its position sums. ``ret_*`` are the centred values; ``r_*`` the
  immediate rewards (logged).
- Early stop: a chain ends after `turns` attempts, or earlier once an attempt is correct, not
  flagged and at least `stop_speedup` times faster than the naive variant (further revisions of
  a good kernel mostly spend budget); its lane then starts a fresh chain while the group still
  has rows to fill. Without a GPU nothing is ever "correct" (status 'compiled'), so CPU runs
  never stop early. A chain cut short by the group's row budget is credited over the turns it has.
- Evaluation: each round's attempts go to `Harness.evaluate_many` in one batch (compiles on all
  cores, runs on the harness's evaluation GPUs); the trainer process only generates and
  updates, and runs sequentially, so no timed region overlaps the policy update on the same GPU.
- `StepStats` of the last call (generation / compile / execution seconds, rates, speedups,
  first-correct turns, cache hits) are kept in ``self.last`` for the step logger, with one record
  per attempt (``attempts``: task, chain, turn, verdict, reward components, returns, tokens) and
  where the step's reward spread lay (``signal``, `cudaperf.signalsplit`: between correct and
  not-correct attempts, among correct ones, among failures), computed on the reward TRL's
  advantage sees (``weights``: w_ver, w_str; ``scale_rewards``: TRL's scaling).
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from cudaperf import prompts as P
from cudaperf.config import RewardConfig
from cudaperf.result import EvalResult, correctness_unjudged, is_internal_error
from cudaperf.rewards import extract_code, reward_components
from cudaperf.signalsplit import SCALES, attempt_class, signal_split
from cudaperf.tasks import Task

EXEC_STAGES = ("prepare", "runner_start", "check", "time", "recheck")
# Stages and waits summed per step into the step log (columns s_<key>): where judging time goes,
# the waits for a runner slot and for the GPU lock included (a timing holds the GPU exclusively).
LOGGED_STAGES = EXEC_STAGES + ("compile", "slot_wait", "reference_ahead", "clean_baseline",
                               "lock_wait_shared", "lock_wait_exclusive", "lock_held_exclusive")


def discounted_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """G_t = r_t + gamma * G_{t+1} over one chain's per-turn rewards."""
    out = [0.0] * len(rewards)
    acc = 0.0
    for i in range(len(rewards) - 1, -1, -1):
        acc = float(rewards[i]) + gamma * acc
        out[i] = acc
    return out


def plan_lanes(group: int, turns: int) -> int:
    """Chains run side by side for a group of `group` rows with up to `turns` attempts each."""
    if group < 1 or turns < 1:
        raise ValueError("group and turns must be >= 1")
    return math.ceil(group / turns)


@dataclass
class StepStats:
    rows: int = 0
    generation_s: float = 0.0
    eval_wall_s: float = 0.0
    compile_s: float = 0.0  # summed over candidates (EvalResult.timings)
    execution_s: float = 0.0  # summed over candidates: runner start, checks, timing, recheck
    prepare_s: float = 0.0  # the step's task preparation, run beside the first generation
    prepare_wait_s: float = 0.0  # how long judging then waited for it (inside eval_wall_s)
    schedule_match: float = float("nan")  # 1: the step took the tasks its schedule names; nan: no schedule
    ahead_prepare_s: float = float("nan")  # the previous step's preparation of this step's tasks
    ahead_prepare_busy: float = float("nan")  # 1: that preparation was still running when this step began
    compile_rate: float = 0.0
    correct_rate: float = 0.0
    speedups: list[float] = field(default_factory=list)
    first_correct_turns: list[int] = field(default_factory=list)
    chains: int = 0
    chains_correct: int = 0
    early_stops: int = 0
    cache_hits: int = 0
    cache_lookups: int = 0
    batch_repeats: int = 0  # attempts that repeated another of the same batch (judged once)
    internal_errors: int = 0  # records the harness could not judge (its own error, e.g. no GPU memory)
    released_gb: float = 0.0  # the policy's cached GPU memory handed back before judging (summed over rounds)
    ahead_submitted: int = 0  # attempts handed to the compiler while their batch generated (compileahead)
    ahead_compiled: int = 0  # of those, built before judging
    ahead_dropped: int = 0  # of those, not started by the end of generation (judging compiled them)
    ahead_wait_s: float = 0.0  # generation's end waiting for early compiles still running (in generation_s)
    stage_s: dict[str, float] = field(default_factory=dict)  # LOGGED_STAGES summed over fresh results
    components: dict[str, float] = field(default_factory=dict)
    r_str_paid: float = 0.0
    by_turn: dict[int, dict[str, float]] = field(default_factory=dict)
    signal: dict[str, float] = field(default_factory=dict)  # signalsplit.SignalSplit.to_row()
    attempts: list[dict[str, Any]] = field(default_factory=list)  # one record per row (attempt)


def release_cached_gpu_memory() -> float:
    """Hand the policy's cached but unused GPU blocks back to the driver; returns the GB released.

    PyTorch's allocator keeps what generation and the last update freed (tens of GB for a batch of
    128 long completions) reserved in the trainer's process. The harness's runners judge on the
    same GPU when there is one, and their allocations failed with cudaErrorMemoryAllocation on the
    80 GB H100 in session 22 (a wrong verdict for the candidates in them); the allocator gets its
    blocks back during the next update at the cost of a few cudaMalloc calls."""
    try:
        import torch
    except ImportError:
        return 0.0
    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return 0.0
    before = torch.cuda.memory_reserved()
    torch.cuda.empty_cache()
    return max(0, before - torch.cuda.memory_reserved()) / 2**30


@dataclass
class _Chain:
    task: Task
    lane: int
    cid: int
    attempts: list[tuple[str, EvalResult]] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    done: bool = False


class MultiTurnRollout:
    """TRL rollout_func: chains of attempts, harness feedback between turns (see module doc)."""

    def __init__(self, tasks: Sequence[Task], harness: Any, reward_config: RewardConfig,
                 structural: Any = None, *, turns: int = 3, gamma: float = 0.4,
                 stop_speedup: float = 1.5, max_new_tokens: int = 512,
                 max_prompt_tokens: int = 4096, temperature: float = 1.0, top_p: float = 1.0,
                 gen_batch_size: int = 64, turn_baseline: bool = True, gen_cache: str = "dynamic",
                 gen_pad_multiple: int = 0, compile_ahead_workers: int = 0, prepare_ahead_workers: int = 0,
                 schedule: Any = None, weights: tuple[float, float] = (1.0, 1.0),
                 scale_rewards: str = "group"):
        if turns < 1:
            raise ValueError("turns must be >= 1")
        if scale_rewards not in SCALES:
            raise ValueError(f"scale_rewards must be one of {SCALES}, not {scale_rewards!r}")
        # Only for the step log's signal split: TRL applies the weights and the scaling itself.
        self.weights, self.scale_rewards = (float(weights[0]), float(weights[1])), scale_rewards
        if not 0.0 <= gamma <= 1.0:
            raise ValueError("gamma must be in [0, 1]")
        self.tasks = {t.task_id: t for t in tasks}
        self._by_text: dict[str, Task] = {}
        for t in tasks:
            key = P.task_user_text(t)
            if key in self._by_text:
                raise ValueError(f"tasks {self._by_text[key].task_id} and {t.task_id} have the "
                                 "same prompt; the rollout could not tell them apart")
            self._by_text[key] = t
        self.harness = harness
        self.reward_config = reward_config
        self.structural = structural
        self.turns, self.gamma, self.stop_speedup = turns, gamma, stop_speedup
        self.max_new_tokens, self.max_prompt_tokens = max_new_tokens, max_prompt_tokens
        self.temperature, self.top_p, self.gen_batch_size = temperature, top_p, gen_batch_size
        self.gen_cache = gen_cache
        self.gen_pad_multiple = gen_pad_multiple
        # > 0: compile attempts that have ended while their batch still generates, on this many
        # threads (cudaperf.compileahead); judging then finds the builds in the compile cache.
        self.compile_ahead_workers = compile_ahead_workers
        # With a schedule (cudaperf.schedule.StepSchedule: the trainer's rows in run order) and
        # > 0 workers, the next step's tasks are prepared once this step's are (see rollout()).
        self.prepare_ahead_workers = prepare_ahead_workers
        self.schedule = schedule
        # The last step's lookahead preparation: its thread and how long it took (once done),
        # logged with the step it prepared.
        self._ahead: tuple[threading.Thread, dict[str, float]] | None = None
        self.turn_baseline = turn_baseline
        self.last = StepStats()
        self.__name__ = "multi_turn_rollout"

    # ------------------------------------------------------------------ helpers
    def task_of(self, prompt: Any) -> Task:
        msgs = prompt if isinstance(prompt, list) else [{"role": "user", "content": str(prompt)}]
        users = [m.get("content", "") for m in msgs if isinstance(m, dict) and m.get("role") == "user"]
        if not users or users[0] not in self._by_text:
            raise KeyError("rollout: a prompt matches no task (dataset prompts must come from "
                           "cudaperf.prompts.task_prompt)")
        return self._by_text[users[0]]

    def _stop(self, res: EvalResult) -> bool:
        return (attempt_class(res) == "correct" and res.speedup is not None
                and res.speedup >= self.stop_speedup)

    def context(self, chain: _Chain, tokenizer) -> list[dict]:
        """Messages for the chain's next turn; older turns dropped first when over budget."""
        if not chain.attempts:
            return P.task_prompt(chain.task)
        *hist, (code, res) = chain.attempts
        while True:
            msgs = P.refine_prompt(chain.task, code, res, history=hist)
            if not hist or self._n_tokens(tokenizer, msgs) <= self.max_prompt_tokens:
                return msgs
            hist = hist[1:]

    @staticmethod
    def _n_tokens(tokenizer, msgs) -> int:
        return len(tokenizer.apply_chat_template(msgs, tokenize=True, add_generation_prompt=True))

    def generate(self, model, tokenizer, contexts: Sequence[list[dict]], tasks: Sequence[Task] | None = None,
                 st: StepStats | None = None) -> list[tuple[list[int], list[int]]]:
        """(prompt_ids, completion_ids) per context; sampled with the current policy. With `tasks`
        (the task of each context) and `compile_ahead_workers` > 0, attempts that end before their
        batch are compiled while it generates (counts into `st`)."""
        import torch

        from cudaperf.policy import encode_prompts, generate_tokens, generation_kwargs

        texts = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True)
                 for m in contexts]
        eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
        device = next(model.parameters()).device
        out: list[tuple[list[int], list[int]]] = []
        side = tokenizer.padding_side
        tokenizer.padding_side = "left"
        was_training = model.training
        model.eval()
        try:
            for s in range(0, len(texts), max(1, self.gen_batch_size)):
                enc = encode_prompts(tokenizer, texts[s:s + self.gen_batch_size], device, self.gen_pad_multiple)
                gen = generation_kwargs(tokenizer, self.max_new_tokens, self.temperature, self.top_p,
                                        self.gen_cache)
                ahead = None
                if self.compile_ahead_workers > 0 and tasks is not None and hasattr(self.harness, "compile_ahead"):
                    from transformers import StoppingCriteriaList

                    from cudaperf.compileahead import CompileAhead

                    ahead = CompileAhead(tasks[s:s + self.gen_batch_size], enc["input_ids"].shape[1], tokenizer,
                                         self.harness.compile_ahead, workers=self.compile_ahead_workers)
                    gen["stopping_criteria"] = StoppingCriteriaList([ahead])
                try:
                    with torch.no_grad():
                        seqs = generate_tokens(model, enc, gen)
                finally:
                    if ahead is not None:
                        a = ahead.finish()
                        if st is not None:
                            st.ahead_submitted += a.submitted
                            st.ahead_compiled += a.compiled
                            st.ahead_dropped += a.dropped
                            st.ahead_wait_s += a.seconds
                width = enc["input_ids"].shape[1]
                for row, mask, full in zip(enc["input_ids"], enc["attention_mask"], seqs):
                    p = row[mask.bool()].tolist()
                    c = full[width:].tolist()
                    if eos in c:
                        c = c[:c.index(eos) + 1]
                    else:  # ran out of tokens: drop the right padding only
                        while c and c[-1] == pad:
                            c.pop()
                    out.append((p, c or [eos]))
        finally:
            tokenizer.padding_side = side
            model.train(was_training)
        return out

    def _prepare_beside_generation(self, tasks: list[Task], st: StepStats,
                                   ahead: Sequence[Task] = ()) -> threading.Event | None:
        """Start the harness's per-task work for this step's tasks (the naive variant's build, the
        call shim, the perf-size references: `Harness.prepare`) on a thread, so that it runs on the
        CPU cores that sit idle while the policy generates on the GPU, instead of in front of the
        first candidates of each task when judging starts. Then, on the same thread and with
        `prepare_ahead_workers` threads, the same for `ahead` (the next step's tasks), while this
        step is judged and updated. Only with a GPU: without one nothing runs and the references
        would be wasted work. Returns an event set once this step's tasks are prepared (judging
        waits for it), or None. A failure here is not fatal: judging prepares lazily anyway, and
        reports it."""
        if not getattr(self.harness, "has_gpu", False) or not hasattr(self.harness, "prepare"):
            return None
        done = threading.Event()
        took = {"s": float("nan")}

        def work() -> None:
            t = time.perf_counter()
            try:
                self.harness.prepare(tasks)
            except Exception:  # noqa: BLE001 - judging redoes what is missing and records errors
                pass
            st.prepare_s = time.perf_counter() - t
            done.set()
            if ahead:
                t = time.perf_counter()
                try:
                    self.harness.prepare(ahead, workers=self.prepare_ahead_workers)
                except Exception:  # noqa: BLE001 - the next step prepares its own tasks again
                    pass
                took["s"] = time.perf_counter() - t

        if self._ahead is not None:  # the previous step's lookahead: was it done in time?
            st.ahead_prepare_busy = float(self._ahead[0].is_alive())
            st.ahead_prepare_s = self._ahead[1]["s"]  # nan while it still runs
        th = threading.Thread(target=work, name="rollout-prepare", daemon=True)
        th.start()
        self._ahead = (th, took) if ahead else None
        return done

    def close(self, timeout_s: float = 120.0) -> None:
        """Wait (up to timeout_s) for the last step's lookahead preparation, so that the harness
        can be closed after it instead of under it."""
        if self._ahead is not None:
            self._ahead[0].join(timeout_s)
            self._ahead = None

    def _next_tasks(self, trainer, prompts: list, st: StepStats) -> list[Task]:
        """The next step's tasks by the schedule, when this step took the tasks the schedule names
        for it (TRL's global_step counts the steps done, so it is this step's 0-based index)."""
        if self.schedule is None or not self.prepare_ahead_workers:
            return []
        step = int(getattr(getattr(trainer, "state", None), "global_step", -1))
        rank = int(getattr(getattr(trainer, "accelerator", None), "process_index", 0))
        now = {self.task_of(p).task_id for p in prompts}
        st.schedule_match = float(now == set(self.schedule.tasks_at(step, rank)))
        if not st.schedule_match:
            return []
        return [self.tasks[i] for i in dict.fromkeys(self.schedule.tasks_at(step + 1, rank)) if i in self.tasks]

    # ------------------------------------------------------------------ TRL entry point
    def __call__(self, prompts: list, trainer) -> dict[str, list]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        tok = trainer.processing_class
        st = StepStats()
        return self.rollout(model, tok, prompts, ahead=self._next_tasks(trainer, prompts, st), st=st)

    def rollout(self, model, tok, prompts: list, ahead: Sequence[Task] = (),
                st: StepStats | None = None) -> dict[str, list]:
        st = st if st is not None else StepStats()
        store = getattr(self.harness, "store", None)
        h0 = (store.hits, store.misses) if store is not None else (0, 0)
        # Rows of one task: TRL repeats each prompt num_generations times.
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(prompts):
            groups.setdefault(self.task_of(p).task_id, []).append(i)
        n = len(prompts)
        rows: list[dict[str, Any] | None] = [None] * n
        free = {tid: list(ix) for tid, ix in groups.items()}  # row slots not yet filled
        lanes: list[_Chain] = []
        chains: list[_Chain] = []
        cid = 0
        for tid, ix in groups.items():
            for lane in range(plan_lanes(len(ix), self.turns)):
                lanes.append(_Chain(self.tasks[tid], lane, cid))
                cid += 1
        chains.extend(lanes)
        prep = self._prepare_beside_generation([self.tasks[tid] for tid in groups], st,
                                               [t for t in ahead if t.task_id not in groups])
        while True:
            active = []
            # A task's lanes share its rows: when fewer rows are left than lanes (group not a
            # multiple of turns, e.g. 8 rows in chains of 3), only that many lanes go this round.
            left = {tid: len(ix) for tid, ix in free.items()}
            for k, ch in enumerate(lanes):
                tid = ch.task.task_id
                if not left[tid]:
                    continue
                left[tid] -= 1
                if ch.done:  # start a fresh chain on this lane
                    ch = _Chain(ch.task, ch.lane, cid)
                    cid += 1
                    lanes[k] = ch
                    chains.append(ch)
                active.append(ch)
            if not active:
                break
            ctx = [self.context(ch, tok) for ch in active]
            t = time.perf_counter()
            gen = self.generate(model, tok, ctx, tasks=[ch.task for ch in active], st=st)
            st.generation_s += time.perf_counter() - t
            texts = tok.batch_decode([c for _, c in gen], skip_special_tokens=True)
            codes = [extract_code(x) for x in texts]
            t = time.perf_counter()
            if prep is not None:
                prep.wait()
                prep = None
                st.prepare_wait_s = time.perf_counter() - t
            if getattr(self.harness, "has_gpu", False):
                st.released_gb += release_cached_gpu_memory()
            results = self.harness.evaluate_many([(ch.task, c) for ch, c in zip(active, codes)])
            st.eval_wall_s += time.perf_counter() - t
            r_str = self._structural(texts, active, results)
            for ch, (pids, cids), code, res, rs in zip(active, gen, codes, results, r_str):
                slot = free[ch.task.task_id].pop(0)
                comps = reward_components(res, self.reward_config)
                rows[slot] = {"prompt_ids": pids, "completion_ids": cids, "task_id": ch.task.task_id,
                              "turn": len(ch.attempts) + 1, "chain": ch.cid, "result": res,
                              "comps": comps, "r_str": rs}
                ch.attempts.append((code, res))
                ch.rows.append(slot)
                if len(ch.attempts) >= self.turns:
                    ch.done = True
                elif self._stop(res):
                    ch.done = True
                    st.early_stops += 1
        self._credit(rows, chains)
        self._stats(st, rows, chains, store, h0)
        self.last = st
        return {
            "prompt_ids": [r["prompt_ids"] for r in rows],
            "completion_ids": [r["completion_ids"] for r in rows],
            "logprobs": None,
            "turn": [r["turn"] for r in rows],
            "chain": [r["chain"] for r in rows],
            "r_ver": [r["comps"]["r_ver"] for r in rows],
            "r_str": [r["r_str"] for r in rows],
            "ret_ver": [r["ret_ver"] for r in rows],
            "ret_str": [r["ret_str"] for r in rows],
            "eval_result": [r["result"].to_dict() for r in rows],
        }

    def _structural(self, texts, active, results) -> list[float | None]:
        if self.structural is None:
            return [None] * len(texts)
        return self.structural(None, texts, task_id=[ch.task.task_id for ch in active],
                               results=results)

    def _credit(self, rows, chains) -> None:
        for ch in chains:
            rv = [rows[i]["comps"]["r_ver"] for i in ch.rows]
            # A closed R_str gate pays nothing at that turn; later turns still count.
            rs = [rows[i]["r_str"] or 0.0 for i in ch.rows]
            for i, gv, gs in zip(ch.rows, discounted_returns(rv, self.gamma),
                                 discounted_returns(rs, self.gamma)):
                rows[i]["ret_ver"] = gv
                rows[i]["ret_str"] = gs if self.structural is not None else None
        if self.turn_baseline:
            # An earlier turn sums more discounted terms than a later one, so within one group
            # its return differs by position alone; compare each attempt with its task's other
            # attempts at the same turn instead. A lone attempt at a turn has no peer: 0.
            cells: dict[tuple, list[int]] = {}
            for i, r in enumerate(rows):
                cells.setdefault((r["task_id"], r["turn"]), []).append(i)
            for ix in cells.values():
                for key in ("ret_ver", "ret_str"):
                    if rows[ix[0]][key] is None:
                        continue
                    vals = [rows[i][key] for i in ix]
                    m = sum(vals) / len(vals)
                    # Equal returns must centre to exactly 0: float residue would become a
                    # "signal" once TRL divides by a near-zero std, and Adam would follow it.
                    same = max(vals) - min(vals) <= 1e-9 * max(1.0, abs(m))
                    for i in ix:
                        rows[i][key] = 0.0 if same else rows[i][key] - m

    def _stats(self, st: StepStats, rows, chains, store, h0) -> None:
        res = [r["result"] for r in rows]
        st.rows = len(rows)
        # A result served from the store carries the timings of its first evaluation; this
        # step spent none of that time.
        fresh = [r for r in res if not r.cached]
        st.stage_s = {k: sum(float(r.timings.get(k, 0.0)) for r in fresh) for k in LOGGED_STAGES}
        st.compile_s = st.stage_s["compile"]
        st.execution_s = sum(st.stage_s[k] for k in EXEC_STAGES)
        st.batch_repeats = sum(r.timings.get("batch_repeat", 0.0) > 0 for r in res)
        st.internal_errors = sum(is_internal_error(r.message) for r in res)
        st.compile_rate = sum(bool(r.compiled) for r in res) / max(1, len(res))
        classes = [attempt_class(r) for r in res]
        ok = [c == "correct" for c in classes]
        # NaN, not 0, when a compiled attempt was never judged (no GPU): the rate is unknown.
        st.correct_rate = float("nan") if correctness_unjudged(res) else sum(ok) / max(1, len(res))
        st.speedups = [float(r.speedup) for r, k in zip(res, ok) if k and r.speedup]
        chains = [c for c in chains if c.rows]
        st.chains = len(chains)
        for ch in chains:
            turns = [rows[i]["turn"] for i in ch.rows if ok[i]]
            if turns:
                st.chains_correct += 1
                st.first_correct_turns.append(min(turns))
        keys = ("r_comp", "r_corr", "r_speed", "r_cv", "r_ver")
        st.components = {k: sum(r["comps"][k] for r in rows) / len(rows) for k in keys}
        paid = [r["r_str"] for r in rows if r["r_str"] is not None]
        st.r_str_paid = len(paid) / len(rows)
        st.components["r_str"] = sum(paid) / len(paid) if paid else float("nan")
        by: dict[int, list[dict]] = {}
        for r in rows:
            by.setdefault(r["turn"], []).append(r)
        st.by_turn = {t: {"n": len(v), "r_ver": sum(x["comps"]["r_ver"] for x in v) / len(v),
                          "compile_rate": sum(bool(x["result"].compiled) for x in v) / len(v)}
                      for t, v in sorted(by.items())}
        if store is not None:
            st.cache_hits = store.hits - h0[0]
            st.cache_lookups = st.cache_hits + store.misses - h0[1]
        st.signal = signal_split(((r["task_id"], self._advantage_reward(r), c) for r, c in zip(rows, classes)),
                                 self.scale_rewards).to_row()
        st.attempts = [self._attempt_record(r, c) for r, c in zip(rows, classes)]

    def _advantage_reward(self, row: dict) -> float:
        """The row's reward as TRL sums it before its group normalisation (a None R_str is
        skipped, as TRL's nansum does)."""
        w_ver, w_str = self.weights
        return w_ver * row["ret_ver"] + (w_str * row["ret_str"] if row["ret_str"] is not None else 0.0)

    @staticmethod
    def _attempt_record(row: dict, cls: str) -> dict[str, Any]:
        res = row["result"]
        return {"task_id": row["task_id"], "chain": row["chain"], "turn": row["turn"], "class": cls,
                "status": res.status, "pass_rate": res.pass_rate, "speedup": res.speedup, "cv": res.cv,
                "cv_robust": res.cv_robust, "rep_ms": list(res.rep_ms),
                "flags": ",".join(res.flags), "cached": bool(res.cached),
                **{k: row["comps"][k] for k in ("r_comp", "r_corr", "r_speed", "r_cv", "r_ver")},
                "r_str": row["r_str"], "ret_ver": row["ret_ver"], "ret_str": row["ret_str"],
                "prompt_tokens": len(row["prompt_ids"]), "completion_tokens": len(row["completion_ids"])}


class TurnReturn:
    """TRL reward function returning the rollout's discounted return of one component.

    ``TurnReturn("ver")`` reads the ``ret_ver`` column the rollout attached to every row; weight
    it with GRPOConfig.reward_weights (w_ver / w_str of the profile). None where the component
    does not apply (no ranker: R_str absent).
    """

    def __init__(self, component: str):
        if component not in ("ver", "str"):
            raise ValueError("component must be 'ver' or 'str'")
        self.component = component
        self.__name__ = f"R_{component}"

    def __call__(self, prompts, completions, completion_ids=None, log_metric=None, **kw) -> list:
        key = f"ret_{self.component}"
        if key not in kw:
            raise KeyError(f"{self.__name__}: no '{key}' column; use it with MultiTurnRollout")
        vals = list(kw[key])
        imm = kw.get(f"r_{self.component}")
        if log_metric is not None and imm is not None:
            paid = [v for v in imm if v is not None]
            if paid:
                log_metric(f"reward/immediate_r_{self.component}", sum(paid) / len(paid))
        return [None if v is None else float(v) for v in vals]


__all__ = ["EXEC_STAGES", "MultiTurnRollout", "StepStats", "TurnReturn", "discounted_returns",
           "plan_lanes"]
