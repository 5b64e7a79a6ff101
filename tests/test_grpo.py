"""cudaperf.grpo / cudaperf.rollout: settings, credit, multi-turn rollouts, and the smoke run.

The smoke run (`test_smoke_grpo_*`) is the real entry point (`run_grpo`) with a tiny budget:
real nvcc compilation through the harness, compile-only R_ver (no GPU), TRL's GRPOTrainer.

Why its rewards are not all equal (if they were, GRPO's group-relative advantages would be zero
and nothing would move): a freshly initialised tiny policy emits token soup, which never
compiles (R_ver = -3 for all) and never parses (identical static features, so identical R_str).
The smoke profile therefore (1) warm-starts the tiny policy with a short high-learning-rate SFT
on the task's own short variants, so sampled attempts are mutated near-copies of real kernels,
and (2) pays R_str from a linear ranker trained on SYNTHETIC pairs (`grpo.synthetic_ranker`,
same code path as a measured ranker) with the gate 'always', so partly broken kernels get
graded structural scores. The test asserts both halves of "it learned": TRL logged a group with
non-zero reward spread, and the weights moved (weight decay is 0, so only gradients move them).
"""
from __future__ import annotations

import time
from dataclasses import replace

import pandas as pd
import pytest

from cudaperf import grpo, prompts
from cudaperf.config import RewardConfig, get_profile
from cudaperf.devtasks import dev_tasks
from cudaperf.result import EvalResult
from cudaperf.rollout import MultiTurnRollout, TurnReturn, discounted_returns, plan_lanes


# --------------------------------------------------------------------------- pure parts


def test_discounted_returns_is_the_recursion():
    assert discounted_returns([1.0, 2.0, 4.0], 0.5) == pytest.approx([1 + 0.5 * 2 + 0.25 * 4, 2 + 0.5 * 4, 4])
    assert discounted_returns([-3.0, -3.0], 0.0) == [-3.0, -3.0]
    assert discounted_returns([], 0.4) == []


def test_lanes_cover_the_group_in_about_T_rounds():
    assert plan_lanes(8, 1) == 8
    assert plan_lanes(8, 3) == 3
    assert plan_lanes(4, 2) == 2
    with pytest.raises(ValueError):
        plan_lanes(0, 3)


def test_settings_profiles_overrides_and_ablation_weights():
    s = grpo.GRPOSettings.for_profile("mini")
    assert s.turns == 3 and s.group_size == 8 and s.tasks_per_step == 16
    with pytest.raises(ValueError, match="unknown GRPOSettings"):
        grpo.GRPOSettings.for_profile("smoke", nope=1)
    with pytest.raises(ValueError, match="ablation"):
        grpo.GRPOSettings.for_profile("smoke", ablation="neither")
    rc = RewardConfig(w_ver=1.0, w_str=0.5)
    assert grpo.reward_weights(replace(s, ablation="both"), rc) == (1.0, 0.5)
    assert grpo.reward_weights(replace(s, ablation="ver_only"), rc) == (1.0, 0.0)
    assert grpo.reward_weights(replace(s, ablation="str_only"), rc) == (0.0, 0.5)
    assert all(r["help"] for r in grpo.describe_settings(s))


def test_run_reward_config_applies_the_runs_overrides_only():
    from cudaperf.result import EvalResult
    from cudaperf.rewards import reward_components

    base = RewardConfig()
    s = grpo.GRPOSettings.for_profile("mini")
    assert grpo.run_reward_config(base, s) == base  # no override: DESIGN's coefficients
    low = grpo.run_reward_config(base, replace(s, alpha_speed=0.25, str_gate="compiled"))
    assert (low.alpha_speed, low.str_gate) == (0.25, "compiled")
    assert (low.alpha_comp, low.alpha_wrong, low.s_max) == (base.alpha_comp, base.alpha_wrong, base.s_max)
    assert grpo.run_reward_config(base, replace(s, alpha_speed=0.0)).alpha_speed == 0.0  # 0 is a setting
    fast = EvalResult("t", "h", status="correct", compiled=True, correct=True, pass_rate=1.0, speedup=4.0, cv=0.0)
    assert fast.rewardable_speed
    assert reward_components(fast, base)["r_speed"] == 2.0 and reward_components(fast, low)["r_speed"] == 0.5


def test_eval_gpu_is_its_own_with_two_or_more():
    s = grpo.GRPOSettings.for_profile("mini")
    assert grpo.eval_gpus(s, n_gpus=1) == "all"
    assert grpo.eval_gpus(s, n_gpus=2) == "1"
    assert grpo.eval_gpus(s, n_gpus=4) == "3"
    assert grpo.eval_gpus(replace(s, eval_gpu="0"), n_gpus=4) == "0"


def test_ablation_needing_r_str_refuses_to_run_without_a_ranker():
    with pytest.raises(ValueError, match="needs R_str"):
        grpo.build_trainer(None, None, dev_tasks()[:1], grpo.GRPOSettings.for_profile("smoke"),
                           get_profile("smoke"), "unused", structural=None, harness=object())


