"""Device memory one process holds, read by the trusted harness through NVML.

Why: a shared runner is retired when a candidate leaves device memory behind it
(`sharedrunner.LEAK_LIMIT_BYTES`), so that a leak cannot make a later candidate's allocations
fail. The runner's own reading, `cudaMemGetInfo`, is the free memory of the whole GPU: with 12-16
runners (and, during GRPO, the trainer) allocating beside it, it moves by far more than the limit,
so clean candidates can retire their runners and kept runners be shut down (most likely why session
23's bench started 96 CUDA contexts for 240 candidates with kept runners). NVML's per-process
figure (`nvmlDeviceGetComputeRunningProcesses_v3`) is that process's alone, and the harness reads it
from outside the runner, so the candidate loaded there cannot forge it either.

Guarantees:
* `process_used_bytes(pid)` is the device memory NVML reports for `pid`, summed over the GPUs that
  list it, or None when NVML is missing or fails, lists no such process, or reports the value as
  unavailable (MIG, some virtual GPUs). Callers then fall back to the runner's own reading.
* The library is loaded and initialised once per process; calls are serialised by a lock.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Callable, Iterable

NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF  # NVML_VALUE_NOT_AVAILABLE for unsigned long long
_SUCCESS, _INSUFFICIENT_SIZE = 0, 7


class _ProcessInfo(ctypes.Structure):
    """nvmlProcessInfo_t as `nvmlDeviceGetComputeRunningProcesses_v3` fills it."""

    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


_lock = threading.Lock()
_nvml: dict = {}  # after the first call: {"list": fn, "handles": [...]}, or {"list": None} without NVML


def _load() -> dict:
    if _nvml:
        return _nvml
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        if lib.nvmlInit_v2() != _SUCCESS:
            raise OSError("nvmlInit_v2 failed")
        n = ctypes.c_uint(0)
        if lib.nvmlDeviceGetCount_v2(ctypes.byref(n)) != _SUCCESS:
            raise OSError("nvmlDeviceGetCount_v2 failed")
        handles = []
        for i in range(n.value):
            h = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(i), ctypes.byref(h)) == _SUCCESS:
                handles.append(h)
        fn = lib.nvmlDeviceGetComputeRunningProcesses_v3
        fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(_ProcessInfo)]
        fn.restype = ctypes.c_int
        _nvml.update({"list": fn, "handles": handles})
    except (OSError, AttributeError):  # no driver library here, or one without the _v3 call
        _nvml.update({"list": None, "handles": []})
    return _nvml


def _device_processes(fn: Callable, handle) -> list[tuple[int, int]] | None:
    """(pid, used bytes) of the compute processes on one GPU; None if NVML fails."""
    count = ctypes.c_uint(0)
    rc = fn(handle, ctypes.byref(count), None)
    if rc == _SUCCESS:
        return []
    for _ in range(3):  # the list may grow between the size query and the read
        if rc != _INSUFFICIENT_SIZE:
            return None
        cap = count.value + 8
        rows = (_ProcessInfo * cap)()
        count = ctypes.c_uint(cap)
        rc = fn(handle, ctypes.byref(count), rows)
        if rc == _SUCCESS:
            return [(int(rows[i].pid), int(rows[i].usedGpuMemory)) for i in range(count.value)]
    return None


def compute_processes() -> list[tuple[int, int]] | None:
    """(pid, used bytes) of every compute process on every GPU NVML sees; None without NVML."""
    with _lock:
        nv = _load()
        if nv["list"] is None:
            return None
        out: list[tuple[int, int]] = []
        for h in nv["handles"]:
            rows = _device_processes(nv["list"], h)
            if rows is None:
                return None
            out += rows
        return out


def process_used_bytes(pid: int, listing: Iterable[tuple[int, int]] | None = None) -> int | None:
    """Device memory `pid` holds (module docstring); `listing` replaces NVML's (tests)."""
    rows = compute_processes() if listing is None else list(listing)
    if rows is None:
        return None
    used = [u for p, u in rows if p == pid]
    if not used or NOT_AVAILABLE in used:
        return None
    return sum(used)
