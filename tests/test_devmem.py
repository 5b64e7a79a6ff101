"""cudaperf.devmem (a process's own device memory through NVML) and the shared runner's leak
reading built on it (sharedrunner._held_memory / _left_behind)."""
from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest

from cudaperf import devmem, sharedrunner


def test_process_used_bytes_sums_the_pid_over_gpus_and_says_none_when_it_cannot():
    rows = [(10, 300 << 20), (11, 5 << 30), (10, 100 << 20)]
    assert devmem.process_used_bytes(10, rows) == 400 << 20
    assert devmem.process_used_bytes(12, rows) is None  # not listed: no figure, not zero
    assert devmem.process_used_bytes(10, rows + [(10, devmem.NOT_AVAILABLE)]) is None
    got = devmem.compute_processes()  # None on a machine without the NVML library
    assert got is None or all(isinstance(p, int) and isinstance(u, int) for p, u in got)


def test_device_processes_grows_its_buffer_until_the_list_fits():
    """NVML answers 'insufficient size' with the count it needs; the list may grow between the
    size query and the read, so the read is retried with room to spare."""
    sizes = iter([3, 12])
    calls = []

    def fake(handle, count, rows):
        calls.append(count._obj.value)
        if rows is None:
            count._obj.value = next(sizes)
            return 7
        if count._obj.value < 12:
            count._obj.value = next(sizes)
            return 7
        arr = ctypes.cast(rows, ctypes.POINTER(devmem._ProcessInfo))
        arr[0].pid, arr[0].usedGpuMemory = 42, 1 << 30
        count._obj.value = 1
        return 0

    assert devmem._device_processes(fake, None) == [(42, 1 << 30)]
    assert calls == [0, 11, 20]
    assert devmem._device_processes(lambda h, c, r: 0, None) == []  # nothing running
    assert devmem._device_processes(lambda h, c, r: 999, None) is None  # an NVML error


class _Runner:
    def __init__(self, free_bytes, ok=True):
        self.proc = SimpleNamespace(pid=4242)
        self.free_bytes, self.ok, self.sent = free_bytes, ok, []

    def request(self, cmd):
        self.sent.append(cmd)
        if not self.ok:
            return "err no gpu"
        return "ok" if cmd == "free" else f"ok {self.free_bytes} {80 << 30}"


def test_held_memory_prefers_the_runners_own_figure_and_compares_like_with_like(monkeypatch):
    monkeypatch.setattr(devmem, "process_used_bytes", lambda pid: 700 << 20 if pid == 4242 else None)
    r = _Runner(free_bytes=10 << 30)
    assert sharedrunner._held_memory(r) == ("nvml", 700 << 20) and r.sent == ["free"]  # buffers freed first
    monkeypatch.setattr(devmem, "process_used_bytes", lambda pid: None)  # no NVML: the GPU's free memory
    assert sharedrunner._held_memory(r) == ("gpu", -(10 << 30))
    assert sharedrunner._held_memory(_Runner(0, ok=False)) is None
    left = sharedrunner._left_behind
    assert left(("nvml", 700 << 20), ("nvml", 800 << 20)) == 100 << 20
    assert left(("gpu", -(10 << 30)), ("gpu", -(9 << 30))) == 1 << 30  # 1 GiB less free
    assert left(("nvml", 1), ("gpu", 1)) is None and left(None, ("nvml", 1)) is None