def test_turn_return_reads_the_rollout_column():
    f = TurnReturn("ver")
    assert f(None, ["a", "b"], ret_ver=[1.0, -2.0]) == [1.0, -2.0]
    with pytest.raises(KeyError):
        f(None, ["a"])


# --------------------------------------------------------------------------- rollout logic


class ScriptedHarness:
    """Stands in for the GPU: the first attempt of lane 0 at each task is correct and 3x faster,
    every other attempt compiles but is wrong. Records what it was asked."""

    store = None

    def __init__(self):
        self.calls: list[list[str]] = []

    def evaluate_many(self, items):
        self.calls.append([t.task_id for t, _ in items])
        out = []
        seen: set[str] = set()
        for t, code in items:
            first = len(self.calls) == 1 and t.task_id not in seen
            seen.add(t.task_id)
            if first:
                out.append(EvalResult(t.task_id, "h", status="correct", compiled=True, pass_rate=1.0,
                                      correct=True, speedup=3.0, cv=0.0, runtime_ms=1.0,
                                      timings={"compile": 0.5, "check": 0.1, "time": 0.2}))
            else:
                out.append(EvalResult(t.task_id, "h", status="wrong", compiled=True, pass_rate=0.5,
                                      correct=False, timings={"compile": 0.5, "check": 0.1},
                                      failures=[{"test": "odd", "sizes": {"n": 1003}, "reason": "mismatch",
                                                 "param": "y", "summary": "SCRIPTED-MISMATCH"}]))
        return out


@pytest.fixture(scope="module")
def tiny():
    from cudaperf import policy

    tasks = dev_tasks()
    tok = policy.get_tokenizer(policy.PolicyConfig.for_profile("smoke"), tasks)
    return policy.build_model("tiny", tok), tok, tasks


