"""`cudaperf.refine_eval`: multi-turn evaluation chains (tiny policy on the CPU, scripted verdicts)."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from cudaperf import prompts, refine_eval  # noqa: E402
from cudaperf.devtasks import dev_tasks  # noqa: E402
from cudaperf.result import EvalResult  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    from cudaperf import policy

    tasks = dev_tasks()
    tok = policy.get_tokenizer(policy.PolicyConfig.for_profile("smoke"), tasks)
    return policy.build_model("tiny", tok), tok, tasks


class Scripted:
    """Round r (1-based) of judging: an attempt is correct when its chain's index is < r - 1, i.e.
    nothing on turn 1, chain 0 on turn 2, chains 0-1 on turn 3; a flagged hack on turn 2 for chain 1."""

    def __init__(self):
        self.rounds: list[int] = []

    def evaluate_many(self, items):
        self.rounds.append(len(items))
        r = len(self.rounds)
        out = []
        per_task: dict[str, int] = {}
        for t, _ in items:
            k = per_task.get(t.task_id, 0)
            per_task[t.task_id] = k + 1
            # the chains still open come in chain order, so k + (chains closed before) is the chain index
            lane = k + (0 if r < 3 else 1)
            if lane < r - 1:
                out.append(EvalResult(t.task_id, "h", status="correct", compiled=True, correct=True,
                                      pass_rate=1.0, speedup=2.0, cv=0.0))
            elif r == 2 and lane == 1:
                out.append(EvalResult(t.task_id, "h", status="correct", compiled=True, correct=True,
                                      pass_rate=1.0, speedup=50.0, flags=["hack:beyond_roofline"]))
            else:
                out.append(EvalResult(t.task_id, "h", status="wrong", compiled=True, correct=False, pass_rate=0.0,
                                      failures=[{"test": "odd", "reason": "mismatch", "summary": "SCRIPTED-MISMATCH"}]))
        return out


def test_chains_stop_at_their_first_correct_attempt_and_see_feedback(tiny, monkeypatch):
    model, tok, tasks = tiny
    tasks = tasks[:2]
    seen = []
    real = prompts.refine_prompt
    monkeypatch.setattr(prompts, "refine_prompt", lambda *a, **k: seen.append(real(*a, **k)) or seen[-1])
    h = Scripted()
    lines = []
    recs = refine_eval.refine(model, tok, tasks, h, n=3, turns=3, temperature=0.7, max_new_tokens=6,
                              gen_cache="graph", seed=0, log=lines.append)
    assert h.rounds == [6, 6, 4]  # every chain, then all (none correct), then chains 1-2 (chain 0 ended)
    assert len(recs) == 16 and {r["turn"] for r in recs} == {1, 2, 3}
    assert [(r["sample"], r["turn"]) for r in recs if r["task_id"] == tasks[0].task_id] == [
        (0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2), (1, 3), (2, 3)]
    # later turns were prompted with the verdict on the attempt before
    assert len(seen) == 10 and all(prompts.REVISE in m[-1]["content"] for m in seen)
    # the wrong attempts' failure reached the next prompt (6 on turn 2, chain 2 of each task on turn 3);
    # chain 1's flagged attempt got the hack's feedback instead
    assert sum("SCRIPTED-MISMATCH" in m[-1]["content"] for m in seen) == 8
    assert set(recs[0]) >= {"task_id", "family", "sample", "turn", "status", "correct", "code", "error_class"}
    assert len(lines) == 3 and lines[1].startswith("turn 2: 6 attempts, 2 correct")
    got = refine_eval.pass_by_turn(recs, 3)
    # per task: chain 0 by turn 2; the hack on turn 2 does not count; chain 1 by turn 3
    assert got == {1: 0.0, 2: pytest.approx(1 / 3), 3: pytest.approx(2 / 3)}


def test_pass_by_turn_averages_tasks_and_refusals():
    recs = [{"task_id": "a", "sample": 0, "turn": 1, "correct": True, "flags": []},
            {"task_id": "a", "sample": 1, "turn": 1, "correct": False, "flags": []},
            {"task_id": "a", "sample": 1, "turn": 2, "correct": False, "flags": []},
            {"task_id": "b", "sample": 0, "turn": 1, "correct": False, "flags": []},
            {"task_id": "b", "sample": 0, "turn": 2, "correct": True, "flags": []}]
    assert refine_eval.pass_by_turn(recs, 2) == {1: 0.25, 2: 0.75}
    assert refine_eval.pass_by_turn([], 2) == {1: None, 2: None}
    with pytest.raises(ValueError, match="turns"):
        refine_eval.refine(None, None, [], None, n=1, turns=0, temperature=0.5, max_new_tokens=4)
