"""Shared runners kept alive from one task's group to the next (`HarnessConfig.keep_runners`).

Why: a shared runner (cudaperf.sharedrunner) already serves every clean candidate of one task
in one CUDA context, but a batch of many tasks with a few candidates each -- the harness
benchmark's 80 tasks x 3, a GRPO step's 16 tasks -- still starts a runner, and creates a
context, per task: `init` took 150 of the runners' 425 CPU-seconds in session 14's H200 benchmark
(data/bench/harness_shared_nvidia-h200_session14.json, 1.0 s each). A kept runner instead swaps
the task's call shim (the runner's `shim` command) and goes on.

What a kept runner may carry from one group to the next, and why that is safe:
* Only candidates the static scan found clean ever run in it (sharedrunner.eligible): no
  file-scope state, threads, load-time code, side streams or I/O, so a library loaded for an
  earlier task does nothing after its own calls returned (every call ends in a device sync).
  The next task's clean baseline -- its naive variant timed alone -- is therefore measured in a
  runner where such libraries are loaded but idle, which the one-task shared runner measures
  before any candidate is loaded.
* Device memory: what the runner holds is read once, fresh (its own figure from NVML where the
  driver gives one, cudaperf.devmem; else the GPU's free memory); it is retired as soon as a
  candidate leaves it holding more than sharedrunner.LEAK_LIMIT_BYTES beyond that (leaked buffers
  and the modules of every library loaded so far both count).
* Files: the scratch directory is emptied between groups (input files of one task are named by
  test and parameter, and another task's must never be read), except the runner's stdout and
  stderr, which it holds open.
* Names: every library is staged under a name never used before in that runner, because
  dlopen hands back the library already open under a path.

Guarantees:
* A runner is kept only after a group that ended normally; one that died, stopped answering,
  leaked device memory or has judged `keep_runners` candidates is shut down as before.
* Records are the same as with a fresh shared runner, plus ``timings["runner_reused"]``: the
  groups this runner served before (0 for a fresh one).
* `KeptRunners.close()` (called by `Harness.close`) shuts every idle runner down.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cudaperf import gpuworker, sandbox

if TYPE_CHECKING:  # pragma: no cover
    from cudaperf.harness import Harness

log = logging.getLogger(__name__)
RUNNER_FILES = ("stdout.txt", "stderr.txt")  # the runner keeps these open


@dataclass
class Kept:
    """A live runner with its scratch dir; `stack` tears both down (Harness._runner's exit)."""

    runner: gpuworker.Runner
    scratch: Path
    stack: contextlib.ExitStack
    gpu: int
    gpu_name: str = ""
    cc: str = ""
    mem0: tuple[str, int] | None = None  # device memory held with nothing allocated, fresh (sharedrunner._held_memory)
    judged: int = 0           # candidates judged in it
    groups: int = 0           # groups it finished
    _seq: int = field(default=0, repr=False)

    def stage(self, path: str | Path, stem: str) -> str:
        """Stage a library under a name this runner has never opened (see module docstring)."""
        self._seq += 1
        return self.runner.stage(path, f"{stem}{self._seq}.so")

    def close(self) -> None:
        self.stack.close()


def start(h: "Harness", gpu: int, slot: int, shim: Path) -> Kept:
    """A fresh runner on `gpu`, its context created with `shim` loaded."""
    stack = contextlib.ExitStack()
    try:
        runner, scratch = stack.enter_context(h._runner(gpu, slot))
        k = Kept(runner, scratch, stack, gpu)
        k.gpu_name, k.cc = h._init_runner(runner, shim, gpu, name=k.stage(shim, "shim"))
        return k
    except BaseException:
        stack.close()
        raise


def switch_task(k: Kept, shim: Path) -> None:
    """Point a kept runner at another task's call shim; RunnerDied/RuntimeError if it will not."""
    rep = k.runner.request(f"shim {k.stage(shim, 'shim')}")
    if not rep.startswith("ok"):
        raise RuntimeError(f"kept runner refused the shim: {rep}")


def empty_scratch(k: Kept) -> None:
    for p in k.scratch.iterdir():
        if p.name not in RUNNER_FILES:
            sandbox.remove_path(p)


class KeptRunners:
    """Idle kept runners per GPU."""

    def __init__(self):
        self._idle: dict[int, list[Kept]] = {}
        self._mu = threading.Lock()
        self._closed = False

    def take(self, gpu: int) -> Kept | None:
        with self._mu:
            idle = self._idle.get(gpu)
            return idle.pop() if idle else None

    def give_back(self, k: Kept, healthy: bool, limit: int) -> None:
        """Keep `k` for the next group when it ended healthy and has judged fewer than `limit`
        candidates; else shut it down."""
        keep = healthy and not self._closed and k.judged < limit
        if keep:
            try:
                empty_scratch(k)
            except OSError as e:
                log.info("kept runner: scratch not emptied (%s); shutting it down", e)
                keep = False
        if not keep:
            k.close()
            return
        k.groups += 1
        with self._mu:
            if self._closed:
                keep = False
            else:
                self._idle.setdefault(k.gpu, []).append(k)
        if not keep:
            k.close()

    def close(self) -> None:
        with self._mu:
            self._closed = True
            idle = [k for ks in self._idle.values() for k in ks]
            self._idle.clear()
        for k in idle:
            try:
                k.close()
            except Exception as e:  # noqa: BLE001 -- shutting down: log, go on with the others
                log.warning("kept runner did not shut down cleanly: %s", e)
