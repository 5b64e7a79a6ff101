"""cudaperf.compileahead: attempts compiled while their batch still generates.

Checked here: the code compiled early is byte-identical to what the rollout judges (so judging
hits the compile cache), each distinct attempt is built once, a failing compile never reaches
`generate`, transformers really calls the criterion during `generate`, and a rollout with it on
gives the same records as with it off."""
from __future__ import annotations

import copy
import threading
from concurrent.futures import wait

import pytest
import torch

from cudaperf import policy, prompts
from cudaperf.compileahead import CompileAhead
from cudaperf.config import RewardConfig
from cudaperf.devtasks import dev_tasks
from cudaperf.result import EvalResult
from cudaperf.rewards import extract_code
from cudaperf.rollout import MultiTurnRollout

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def tok():
    return policy.get_tokenizer(policy.PolicyConfig.for_profile("smoke"), dev_tasks())


class Recorder:
    """compile_ahead / evaluate_many stand-in: records the code each was given."""

    store = None
    has_gpu = False

    def __init__(self, fail: bool = False):
        self.ahead: list[tuple[str, str]] = []
        self.judged: list[tuple[str, str]] = []
        self.fail = fail
        self.lock = threading.Lock()

    def compile_ahead(self, task, code):
        with self.lock:
            self.ahead.append((task.task_id, code))
        if self.fail:
            raise RuntimeError("simulated nvcc crash")
        return True

    def evaluate_many(self, items):
        self.judged += [(t.task_id, c) for t, c in items]
        return [EvalResult(t.task_id, "h", status="compile_error", compiled=False) for t, _ in items]


def _ids(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def test_each_ended_row_is_compiled_once_with_the_code_judging_will_see(tok):
    tasks = dev_tasks()[:2]
    eos, pad = tok.eos_token_id, tok.pad_token_id
    width = 4
    done = _ids(tok, "Here:\n```cuda\nextern \"C\" void f(int n) {}\n```\nok") + [eos]
    other = _ids(tok, "```cuda\n__global__ void k() {}\n```") + [eos]
    length = max(len(done), len(other)) + 3
    rows = [done + [pad] * (length - len(done)),        # ended: task 0
            list(done) + [pad] * (length - len(done)),  # the same attempt again: built once
            _ids(tok, "still going " * 20)[:length],    # never ends
            other + [pad] * (length - len(other))]      # ended: task 1
    ids = torch.tensor([[pad] * width + r for r in rows])
    rec = Recorder()
    ahead = CompileAhead([tasks[0], tasks[0], tasks[0], tasks[1]], width, tok, rec.compile_ahead, every=2)
    for step in range(1, length + 1):  # generate calls the criterion once per new token
        out = ahead(ids[:, :width + step], None)
        assert out.dtype == torch.bool and not out.any()  # never stops a sequence
    wait(ahead.futures)  # generation goes on for many steps in use; finish() drops what has not started
    stats = ahead.finish()
    want = [(tasks[0].task_id, extract_code(tok.decode(done, skip_special_tokens=True))),
            (tasks[1].task_id, extract_code(tok.decode(other, skip_special_tokens=True)))]
    assert sorted(rec.ahead) == sorted(want)
    assert want[0][1].startswith('extern "C" void f') and (stats.submitted, stats.compiled, stats.failed) == (2, 2, 0)
    assert stats.looks == length // 2
    with pytest.raises(ValueError):
        CompileAhead(tasks, width, tok, rec.compile_ahead, every=0)


def test_a_failing_compile_is_counted_not_raised(tok):
    rec = Recorder(fail=True)
    eos = tok.eos_token_id
    ids = torch.tensor([[0, 0] + _ids(tok, "```cuda\nint x;\n```") + [eos]])
    ahead = CompileAhead(dev_tasks()[:1], 2, tok, rec.compile_ahead, every=1)
    ahead(ids, None)
    wait(ahead.futures)
    stats = ahead.finish()
    assert (stats.submitted, stats.compiled, stats.failed) == (1, 0, 1)


def test_finish_drops_what_has_not_started():
    gate = threading.Event()
    ahead = CompileAhead(dev_tasks()[:1], 0, type("T", (), {"eos_token_id": 2})(), lambda t, c: gate.wait(5),
                         workers=1)
    ahead.futures = [ahead.pool.submit(ahead._compile, None, "a"), ahead.pool.submit(ahead._compile, None, "b")]
    ahead.stats.submitted = 2
    threading.Timer(0.2, gate.set).start()
    stats = ahead.finish()  # the first runs (and is waited for), the second never starts
    assert (stats.compiled, stats.dropped) == (1, 1)


class EndAfter:
    """Logits processor: sample freely for `k` tokens, then only the end token."""

    def __init__(self, k: int, eos: int):
        self.k, self.eos, self.calls = k, eos, 0

    def __call__(self, input_ids, scores):
        self.calls += 1
        if self.calls > self.k:
            scores = torch.full_like(scores, float("-inf"))
            scores[:, self.eos] = 0.0
        return scores


def test_generate_calls_it_and_a_rollout_judges_the_same_code(tok, monkeypatch):
    """A tiny Qwen3 made to end every sequence after 3 sampled tokens: transformers calls the
    criterion during `generate`, and with compile-ahead on the rollout hands the harness the very
    codes it handed over early, with the same tokens and records as with it off."""
    from transformers import LogitsProcessorList

    tasks = dev_tasks()[:2]
    model = policy.build_model("tiny", tok, seed=5)
    real = policy.generation_kwargs

    def ending(*a, **k):
        return {**real(*a, **k), "logits_processor": LogitsProcessorList([EndAfter(3, tok.eos_token_id)])}

    monkeypatch.setattr(policy, "generation_kwargs", ending)
    batch = [prompts.task_prompt(t) for t in tasks for _ in range(3)]
    monkeypatch.setattr(CompileAhead, "EVERY", 1)  # look at every step: the rows end together
    results = {}
    for workers in (0, 2):
        rec = Recorder()
        ro = MultiTurnRollout(tasks, rec, RewardConfig(), None, turns=1, max_new_tokens=8, temperature=1.0,
                              turn_baseline=False, compile_ahead_workers=workers)
        torch.manual_seed(0)
        out = ro.rollout(copy.deepcopy(model), tok, batch)
        results[workers] = (out["completion_ids"], rec.judged, rec.ahead, ro.last)
    (c0, judged0, ahead0, st0), (c2, judged2, ahead2, st2) = results[0], results[2]
    assert c0 == c2 and judged0 == judged2  # same tokens, same codes judged
    assert ahead0 == [] and st0.ahead_submitted == 0
    # every distinct (task, code) judged was handed over early; those built are byte for byte the
    # judged ones (generation stopped right after: some may have been dropped before starting)
    assert st2.ahead_submitted == len(set(judged2)) > 0 and set(ahead2) <= set(judged2)
    assert st2.ahead_compiled + st2.ahead_dropped == st2.ahead_submitted == len(ahead2) + st2.ahead_dropped
