"""The harness's GPU path on a machine without a GPU: a host-emulated runner and C candidates.

`emulated_harness` yields a real `Harness` whose runner binary is `cudaperf/runner/runner.cpp`
compiled with g++ against `tests/hostemu/cuda_runtime.h` (device memory is host memory, events
are the host clock) and whose "nvcc" is gcc on plain C candidates (the task's entry on host
pointers; a c2cuda task's C reference is one). Everything between the harness and the runner is
the real thing: sandboxed runner processes and their protocol, the GPU lock, inputs, references,
poisoned outputs, checks, timing bookkeeping, the recheck. Used by the tests (tests/test_hostemu.py)
and by `benchmarks/bench_harness_cpu.py`, which measures the harness's own CPU per candidate.

Guarantees: the patched functions are restored when the context exits (also on error); runtimes
are host times and say nothing about GPU performance; the naive variant of every task is its C
reference (the emulator runs no CUDA).
"""
from __future__ import annotations

import contextlib
import hashlib
import subprocess
import threading
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
EMULATOR_INCLUDE = ROOT / "tests" / "hostemu"


RUNNER_SOURCE = ROOT / "cudaperf" / "runner" / "runner.cpp"


def build_emulated_runner(out_dir: Path, source: Path = RUNNER_SOURCE) -> Path:
    """The runner (`source`: runner.cpp, or another version of it to compare) built with g++
    against the host emulator's cuda_runtime.h."""
    exe = Path(out_dir) / "cudaperf_runner_emu"
    subprocess.run(["g++", "-O2", "-I", str(EMULATOR_INCLUDE), "-x", "c++", str(source), "-o", str(exe),
                    "-ldl", "-rdynamic"], check=True)
    return exe


@contextlib.contextmanager
def emulated_harness(harness_config: Any, work_dir: Path, *, workers_per_gpu: int = 2,
                     use_store: bool = False) -> Iterator[Any]:
    """A Harness on the host emulator (see the module doc); closed and unpatched on exit."""
    from cudaperf import gpuworker, harness as H
    from cudaperf.compile import CompileResult

    libs = Path(work_dir)
    libs.mkdir(parents=True, exist_ok=True)
    runner = build_emulated_runner(libs)
    gpuworker._open_path(runner)
    built = threading.Lock()  # threads compile the same naive variant at once: build it once

    def gcc(source: str, **_kw: Any) -> CompileResult:
        so = libs / f"c{hashlib.sha256(source.encode()).hexdigest()[:16]}.so"
        with built:
            if not so.exists():
                src = so.with_suffix(".c")
                src.write_text(source)
                p = subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-x", "c", str(src), "-o", str(so)],
                                   capture_output=True, text=True)
                if p.returncode:
                    return CompileResult(ok=False, so_path=None, log=p.stderr)
                gpuworker._open_path(so)
        return CompileResult(ok=True, so_path=str(so), log="")

    saved = (gpuworker.build_runner, H.compile_candidate, H.Harness._baseline_so)
    gpuworker.build_runner = lambda cache_dir: runner
    H.compile_candidate = gcc
    H.Harness._baseline_so = lambda self, task: gcc(task.reference).so_path
    h = None
    try:
        h = H.Harness(harness_config, use_store=use_store, gpus=[0], workers_per_gpu=workers_per_gpu)
        yield h
    finally:
        if h is not None:
            h.close()
        gpuworker.build_runner, H.compile_candidate, H.Harness._baseline_so = saved


__all__ = ["EMULATOR_INCLUDE", "RUNNER_SOURCE", "build_emulated_runner", "emulated_harness"]
