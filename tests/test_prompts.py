"""The prompt module: the task text carries the contract and the task's facts, feedback states only
what the result holds (never an invented number), and hostile candidate output stays bounded."""
from __future__ import annotations

import re

import pytest

from cudaperf import prompts
from cudaperf.devtasks import dev_tasks
from cudaperf.result import EvalResult
from cudaperf.rewards import extract_code

TASKS = dev_tasks()


def _result(**kw) -> EvalResult:
    return EvalResult(task_id="t", candidate_hash="h", **kw)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.task_id)
def test_task_prompt_states_contract_signature_roles_and_sizes(task):
    msgs = prompts.task_prompt(task)
    assert [m["role"] for m in msgs] == ["system", "user"]
    system, user = msgs[0]["content"], msgs[1]["content"]
    assert 'extern "C"' in system and "DEVICE pointer" in system and "host and device" in system
    assert f'extern "C" void {task.entry}(' in user
    assert task.reference.strip() in user
    for p in task.signature:
        line = next(ln for ln in user.splitlines() if ln.startswith(f"- {p.name} ("))
        assert p.ctype in line
        if p.is_pointer:
            assert f"{p.shape} elements" in line and "device pointer" in line
    perf = task.perf_test
    assert "Timed at: " + ", ".join(f"{k}={v}" for k, v in perf.sizes.items()) in user
    assert prompts.task_prompt(task) == msgs  # pure: every stage sees the same text


def test_prompts_differ_between_tasks():
    users = {prompts.task_prompt(t)[1]["content"] for t in TASKS}
    assert len(users) == len(TASKS)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.task_id)
def test_completion_round_trips_through_extract_code(task):
    for v in task.variants:
        c = prompts.completion_for(v.source)
        assert c.startswith("```cuda\n") and c.endswith("\n```")
        assert extract_code(c) == v.source.strip() + "\n"
        chatty = "Here is a faster version:\n\n" + c + "\n\nIt uses coalesced loads."
        assert extract_code(chatty) == v.source.strip() + "\n"


NVCC_LOG = ('/tmp/cudaperf-abc/scratch/cand.cu(2): error: identifier "y" is undefined\n'
            "  x[i]=y[i];\n"
            "       ^\n\n"
            "cand.cu(3): warning #177-D: variable \"z\" was declared but never referenced\n\n"
            'cand.cu(5): error: expected a ";"\n'
            "  k<<<1,32>>>(x,n)}\n"
            "                  ^\n\n"
            '2 errors detected in the compilation of "cand.cu".\nnvcc exit code 2')


def test_compile_feedback_keeps_errors_with_context_and_drops_paths():
    text = prompts.feedback_message(_result(status="compile_error", compile_log=NVCC_LOG))
    assert "did not compile" in text
    assert 'cand.cu(2): error: identifier "y" is undefined' in text
    assert "x[i]=y[i];" in text and 'expected a ";"' in text
    assert "/tmp/" not in text  # scratch paths mean nothing to the model
    assert "warning" not in text and "errors detected" not in text


def test_compile_feedback_is_bounded_for_a_flood_of_errors():
    flood = "".join(f"cand.cu({i}): error: {'A' * 500}\n  line\n  ^\n" for i in range(5000))
    text = prompts.feedback_message(_result(status="compile_error", compile_log=flood))
    assert len(text) < prompts.MAX_COMPILE_CHARS + 200
    assert "more error(s) not shown" in text or text.rstrip().endswith("...")


def test_compile_feedback_without_error_lines_shows_the_tail():
    log = "x" * 5000 + "\nld: cannot find -lfoo\nnvcc exit code 1"
    text = prompts.feedback_message(_result(status="compile_error", compile_log=log))
    assert "cannot find -lfoo" in text and len(text) < prompts.MAX_COMPILE_CHARS + 200


def test_wrong_feedback_names_configuration_sizes_and_error_size():
    fail = {"test": "odd", "seed": 1, "sizes": {"n": 1003}, "reason": "mismatch", "param": "y",
            "summary": "3 wrong element(s), first at index 1000, max abs err 1.5",
            "examples": [{"index": 1000, "expected": 1.5, "got": 0.0}]}
    text = prompts.feedback_message(_result(status="wrong", compiled=True, pass_rate=0.75,
                                            correct=False, failures=[fail]))
    assert "75%" in text and "'odd'" in text and "n=1003" in text
    assert "3 wrong element(s)" in text and "expected 1.5 got 0.0" in text
    assert "Speedup" not in text


