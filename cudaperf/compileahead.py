"""Compile a GRPO step's attempts while their batch is still generating.

A batch of rollouts generates until its longest sequence ends (up to `max_new_tokens`), and most
sequences end hundreds of tokens earlier. Their compiles then ran only after generation: 5-8 s of
wall time in a fresh mini step's judging on the 16-core H100 host of session 24. `CompileAhead` is
a transformers ``StoppingCriteria`` that never stops a sequence. Every `every` decoding steps it
looks for sequences that have emitted the end token since its last look, decodes and extracts their
code exactly as the rollout will (`tokenizer.decode(..., skip_special_tokens=True)` of the tokens up
to and including the end token, then `rewards.extract_code`), and hands it to
`Harness.compile_ahead` on a small thread pool. Judging then finds those builds in the compile
cache, keyed by the source bytes.

Guarantees:
- Only compilation happens early, in the same sandbox and with the same nvcc flags and cache as
  judging. Nothing is run, checked or timed beside generation, so timing never overlaps the
  policy's GPU work.
- It can only save work, never change a verdict. The code compiled is byte-identical to what
  judging receives, so judging gets a cache hit. Anything not built in time, or built differently,
  is compiled by judging as before.
- Never raises into `generate`: a failed compile is counted (`failed`) and left to judging.
- `finish()` drops compiles not yet started and waits for the running ones, so judging never
  compiles the same source at the same moment. It returns the counts for the step log.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Sequence

from cudaperf.rewards import extract_code

log = logging.getLogger(__name__)


@dataclass
class AheadStats:
    submitted: int = 0  # distinct (task, code) handed to the compiler during generation
    compiled: int = 0  # of those, built before judging began (nvcc succeeded)
    failed: int = 0  # of those, nvcc failed or the call raised (judging sees the cached error or compiles again)
    dropped: int = 0  # submitted but not started when generation ended: judging compiles them
    looks: int = 0  # times the finished sequences were read back from the device
    seconds: float = 0.0  # wall time of finish(): waiting for compiles still running at the end


class CompileAhead:
    """StoppingCriteria for `model.generate` over one batch; see the module docstring.

    `tasks[i]` is the task of row i, `prompt_width` the padded prompt length (the generated tokens of
    row i are ``input_ids[i, prompt_width:]``), `compile_fn(task, code) -> bool` the harness's
    `compile_ahead`."""

    EVERY = 8  # decoding steps between looks: each look reads one flag per row back from the device

    def __init__(self, tasks: Sequence[Any], prompt_width: int, tokenizer, compile_fn, *,
                 every: int | None = None, workers: int = 4):
        every = self.EVERY if every is None else every
        if every < 1 or workers < 1:
            raise ValueError("every and workers must be >= 1")
        self.tasks, self.width, self.tok, self.compile_fn = list(tasks), int(prompt_width), tokenizer, compile_fn
        self.eos = tokenizer.eos_token_id
        self.every = every
        self.seen: set[int] = set()
        self.keys: set[tuple[str, str]] = set()
        self.futures: list[Future] = []
        self.stats = AheadStats()
        self.calls = 0
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="compile-ahead")

    def __call__(self, input_ids, scores=None, **kwargs):
        import torch

        self.calls += 1
        if self.calls % self.every == 0:
            try:
                self.look(input_ids)
            except Exception as e:  # noqa: BLE001 -- an early compile is optional; generation is not
                log.warning("compile ahead: %s: %s", type(e).__name__, e)
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    def look(self, input_ids) -> None:
        """Submit the code of every row that has ended since the last look."""
        self.stats.looks += 1
        new = input_ids[:, self.width:]
        if new.shape[1] == 0:
            return
        ended = (new == self.eos).any(dim=1).tolist()
        rows = [i for i, e in enumerate(ended) if e and i not in self.seen]
        if not rows:
            return
        ids = new[rows].tolist()
        for i, row in zip(rows, ids):
            self.seen.add(i)
            code = extract_code(self.tok.decode(row[:row.index(self.eos) + 1], skip_special_tokens=True))
            task = self.tasks[i]
            key = (getattr(task, "task_id", str(i)), code)
            if key in self.keys:  # the same attempt twice in one batch: one build serves both
                continue
            self.keys.add(key)
            self.stats.submitted += 1
            self.futures.append(self.pool.submit(self._compile, task, code))

    def _compile(self, task, code: str) -> bool:
        try:
            ok = bool(self.compile_fn(task, code))
        except Exception as e:  # noqa: BLE001
            log.warning("compile ahead of %s: %s: %s", getattr(task, "task_id", "?"), type(e).__name__, e)
            ok = False
        return ok

    def finish(self) -> AheadStats:
        """Drop what has not started, wait for what runs; the counts of this batch."""
        t = time.perf_counter()
        for f in self.futures:
            if f.cancel():
                self.stats.dropped += 1
        self.pool.shutdown(wait=True)
        for f in self.futures:
            if not f.cancelled():
                if f.result():
                    self.stats.compiled += 1
                else:
                    self.stats.failed += 1
        self.stats.seconds = time.perf_counter() - t
        return self.stats
