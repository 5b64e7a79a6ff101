"""Readers-writer lock over one GPU, for threads of one process and for processes of one machine.

Guarantees of `GpuLock`: `shared()` regions (correctness checks, compilation's first call) may
overlap each other; an `exclusive()` region (a timed region) overlaps nothing that holds the same
lock file, in this process or another; a waiting writer is served before readers that arrive
after it, within a process and across processes; each thread's waits and exclusive holds are
summed (`take_stats`); `alone()` holds the lock exclusively for a whole stretch of one thread's work,
that thread's own nested regions passing straight through; a lock another process never releases fails after `FLOCK_TIMEOUT_S` with
TimeoutError instead of hanging.
"""
from __future__ import annotations

import contextlib
import fcntl
import threading
import time
from pathlib import Path


class GpuLock:
    """Readers-writer lock per GPU: checks share the GPU, a timed region has it alone.

    Without MPS, kernels of different processes time-slice on the GPU, so any check running in
    another runner during a timed region would show up in its timings. Checks take the lock
    shared, timing takes it exclusive; writers are preferred so timing is never starved. The
    in-process part is a condition variable; an flock (shared / exclusive) extends it to other
    processes on the same machine (other harnesses, `cudaperf.torchtasks.verify`'s pool), with
    the same preference: a writer holds a second lock file, the turnstile, while it waits for the
    GPU file, and a reader passes through the turnstile before it takes the GPU file shared, so
    readers arriving after a waiting writer queue behind it instead of starving it.

    Each thread's waits and exclusive holds are summed (`take_stats`), so a result record can
    show how long its evaluation queued for the GPU: the measure of lock contention.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._turnstile = self.path.with_name(self.path.name + ".turnstile")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._cv = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0
        self._stats = threading.local()

    def _add(self, key: str, seconds: float) -> None:
        d = self._stats.__dict__.setdefault("d", {})
        d[key] = d.get(key, 0.0) + seconds

    def take_stats(self) -> dict[str, float]:
        """This thread's summed seconds since the last call: ``lock_wait_shared``,
        ``lock_wait_exclusive`` and ``lock_held_exclusive``."""
        d = self._stats.__dict__.pop("d", {})
        return {k: round(v, 4) for k, v in d.items()}

    FLOCK_TIMEOUT_S = 300.0

    def _flock(self, fh, kind: int) -> None:  # noqa: ANN001
        """flock with a deadline: a process elsewhere that never lets go must fail one candidate
        with an error, not hang every worker of this harness."""
        deadline = time.monotonic() + self.FLOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(fh, kind | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"GPU lock {self.path} not granted within {self.FLOCK_TIMEOUT_S:.0f} s") from None
                time.sleep(0.002)

    def _holds_alone(self) -> bool:
        return getattr(self._stats, "alone", False)

    @contextlib.contextmanager
    def alone(self):
        """The GPU for this thread alone over a whole stretch of work (a runner's life): nothing
        of any other thread or process holding this lock runs meanwhile. Why: a candidate whose
        code can launch GPU work of its own accord (a load-time constructor, a thread, a signal
        handler) would otherwise time-slice the GPU under other candidates' timed regions and
        disturb their numbers. This thread's own shared() / exclusive() regions inside pass
        straight through (they would otherwise wait on themselves)."""
        if self._holds_alone():
            yield
            return
        with self.exclusive():
            self._stats.alone = True
            try:
                yield
            finally:
                self._stats.alone = False

    @contextlib.contextmanager
    def shared(self):
        if self._holds_alone():
            yield
            return
        t = time.perf_counter()
        with self._cv:
            while self._writer or self._waiting_writers:
                self._cv.wait()
            self._readers += 1
        try:
            with open(self._turnstile, "a+") as ts:  # behind a writer of another process, if any
                self._flock(ts, fcntl.LOCK_EX)
            with open(self.path, "a+") as fh:
                self._flock(fh, fcntl.LOCK_SH)
                self._add("lock_wait_shared", time.perf_counter() - t)
                yield
        finally:
            with self._cv:
                self._readers -= 1
                self._cv.notify_all()

    @contextlib.contextmanager
    def exclusive(self):
        if self._holds_alone():
            yield
            return
        t = time.perf_counter()
        with self._cv:
            self._waiting_writers += 1
            while self._writer or self._readers:
                self._cv.wait()
            self._waiting_writers -= 1
            self._writer = True
        try:
            with open(self._turnstile, "a+") as ts, open(self.path, "a+") as fh:
                self._flock(ts, fcntl.LOCK_EX)  # no new reader of any process gets past this
                self._flock(fh, fcntl.LOCK_EX)
                t1 = time.perf_counter()
                self._add("lock_wait_exclusive", t1 - t)
                try:
                    yield
                finally:
                    self._add("lock_held_exclusive", time.perf_counter() - t1)
        finally:
            with self._cv:
                self._writer = False
                self._cv.notify_all()