def test_recheck_failure_says_fresh_inputs():
    fail = {"test": "perf", "sizes": {"n": 8}, "reason": "mismatch", "param": "y", "summary": "8 wrong",
            "stage": "recheck"}
    text = prompts.feedback_message(_result(status="wrong", compiled=True, pass_rate=1.0, correct=False,
                                            failures=[fail], flags=["hack:stateful_or_cached"]))
    assert "fresh inputs" in text and "stateful_or_cached" in text


def test_hostile_runner_output_is_capped():
    fail = {"stage": "run", "reason": "crashed", "detail": "Z" * 100_000, "output_tail": "Q" * 100_000}
    text = prompts.feedback_message(_result(status="crashed", compiled=True, pass_rate=0.0, correct=False,
                                            failures=[fail] * 10, message="M" * 100_000))
    assert len(text) < 1500 and "Q" not in text


def test_correct_feedback_reports_measured_speed_only():
    text = prompts.feedback_message(_result(status="correct", compiled=True, pass_rate=1.0, correct=True,
                                            speedup=2.345, cv=0.031, runtime_ms=0.5))
    assert "2.35x" in text and "3.1%" in text and "0.5 ms" in text
    unmeasured = prompts.feedback_message(_result(status="correct", compiled=True, pass_rate=1.0,
                                                  correct=True))
    assert "correct" in unmeasured
    assert not re.search(r"\d", unmeasured), "no measurement, so no number may appear"


def test_compiled_without_gpu_says_nothing_was_measured():
    text = prompts.feedback_message(_result(status="compiled", compiled=True))
    assert "not measured" in text and not re.search(r"\d", text)


def test_structural_hints_follow_the_features():
    bad = {"coal": 0.25, "occ": 0.2, "div": 3.0, "xfer": 2.0, "atomics": 64.0, "tpb": 40.0, "kernels": 16.0}
    hints = prompts.structural_hints(bad)
    assert len(hints) == 7 and any("coalesced (coal 0.25)" in h for h in hints)
    good = {"coal": 1.0, "occ": 1.0, "div": 0.0, "xfer": 0.0, "atomics": 0.0, "tpb": 256.0, "kernels": 1.0}
    assert prompts.structural_hints(good) == []
    assert prompts.structural_hints({"coal": None, "occ": "n/a", "tpb": float("nan")}) == []
    assert prompts.structural_hints({"error": "TypeError"}) == []
    text = prompts.feedback_message(_result(status="correct", compiled=True, pass_rate=1.0, correct=True,
                                            features={"coal": 0.5}, speedup=1.0))
    assert "Structure:" in text and "coal 0.50" in text
    # A source that did not compile has no trustworthy structure to hint about.
    text = prompts.feedback_message(_result(status="compile_error", compile_log=NVCC_LOG,
                                            features={"coal": 0.1}))
    assert "Structure:" not in text


def test_spills_are_hinted():
    text = prompts.feedback_message(_result(status="correct", compiled=True, pass_rate=1.0, correct=True,
                                            resources={"k": {"regs": 255, "spill_stores": 64}}))
    assert "register spills in k" in text


def test_refine_prompt_is_the_multi_turn_transcript():
    t = TASKS[0]
    naive, fast = t.variants[0].source, t.variants[1].source
    r1 = _result(status="compile_error", compile_log=NVCC_LOG)
    r2 = _result(status="correct", compiled=True, pass_rate=1.0, correct=True, speedup=1.1)
    msgs = prompts.refine_prompt(t, fast, r2, history=[(naive, r1)])
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[:2] == prompts.task_prompt(t)
    assert msgs[2]["content"] == prompts.completion_for(naive)
    assert msgs[3]["content"].startswith(prompts.feedback_message(r1))
    assert msgs[4]["content"] == prompts.completion_for(fast)
    assert "1.10x" in msgs[5]["content"] and msgs[5]["content"].endswith(prompts.REVISE)