# "graph": cudaperf.fastgen, the mini profile's rollout decoding since session 28 (run here without a
# CUDA graph); multi-turn rollouts had only run through transformers' generate.
@pytest.mark.parametrize("cache", ["dynamic", "graph"])
def test_rollout_chains_feedback_early_stop_and_credit(tiny, cache, monkeypatch):
    from cudaperf import fastgen

    model, tok, tasks = tiny
    tasks = tasks[:2]
    decoded = []
    real = fastgen.generate
    monkeypatch.setattr(fastgen, "generate", lambda *a, **k: decoded.append(1) or real(*a, **k))
    h = ScriptedHarness()
    rc = RewardConfig()
    ro = MultiTurnRollout(tasks, h, rc, None, turns=3, gamma=0.5, stop_speedup=2.0, max_new_tokens=8,
                          turn_baseline=False, gen_cache=cache)
    group = 6
    batch = [prompts.task_prompt(t) for t in tasks for _ in range(group)]
    out = ro.rollout(model, tok, batch)
    n = len(batch)
    assert all(len(out[k]) == n for k in ("prompt_ids", "completion_ids", "turn", "ret_ver", "eval_result"))
    # Each row stays in its task's slots (TRL groups rows by position).
    for i, r in enumerate(out["eval_result"]):
        assert r["task_id"] == tasks[i // group].task_id
    # lanes = ceil(6/3) = 2; lane 0 stops after its correct, fast first attempt and restarts.
    assert ro.last.early_stops == 2 and ro.last.chains_correct == 2
    assert ro.last.first_correct_turns == [1, 1]
    assert max(out["turn"]) == 3
    assert (len(decoded) >= 3) == (cache == "graph") and (not decoded) == (cache == "dynamic")  # once a turn
    # Later turns were prompted with the harness feedback of the attempt before.
    later = [tok.decode(p) for p, t in zip(out["prompt_ids"], out["turn"]) if t > 1]
    assert later and all("SCRIPTED-MISMATCH" in x and prompts.REVISE in x for x in later)
    first = [tok.decode(p) for p, t in zip(out["prompt_ids"], out["turn"]) if t == 1]
    assert all("SCRIPTED-MISMATCH" not in x for x in first)
    # Returns are the discounted sums along each chain.
    by_chain: dict[int, list[int]] = {}
    for i, c in enumerate(out["chain"]):
        by_chain.setdefault(c, []).append(i)
    for ix in by_chain.values():
        ix.sort(key=lambda i: out["turn"][i])
        want = discounted_returns([out["r_ver"][i] for i in ix], 0.5)
        assert [out["ret_ver"][i] for i in ix] == pytest.approx(want)
    assert ro.last.correct_rate == pytest.approx(2 / n)
    assert ro.last.compile_s == pytest.approx(0.5 * n)
    # Per-stage sums for the step log: the scripted records time check 0.1 s and time 0.2 s.
    assert ro.last.stage_s["compile"] == pytest.approx(0.5 * n)
    assert ro.last.stage_s["lock_wait_exclusive"] == 0.0 and ro.last.batch_repeats == 0
    assert ro.last.internal_errors == 0 and ro.last.released_gb == 0.0  # no GPU here: nothing to release


def test_rollout_logs_each_attempt_and_where_the_reward_spread_lay(tiny):
    """One task, 4 attempts in one turn: the first is correct (3x), the rest equally wrong, so all
    of the group's spread lies between correct and not-correct attempts (signalsplit)."""
    model, tok, tasks = tiny
    ro = MultiTurnRollout(tasks[:1], ScriptedHarness(), RewardConfig(), None, turns=1, max_new_tokens=8,
                          weights=(2.0, 1.0))
    out = ro.rollout(model, tok, [prompts.task_prompt(tasks[0])] * 4)
    st = ro.last
    assert st.signal["signal_groups"] == 1 and st.signal["signal_mixed"] == 1
    assert st.signal["signal_correct"] == pytest.approx(1.0) and st.signal["signal_speed"] == 0.0
    assert len(st.attempts) == 4
    assert [a["class"] for a in st.attempts] == ["correct", "wrong", "wrong", "wrong"]
    a = st.attempts[0]
    assert a["task_id"] == tasks[0].task_id and a["turn"] == 1 and a["speedup"] == 3.0
    assert a["r_ver"] == out["r_ver"][0] and a["ret_ver"] == out["ret_ver"][0] and a["r_str"] is None
    assert a["completion_tokens"] == len(out["completion_ids"][0]) > 0
    row = grpo.step_row(1, st, 1.0, {})
    assert row["signal_correct"] == pytest.approx(1.0) and row["signal_zero_spread"] == 0
    with pytest.raises(ValueError, match="scale_rewards"):
        MultiTurnRollout(tasks[:1], ScriptedHarness(), RewardConfig(), None, scale_rewards="rank")


def test_rollout_counts_records_the_harness_could_not_judge(tiny):
    """A record the harness could not judge (its own error, such as a runner that found no free GPU
    memory) is counted in the step log, so a run can tell harness trouble from bad attempts."""
    from cudaperf.result import INTERNAL_ERROR

    model, tok, tasks = tiny

    class Failing(ScriptedHarness):
        def evaluate_many(self, items):
            out = super().evaluate_many(items)
            out[0].status, out[0].correct = "crashed", False
            out[0].message = f"{INTERNAL_ERROR}: RuntimeError: runner init failed: err cudaErrorMemoryAllocation"
            return out

    ro = MultiTurnRollout(tasks[:1], Failing(), RewardConfig(), None, turns=1, max_new_tokens=8)
    ro.rollout(model, tok, [prompts.task_prompt(tasks[0])] * 3)
    assert ro.last.internal_errors == 1
    assert grpo.step_row(1, ro.last, 1.0, {})["internal_errors"] == 1


def test_turn_baseline_centres_returns_per_task_and_turn(tiny):
    model, tok, tasks = tiny
    ro = MultiTurnRollout(tasks[:1], ScriptedHarness(), RewardConfig(), None, turns=2, gamma=0.4,
                          stop_speedup=99.0, max_new_tokens=8, turn_baseline=True)
    out = ro.rollout(model, tok, [prompts.task_prompt(tasks[0])] * 4)
    for t in (1, 2):
        vals = [v for v, tt in zip(out["ret_ver"], out["turn"]) if tt == t]
        assert sum(vals) == pytest.approx(0.0, abs=1e-9)
    assert len(set(round(v, 6) for v in out["ret_ver"])) > 1  # the correct chain stands out


def test_rollout_fills_a_group_that_is_not_a_multiple_of_the_turns(tiny):
    """8 rows in chains of 3 (the mini profile's group and turns): 3 lanes, rows for 3 + 3 + 2
    attempts. Session 30's first multi-turn GRPO step on a GPU failed here (IndexError: the last
    round started 3 lanes for 2 rows)."""
    model, tok, tasks = tiny
    h = ScriptedHarness()
    ro = MultiTurnRollout(tasks[:2], h, RewardConfig(), None, turns=3, gamma=0.5, stop_speedup=99.0,
                          max_new_tokens=8)
    batch = [prompts.task_prompt(t) for t in tasks[:2] for _ in range(8)]
    out = ro.rollout(model, tok, batch)
    assert len(out["turn"]) == 16 and all(r is not None for r in out["eval_result"])
    for i, r in enumerate(out["eval_result"]):
        assert r["task_id"] == tasks[i // 8].task_id
    assert [len(c) for c in h.calls] == [6, 6, 4]  # per round: 3 + 3 lanes, then 2 + 2
    for k in range(2):
        assert sorted(out["turn"][8 * k:8 * k + 8]) == [1, 1, 1, 2, 2, 2, 3, 3]
    assert ro.last.chains == 6


def test_rollout_rejects_prompts_of_unknown_tasks(tiny):
    model, tok, tasks = tiny
    ro = MultiTurnRollout(tasks[:1], ScriptedHarness(), RewardConfig(), None, max_new_tokens=4)
    with pytest.raises(KeyError):
        ro.rollout(model, tok, [prompts.task_prompt(tasks[1])])


class PreparingHarness(ScriptedHarness):
    """A GPU harness whose per-task preparation takes a while: it must run beside generation,
    finish before judging, and be asked for exactly the step's tasks."""

    has_gpu = True

    def __init__(self, fail: bool = False):
        super().__init__()
        self.prepared: list[str] = []
        self.prep_calls: list[tuple[list[str], int]] = []  # (task ids, workers) of every prepare call
        self.fail = fail
        self.prep_done_at = None
        self.eval_at = None

    def prepare(self, tasks, workers=0):
        self.prep_calls.append((sorted(t.task_id for t in tasks), workers))
        if self.prep_calls[-1][0] != self.prepared and len(self.prep_calls) > 1:
            return {}  # the lookahead (next step's tasks): quick, and not what this step waits for
        time.sleep(0.3)
        self.prepared = sorted(t.task_id for t in tasks)
        self.prep_done_at = time.perf_counter()
        if self.fail:
            raise RuntimeError("nvcc is gone")
        return {}

    def evaluate_many(self, items):
        if self.eval_at is None:
            self.eval_at = time.perf_counter()
        return super().evaluate_many(items)


@pytest.mark.parametrize("fail", [False, True])
def test_rollout_prepares_the_step_tasks_beside_generation(tiny, fail):
    model, tok, tasks = tiny
    tasks = tasks[:2]
    h = PreparingHarness(fail=fail)
    ro = MultiTurnRollout(tasks, h, RewardConfig(), None, turns=1, max_new_tokens=4)
    out = ro.rollout(model, tok, [prompts.task_prompt(t) for t in tasks for _ in range(2)])
    assert h.prepared == sorted(t.task_id for t in tasks)
    assert h.prep_done_at <= h.eval_at  # judging waited for it
    st = ro.last
    assert st.prepare_s >= 0.3 and 0.0 <= st.prepare_wait_s <= st.eval_wall_s
    assert len(out["eval_result"]) == 4  # a failed preparation does not stop the step
    # No GPU: nothing is prepared (the references would be wasted work).
    h2 = ScriptedHarness()
    ro2 = MultiTurnRollout(tasks, h2, RewardConfig(), None, turns=1, max_new_tokens=4)
    ro2.rollout(model, tok, [prompts.task_prompt(tasks[0])])
    assert ro2.last.prepare_s == 0.0


class FakeTrainer:
    """What MultiTurnRollout.__call__ reads from TRL's trainer."""

    def __init__(self, model, tok, step: int, rank: int = 0):
        from types import SimpleNamespace

        self.model, self.processing_class = model, tok
        self.state = SimpleNamespace(global_step=step)
        self.accelerator = SimpleNamespace(process_index=rank, unwrap_model=lambda m: m)


def test_rollout_prepares_the_next_steps_tasks_by_the_schedule(tiny):
    from cudaperf.schedule import StepSchedule

    model, tok, tasks = tiny
    tasks = tasks[:4]
    a, b, c, d = (t.task_id for t in tasks)
    h = PreparingHarness()
    ro = MultiTurnRollout(tasks, h, RewardConfig(), None, turns=1, max_new_tokens=4,
                          prepare_ahead_workers=3, schedule=StepSchedule((a, b, c, d), tasks_per_step=2))
    step_prompts = lambda ts: [prompts.task_prompt(t) for t in ts for _ in range(2)]  # noqa: E731
    ro(step_prompts(tasks[:2]), FakeTrainer(model, tok, step=0))
    time.sleep(0.2)  # the lookahead thread outlives the step
    assert h.prep_calls[0] == (sorted([a, b]), 0)  # this step's tasks, on every core
    assert h.prep_calls[1] == (sorted([c, d]), 3)  # then step 1's, on the lookahead's threads
    assert ro.last.schedule_match == 1.0
    ro(step_prompts(tasks[2:]), FakeTrainer(model, tok, step=1))
    assert ro.last.schedule_match == 1.0 and ro.last.ahead_prepare_busy == 0.0
    assert ro.last.ahead_prepare_s >= 0.0
    assert len(h.prep_calls) == 3  # the last step of the schedule: nothing after it to prepare
    # tasks the schedule does not name for this step (another sampler order): no lookahead
    n = len(h.prep_calls)
    ro(step_prompts(tasks[:2]), FakeTrainer(model, tok, step=1))
    assert ro.last.schedule_match == 0.0 and len(h.prep_calls) == n + 1


def test_rollout_close_waits_for_the_lookahead(tiny):
    """run_grpo closes the harness it built after training; the last step's lookahead must be done
    by then (rollout.close joins it), not cut off under a closing harness."""
    from cudaperf.schedule import StepSchedule

    model, tok, tasks = tiny
    tasks = tasks[:4]
    done = []

    class SlowAhead(PreparingHarness):
        def prepare(self, tasks, workers=0):
            if workers:  # the lookahead
                time.sleep(0.5)
                done.append(sorted(t.task_id for t in tasks))
                return {}
            return super().prepare(tasks, workers)

    ro = MultiTurnRollout(tasks, SlowAhead(), RewardConfig(), None, turns=1, max_new_tokens=4, prepare_ahead_workers=2,
                          schedule=StepSchedule(tuple(t.task_id for t in tasks), tasks_per_step=2))
    ro([prompts.task_prompt(t) for t in tasks[:2] for _ in range(2)], FakeTrainer(model, tok, step=0))
    th = ro._ahead[0]
    ro.close()
    assert not th.is_alive() and done == [sorted(t.task_id for t in tasks[2:])]
    ro.close()  # nothing left to wait for: a no-op


def test_run_grpo_closes_the_harness_it_built_even_when_training_fails(tiny, tmp_path, monkeypatch):
    from types import SimpleNamespace

    model, _, tasks = tiny
    closed = []

    class Trainer:
        model = None

        def add_callback(self, cb):
            pass

        def train(self, resume_from_checkpoint=None):
            raise RuntimeError("CUDA out of memory (scripted)")

    def fake_build(model_, tok, tasks_, s, prof, out_dir, structural, harness):
        assert harness is None  # the caller gave none: run_grpo owns what build_trainer makes
        t = Trainer()
        t.model = model_
        h = SimpleNamespace(close=lambda: closed.append("harness"))
        return t, SimpleNamespace(close=lambda: closed.append("rollout"), harness=h)

    monkeypatch.setattr(grpo, "build_trainer", fake_build)
    s = grpo.GRPOSettings.for_profile("smoke", ablation="ver_only", max_tasks=1, tasks_per_step=1, warm_start_steps=1)
    with pytest.raises(RuntimeError, match="scripted"):
        grpo.run_grpo("close", "smoke", tasks=tasks[:1], settings=s, root=".", data_dir=str(tmp_path / "d"),
                      runs_dir=str(tmp_path / "r"))
    assert closed == ["rollout", "harness"]  # the lookahead first, then the harness under it


# --------------------------------------------------------------------------- smoke run


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    from cudaperf.harness import Harness
    from cudaperf.structural import StructuralReward

    tmp = tmp_path_factory.mktemp("grpo")
    tasks = dev_tasks()[:1]  # saxpy: the shortest variants, the quickest warm start
    prof = get_profile("smoke")
    s = grpo.GRPOSettings.for_profile("smoke", max_tasks=1, tasks_per_step=1)
    harness = Harness(replace(prof.harness, cache_dir=str(tmp / "cache")))
    sr = StructuralReward({t.task_id: t for t in tasks}, grpo.synthetic_ranker(), prof.reward)
    kw = dict(tasks=tasks, root=".", structural=sr, harness=harness, data_dir=str(tmp / "data"),
              runs_dir=str(tmp / "runs"))
    first = grpo.run_grpo("smoke", "smoke", settings=s, **kw)
    # 4 steps asked, but a (tiny) wall-clock budget: one step, a checkpoint, and out.
    again = grpo.run_grpo("smoke", "smoke", settings=replace(s, steps=4, time_budget_s=1e-3), **kw)
    return first, again


def test_smoke_grpo_updates_the_weights_from_non_degenerate_rewards(smoke):
    first, _ = smoke
    log = first.log
    assert first.steps_done == 2 and list(log["step"]) == [1, 2]
    # Some group had reward spread, so advantages were non-zero ...
    assert (log["trl/frac_reward_zero_std"] < 1.0).any(), log.filter(like="reward").T
    assert (log["trl/reward_std"] > 0).any()
    # ... and the update moved the weights.
    assert first.max_param_change is not None and first.max_param_change > 0
    # Real compilation happened and was timed; nothing could run without a GPU.
    assert (log["cpu_compile_s"] > 0).all()
    # correctness unknown (NaN) wherever something compiled; 0 only where nothing did
    assert (log["correct_rate"].isna() == (log["compile_rate"] > 0)).all(), log[["compile_rate", "correct_rate"]]
    assert (log["correct_rate"].fillna(0) == 0).all()
    assert log["r_comp"].le(0).all() and log["r_str_paid"].eq(1.0).all()


def test_smoke_step_log_has_every_promised_column(smoke):
    first, _ = smoke
    want = {"r_comp", "r_corr", "r_speed", "r_cv", "r_ver", "r_str", "compile_rate", "correct_rate",
            "geomean_speedup", "mean_first_correct_turn", "t_generation", "t_compile", "t_execution",
            "t_update", "cache_hit_rate", "trl/loss", "trl/rewards/R_ver/mean", "trl/rewards/R_str/mean"}
    assert want <= set(first.log.columns)
    assert (first.run_dir / "steps.parquet").is_file()
    assert (first.log["t_generation"] > 0).all()
    # Without a GPU nothing is judged correct: any spread lies among the failures.
    assert {"signal_groups", "signal_correct", "signal_speed", "signal_failure", "signal_mixed"} <= set(first.log.columns)
    spread = first.log["signal_zero_spread"] < first.log["signal_groups"]
    assert spread.any() and (first.log.loc[spread, "signal_failure"] == 1.0).all()
    att = pd.read_parquet(first.run_dir / grpo.ATTEMPTS_FILE)  # the fixture's resumed call added step 3
    att = att[att["step"].isin(first.log["step"])]
    assert list(att.groupby("step").size()) == list(first.log["rows"])
    assert set(att["class"]) <= {"not_compiled", "unjudged"}


def test_smoke_run_resumes_and_stops_on_its_time_budget_without_duplicate_steps(smoke):
    first, again = smoke
    assert again.resumed_from is not None and again.resumed_from.endswith("checkpoint-2")
    assert again.steps_done == 3 and again.stopped_by_budget
    assert list(again.log["step"]) == [1, 2, 3]
    # Same starting policy (saved once), not a second warm start.
    assert again.start_policy == first.start_policy
    assert (again.output_dir / "checkpoint-3" / "steps.parquet").is_file()
    assert (again.output_dir / "checkpoint-3" / grpo.ATTEMPTS_FILE).is_file()
    att = pd.read_parquet(again.run_dir / grpo.ATTEMPTS_FILE)
    assert sorted(set(att["step"])) == [1, 2, 3] and len(att) == again.log["rows"].sum()
    # settings.json: the latest call's values, and from which step each call's changes held
    import json

    rec = json.loads((again.run_dir / "settings.json").read_text())
    assert rec["steps"] == 4 and [c["first_step"] for c in rec["calls"]] == [1, 3]
    assert rec["calls"][1]["changed"]["steps"] == [2, 4] and "time_budget_s" not in rec["calls"][1]["changed"]


def test_settings_record_keeps_each_calls_changes():
    a = {"runners_per_gpu": 12, "keep_runners": 0, "time_budget_s": 440.0}
    first = grpo.settings_record(None, a, 1)
    assert first["calls"] == [{"first_step": 1, "changed": {}}] and first["runners_per_gpu"] == 12
    b = {**a, "runners_per_gpu": 16, "keep_runners": 64, "time_budget_s": 300.0}
    second = grpo.settings_record(first, b, 14)
    assert second["keep_runners"] == 64 and second["calls"][1] == {
        "first_step": 14, "changed": {"runners_per_gpu": [12, 16], "keep_runners": [0, 64]}}
    third = grpo.settings_record(second, b, 31)
    assert [c["first_step"] for c in third["calls"]] == [1, 14, 31] and third["calls"][2]["changed"] == {}
    # a run that starts over (no checkpoint) starts its history over
    assert grpo.settings_record(third, a, 1)["calls"] == [{"first_step": 1, "changed": {}}]


def test_ver_only_ablation_builds_a_trainer_with_r_ver_alone(tiny, tmp_path):
    model, tok, tasks = tiny
    s = grpo.GRPOSettings.for_profile("smoke", ablation="ver_only", beta=0.0)
    trainer, ro = grpo.build_trainer(model, tok, tasks[:2], s, get_profile("smoke"), tmp_path,
                                     structural=None, harness=ScriptedHarness())
    assert [f.__name__ for f in trainer.reward_funcs] == ["R_ver"]
    assert trainer.args.num_generations == s.group_size and trainer.args.loss_type == s.loss_type
    assert trainer.rollout_func is ro and ro.structural is None
    # fewer tasks than a step takes (a probe-filtered run): the tasks repeat to fill the step
    few, _ = grpo.build_trainer(model, tok, tasks[:1], replace(s, tasks_per_step=3), get_profile("smoke"),
                                tmp_path / "few", structural=None, harness=ScriptedHarness())
    assert few.train_dataset["task_id"] == [tasks[0].task_id] * 3


def test_update_micro_batch_defaults_and_validation():
    mini = grpo.GRPOSettings.for_profile("mini")
    assert mini.turns == 3 and grpo.update_micro_batch(mini) == grpo.MULTI_TURN_MICRO_BATCH
    assert grpo.update_micro_batch(grpo.GRPOSettings.for_profile("mini", turns=1)) == 128  # one pass
    assert grpo.update_micro_batch(grpo.GRPOSettings.for_profile("mini", turns=1, micro_batch=16)) == 16
    assert grpo.update_micro_batch(grpo.GRPOSettings.for_profile("smoke", turns=2)) == 16  # 2 x 8
    assert grpo.update_micro_batch(grpo.GRPOSettings.for_profile("smoke", turns=2, group_size=4)) == 8
    # 9 tasks x 8 = 72 rows: 16 does not divide them, 12 does (TRL cuts a step into equal passes)
    assert grpo.update_micro_batch(grpo.GRPOSettings.for_profile("mini", tasks_per_step=9)) == 12
    with pytest.raises(ValueError, match="must divide"):
        grpo.GRPOSettings.for_profile("mini", micro_batch=48)


# micro_batch 2 of a step's 4 rows: TRL then generates once per optimiser step and accumulates two
# passes; the rollout must still be called once a step, with that step's tasks.
# turns 3: two rounds of judging a step (2 rows a task), their extra columns split between passes.
@pytest.mark.parametrize("micro_batch,turns", [(0, 1), (2, 1), (2, 3)])
def test_trl_takes_the_tasks_in_the_schedules_order(tiny, tmp_path, micro_batch, turns):
    """TRL's sampler, with shuffling off, gives step k the k-th slice of the dataset: the rollout's
    lookahead (cudaperf.schedule) prepares what the next step really takes."""
    model, tok, tasks = tiny
    tasks = tasks[:5]  # 5 tasks, 2 a step: each pass drops one, so passes differ
    s = grpo.GRPOSettings.for_profile("smoke", ablation="ver_only", beta=0.0, tasks_per_step=2, group_size=2,
                                      turns=turns, steps=4, max_new_tokens=4, save_steps=100, micro_batch=micro_batch)
    h = ScriptedHarness()
    trainer, ro = grpo.build_trainer(model, tok, tasks, s, get_profile("smoke"), tmp_path,
                                     structural=None, harness=h)
    assert trainer.args.shuffle_dataset is False and ro.schedule is not None
    assert trainer.args.per_device_train_batch_size * trainer.args.gradient_accumulation_steps == 4
    assert trainer.args.per_device_train_batch_size == (micro_batch or 4)
    matches = []
    orig = ro._next_tasks

    def spy(tr, prompts, st):
        out = orig(tr, prompts, st)
        matches.append((st.schedule_match, [t.task_id for t in out]))
        return out

    ro._next_tasks = spy
    trainer.train()
    order = list(trainer.train_dataset["task_id"])
    rounds = min(turns, 2)  # judging rounds a step: a task's 2 rows are one chain of 2 turns
    assert len(order) == 8 and len(h.calls) == 4 * rounds and trainer.state.global_step == 4
    for k in range(4):
        asked = sorted({t for c in h.calls[rounds * k:rounds * (k + 1)] for t in c})
        assert asked == sorted(set(order[2 * k:2 * k + 2])), (k, h.calls, order)
    assert [m for m, _ in matches] == [1.0] * 4
    assert [nxt for _, nxt in matches] == [order[2 * k + 2:2 * k + 4] for k in range(4)]


def test_dataset_rows_fill_one_step_on_every_process(tiny):
    _, _, tasks = tiny
    ids = lambda rows: [r["task_id"] for r in rows]  # noqa: E731
    a, b = tasks[0].task_id, tasks[1].task_id
    # two processes taking one prompt each from one task: the task twice, not a dataset the
    # sampler drops as an incomplete global batch
    assert ids(grpo.dataset_rows(tasks[:1], 1, world_size=2)) == [a, a]
    assert ids(grpo.dataset_rows(tasks[:2], 2, world_size=2)) == [a, b, a, b]
    assert ids(grpo.dataset_rows(tasks[:2], 1, world_size=1)) == [a, b]  # enough already: unchanged
    assert grpo.dataset_rows([], 4, world_size=2) == []


def test_step_row_splits_the_step_time():
    from cudaperf.rollout import StepStats

    st = StepStats(rows=4, generation_s=2.0, eval_wall_s=3.0, compile_s=6.0, execution_s=3.0,
                   speedups=[2.0, 8.0], components={"r_ver": -1.0})
    row = grpo.step_row(7, st, 10.0, {"loss": 0.5, "note": "x"})
    assert row["t_compile"] == pytest.approx(2.0) and row["t_execution"] == pytest.approx(1.0)
    assert row["t_update"] == pytest.approx(5.0)
    assert row["geomean_speedup"] == pytest.approx(4.0)
    assert row["trl/loss"] == 0.5 and "trl/note" not in row
    st.stage_s, st.batch_repeats = {"time": 1.5}, 3
    row = grpo.step_row(7, st, 10.0, {})
    assert row["s_time"] == 1.5 and row["batch_repeats"] == 3


@pytest.mark.slow
def test_two_rank_grpo_updates_the_weights_on_every_rank(tmp_path):
    """Issue 10's multi-process path on CPU: torchrun starts two ranks of benchmarks/grpo_multi.py
    (gloo), each trains smoke steps; both report the same step count and a weight change > 0
    (the gradients were all-reduced, so both moved by the same amount).

    A step whose groups all have equal rewards has no gradient. Until session 27 each rank had its
    own dev task; warm-started on two tasks, the tiny policy often wrote text without code, whose
    structural scores all tie, and whether some step had reward spread depended on the CPU's
    sampling (skipped from session 8 to 22; failed again in session 26's CI). Both ranks now take
    saxpy, the task of the single-process smoke run, whose warm start yields near-copies of
    kernels with differing scores; three steps leave a margin."""
    import json
    import subprocess
    import sys

    out = tmp_path / "multi"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "benchmarks/grpo_multi.py",
           "--profile", "smoke", "--steps", "3", "--out", str(out), "--check"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    errors = [ln for ln in (p.stdout + p.stderr).splitlines() if "Error" in ln or "error:" in ln]
    assert p.returncode == 0, "\n".join(errors[:30]) + "\n...\n" + p.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["world_size"] == 2 and summary["every_rank_updated"]
    ranks = summary["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1] and {r["steps"] for r in ranks} == {3}
    assert ranks[0]["max_weight_change"] == pytest.approx(ranks[1]["max_weight_change"])
    assert all(r["schedule_match"] == [1.0] * 3 for r in ranks)  # each rank took its slice of the schedule


def test_a_start_folder_without_weights_is_not_loaded(tmp_path):
    """data/models/sft-M is committed with config and evaluation files only: GRPO must not try to
    load it (session 13: OSError 'no file named model.safetensors'), and must say it started fresh."""
    from cudaperf import grpo, policy
    from cudaperf.devtasks import dev_tasks

    d = tmp_path / "data/models/sft-M"
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    (d / "eval_summary.json").write_text("{}")
    assert not policy.has_weights(d)
    s = grpo.GRPOSettings.for_profile("smoke", model_size="tiny", start_from="data/models/sft-M",
                                      warm_start_steps=0)
    model, tok, src = grpo.load_start_policy(s, dev_tasks(), root=tmp_path)
    assert src.startswith("fresh tiny") and "holds no weights" in src
    policy.save_policy(model, tok, d)
    assert policy.has_weights(d)
    _, _, src2 = grpo.load_start_policy(s, dev_tasks(), root=tmp_path)
    assert src2 == str(d)


def test_probe_filter_keeps_tasks_with_a_compiling_attempt_and_reuses_its_choice(tmp_path):
    """GRPO has a reward signal only where some attempts compile (session 14: none did)."""
    import json
    from types import SimpleNamespace

    tasks = dev_tasks()
    compiles = {tasks[0].task_id: [False, True, False], tasks[1].task_id: [True, True, True]}
    calls = []

    def fake(model, tok, cands, n, temperature, max_new_tokens, batch_size, seed):
        calls.append((len(cands), n, temperature))
        res = [[SimpleNamespace(ok=ok) for ok in compiles.get(t.task_id, [False] * n)] for t in cands]
        return [["code"] * n for _ in cands], res, (1.0, 2.0)

    s = grpo.GRPOSettings.for_profile("smoke", probe_filter=3, probe_tasks=0, temperature=0.3)
    kept = grpo.probe_filter_tasks(None, None, tasks, s, tmp_path, sample_and_compile=fake, log=lambda m: None)
    assert [t.task_id for t in kept] == [tasks[0].task_id, tasks[1].task_id]
    assert calls == [(len(tasks), 3, 0.3)]  # every candidate, at the rollout temperature
    saved = json.loads((tmp_path / grpo.PROBE_FILE).read_text())
    assert saved["compiled"][tasks[0].task_id] == 1 and saved["compile_rate"] == pytest.approx(4 / (3 * len(tasks)))
    again = grpo.probe_filter_tasks(None, None, tasks, s, tmp_path, sample_and_compile=fake, log=lambda m: None)
    assert [t.task_id for t in again] == [t.task_id for t in kept] and len(calls) == 1  # resumed: no new probe
    table = grpo.read_probe_filters(tmp_path.parent)
    row = table.set_index("run").loc[tmp_path.name]
    assert (row["candidates"], row["kept"], row["attempts_per_task"]) == (len(tasks), 2, 3)
    compiles.clear()
    with pytest.raises(ValueError, match="no reward signal"):
        grpo.probe_filter_tasks(None, None, tasks, s, tmp_path / "fresh", sample_and_compile=fake, log=lambda m: None)


def test_rollout_harness_keeps_runners_only_when_they_are_shared():
    from cudaperf.config import get_profile

    base = get_profile("mini").harness
    s = grpo.GRPOSettings.for_profile("mini", keep_runners=64)
    cfg = grpo.rollout_harness_config(base, s)
    assert cfg.share_runner and cfg.keep_runners == 64
    off = grpo.rollout_harness_config(base, grpo.GRPOSettings.for_profile("mini", keep_runners=64, share_runner=False))
    assert not off.share_runner and off.keep_runners == 0
    assert grpo.rollout_harness_config(base, grpo.GRPOSettings.for_profile("mini")).keep_runners == 0


def test_a_saved_start_policy_is_reloaded_in_float32(tiny, tmp_path):
    """A run's start_policy folder holding half-precision weights (session 22 rebuilt one by hand
    from the float16 SFT export to resume on a fresh machine) is still loaded in float32: trained in
    float16, the resumed policy collapsed within three steps."""
    import json

    import torch

    from cudaperf import grpo

    model, tok, tasks = tiny
    start = tmp_path / "start_policy"
    model.to(torch.float16).save_pretrained(str(start))
    model.to(torch.float32)
    tok.save_pretrained(str(start))
    s = grpo.GRPOSettings.for_profile("smoke", model_size="tiny")
    loaded, _, src = grpo._start_policy(s, tasks, tmp_path, tmp_path)
    assert next(loaded.parameters()).dtype == torch.float32 and src == str(start)
    # A run dir without start_policy (a fresh machine given only the checkpoint, gpu_grpo.sh RESUME_TAR)
    # saves it again from start_from, in float32, as the run's first call did.
    s = grpo.GRPOSettings.for_profile("smoke", model_size="tiny", start_from="start_policy", warm_start_steps=0)
    run_dir = tmp_path / "run"
    loaded, _, src = grpo._start_policy(s, tasks, tmp_path, run_dir)
    assert next(loaded.parameters()).dtype == torch.float32 and src == str(start)
    assert json.loads((run_dir / "start_policy/config.json").read_text())["dtype"] == "float32"
