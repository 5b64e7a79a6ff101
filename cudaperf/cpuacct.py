"""Which processes used the machine's CPU during a run: nvcc's stages, runners, references, Python.

The harness is CPU-bound on the H200 machine (bench_harness, session 13: 82-84 % of 16 cores busy
at 159 candidates/min), and a thread-stack profile of the Python process cannot say whether the
CPU went to nvcc, to the runner processes or to the harness itself. `ProcCpu` answers that:

- `ProcCpu(interval)` is a context manager that polls ``/proc/<pid>/stat`` of every process of
  the machine every `interval` seconds and keeps, per pid, the last user + system CPU seconds seen
  and the command name (``comm``: ``cicc``, ``ptxas``, ``cc1plus``, ``python3``, ...). Processes
  already running at the start are counted from their value then, so only CPU used during the run
  is reported.
- `machine_busy_share()` is the share of the whole machine's CPU time that was busy over the run
  (``/proc/stat``): saturated cores or a slow step.
- `by_command()` sums the CPU seconds per command name, largest first. A process that starts and
  ends between two polls is not seen at all; `self_and_children()` (getrusage of this process and
  of its waited-for children over the same span) gives totals that include those, so the share the
  poller missed is known (``missed_children_s``).
- Never raises into the measured program; on a system without /proc it reports nothing.
"""
from __future__ import annotations

import contextlib
import os
import resource
from pathlib import Path

from cudaperf.stacksample import Periodic

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _read_all() -> dict[int, tuple[str, float]]:
    """{pid: (comm, user+system CPU seconds)} of every readable process."""
    out: dict[int, tuple[str, float]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for e in entries:
        if not e.isdigit():
            continue
        try:
            raw = Path("/proc", e, "stat").read_text()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        # comm is in parentheses and may contain spaces or parentheses: split at the last ')'
        lp, rp = raw.find("("), raw.rfind(")")
        if lp < 0 or rp < 0:
            continue
        fields = raw[rp + 2:].split()
        try:
            cpu = (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14 and 15)
        except (IndexError, ValueError):
            continue
        out[int(e)] = (raw[lp + 1:rp], cpu)
    return out


def _rusage() -> tuple[float, float]:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime


def _machine_cpu() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from /proc/stat; None where there is none."""
    try:
        f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = f[3] + (f[4] if len(f) > 4 else 0)  # idle + iowait
    return sum(f) - idle, sum(f)


def _busy_share(a: tuple[int, int] | None, b: tuple[int, int] | None) -> float | None:
    """Share of the machine's CPU time that was busy between two `_machine_cpu` readings."""
    if a is None or b is None or b[1] <= a[1]:
        return None
    return round((b[0] - a[0]) / (b[1] - a[1]), 4)


class ProcCpu(Periodic):
    thread_name = "proc-cpu"

    def __init__(self, interval: float = 0.25):
        super().__init__(interval)
        self._start: dict[int, float] = {}
        self._last: dict[int, tuple[str, float]] = {}
        self._ru0 = self._ru1 = (0.0, 0.0)
        self._machine0 = self._machine1 = None

    def __enter__(self) -> "ProcCpu":
        self._ru0, self._machine0 = _rusage(), _machine_cpu()
        snap = _read_all()
        self._start = {pid: cpu for pid, (_, cpu) in snap.items()}
        self._last = dict(snap)
        return super().__enter__()

    def __exit__(self, *exc) -> None:  # noqa: ANN002
        super().__exit__(*exc)
        with contextlib.suppress(Exception):  # accounting must not break the run
            self._tick()
        self._ru1, self._machine1 = _rusage(), _machine_cpu()

    def _tick(self) -> None:
        for pid, (comm, cpu) in _read_all().items():
            old = self._last.get(pid)
            if old is not None and old[0] != comm and pid in self._start:
                # the pid was reused by a new process (or it exec'd): count it afresh
                self._start.pop(pid)
            self._last[pid] = (comm, cpu)

    def machine_busy_share(self) -> float | None:
        """Share of the whole machine's CPU time that was busy during the run (/proc/stat)."""
        return _busy_share(self._machine0, self._machine1)

    def by_command(self) -> dict[str, float]:
        """CPU seconds used during the run per command name, largest first."""
        acc: dict[str, float] = {}
        for pid, (comm, cpu) in self._last.items():
            used = cpu - self._start.get(pid, 0.0)
            if used > 0:
                acc[comm] = acc.get(comm, 0.0) + used
        return {k: round(v, 2) for k, v in sorted(acc.items(), key=lambda kv: -kv[1])}

    def seconds_of(self, pid: int) -> float:
        """CPU seconds process `pid` used during the run, as the poller saw them (0 if never seen)."""
        return self._last.get(pid, ("", 0.0))[1] - self._start.get(pid, 0.0)

    def self_and_children(self) -> dict[str, float]:
        """getrusage totals over the run: this process, its waited-for children, and how much of
        the children's CPU the poller did not see (short-lived processes)."""
        me = self._ru1[0] - self._ru0[0]
        kids = self._ru1[1] - self._ru0[1]
        seen = sum(self.by_command().values())
        mine_seen = self.seconds_of(os.getpid())
        return {"self_s": round(me, 2), "children_s": round(kids, 2),
                "missed_children_s": round(max(0.0, kids - (seen - mine_seen)), 2)}


__all__ = ["ProcCpu"]
