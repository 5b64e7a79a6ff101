"""Where a multi-threaded run spends its time: a sampling profiler over every Python thread.

`StackSampler` looks at each thread's stack every `interval` seconds (`sys._current_frames`,
no tracing, so the run is barely slowed) and counts, per sample, the innermost frame in this
project's code together with the frame the thread is actually in (numpy, a pipe read, a lock).
`report()` lists the most frequent pairs as shares of all project-code samples: with N busy
threads the shares say what the N threads were doing, e.g. 40 % "waiting for the runner's reply
in _checked_run" vs 30 % "np.load in reference_outputs". Guarantees: never raises into the
profiled program; threads not in project code (idle pool workers) are not counted, and project
threads blocked in `threading` (a slot, a lock, other threads) are counted apart as idle.
"""
from __future__ import annotations

import collections
import os
import sys
import threading
import time

_MARKERS = (os.sep + "cudaperf" + os.sep, os.sep + "benchmarks" + os.sep)


class Periodic:
    """A context manager that calls `_tick()` on a daemon thread every `interval` seconds while the
    `with` block runs; an exception in `_tick` is swallowed (a profiler must not break the run).
    Subclasses: `StackSampler` here, `cudaperf.cpuacct.ProcCpu`."""

    thread_name = "periodic"

    def __init__(self, interval: float):
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self):  # noqa: ANN204
        self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:  # noqa: ANN002
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._tick()
            except Exception:  # noqa: BLE001
                pass

    def _tick(self) -> None:
        raise NotImplementedError


class StackSampler(Periodic):
    thread_name = "stack-sampler"

    def __init__(self, interval: float = 0.05):
        super().__init__(interval)
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self.samples = 0
        self.idle = 0  # samples of project threads blocked on a lock/event/queue (threading.py)

    def _tick(self) -> None:
        me = threading.get_ident()  # the sampling thread itself
        for tid, frame in sys._current_frames().items():
            if tid != me:
                self._count(frame)

    def _count(self, frame) -> None:  # noqa: ANN001
        leaf = _where(frame)
        f = frame
        while f is not None and not any(m in f.f_code.co_filename for m in _MARKERS):
            f = f.f_back
        if f is None:
            return
        if frame.f_code.co_filename.endswith("threading.py"):
            self.idle += 1  # waiting for a slot, a lock or other threads: not where time goes
            return
        self.samples += 1
        self.counts[(_where(f), leaf if f is not frame else "")] += 1

    def report(self, top: int = 30) -> str:
        """The `top` most frequent (project frame, actual frame) pairs with their shares."""
        n = max(self.samples, 1)
        lines = [f"{self.samples} thread samples in project code, every {self.interval * 1e3:.0f} ms "
                 f"(and {self.idle} of threads blocked on a lock, event or queue, not listed)"]
        for (mine, leaf), c in self.counts.most_common(top):
            lines.append(f"{100 * c / n:5.1f}%  {mine}" + (f"  <- {leaf}" if leaf else ""))
        return "\n".join(lines)


def _where(frame) -> str:  # noqa: ANN001
    code = frame.f_code
    return f"{code.co_name} ({os.path.basename(code.co_filename)}:{frame.f_lineno})"


__all__ = ["Periodic", "StackSampler"]
