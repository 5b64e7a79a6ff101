"""Host cost of the runner's `stage` command (reading a call's input files into host buffers,
building poisoned outputs, preparing copy-back buffers), as a shared runner pays it.

A shared runner judges a task's candidates one after another, and each candidate stages the
task's small check configurations and then its perf-size configuration and the recheck (hundreds
of MB). This drives one runner through that cycle, `--candidates` times, and prints the median
milliseconds of each kind of stage. `stage` is host-only code (no CUDA call), so on a machine
without a GPU the runner is built against the host emulator of the tests
(tests/hostemu/cuda_runtime.h) and the figure is still the real host cost of this code on this
machine; with a GPU (`--real`) the real runner is used.

    python benchmarks/bench_runner_stage.py --mb 256 --candidates 6
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _shim(out: Path) -> Path:
    src, so = out / "shim.c", out / "shim.so"
    src.write_text("void cudaperf_call(void *fn, void **a) {\n"
                   "  ((void (*)(void *, void *, void *))fn)(*(void **)a[0], *(void **)a[1], *(void **)a[2]);\n}\n")
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", str(src), "-o", str(so)], check=True)
    return so


def _argfile(scratch: Path, name: str, numel: int, seed: int) -> str:
    """Two float32 inputs of `numel` elements (files written once) and one poisoned output."""
    d = scratch / f"{name}_{seed}"
    d.mkdir(exist_ok=True)
    rng = np.random.default_rng(seed)
    for p in ("a", "b"):
        rng.random(numel, dtype=np.float32).tofile(d / f"{p}.bin")
    f = scratch / f"{name}_{seed}.args"
    f.write_text(f"P a in 4 {numel} {d.name}/a.bin -\nP b in 4 {numel} {d.name}/b.bin -\n"
                 f"P out out 4 {numel} - ffffff7f\n")
    return f.name


def main(argv=None) -> None:
    from cudaperf import gpuworker
    from cudaperf.hostemu import build_emulated_runner

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=256, help="size of each perf-size buffer (MiB)")
    ap.add_argument("--candidates", type=int, default=6)
    ap.add_argument("--real", action="store_true", help="the real runner (needs a GPU) instead of the emulated one")
    ap.add_argument("--source", default=str(ROOT / "cudaperf" / "runner" / "runner.cpp"),
                    help="runner source for the emulated build (e.g. an older version, to compare)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        exe = gpuworker.build_runner(tmp / "cache") if a.real else build_emulated_runner(tmp, Path(a.source))
        scratch = tmp / "scratch"
        scratch.mkdir()
        big = int(a.mb * (1 << 20)) // 4
        cycle = [("check", _argfile(scratch, "small", 4096, s)) for s in (1, 2, 3)]
        cycle += [("perf", _argfile(scratch, "big", big, 10)), ("recheck", _argfile(scratch, "big", big, 11))]
        r = gpuworker.Runner(exe, gpu=0 if a.real else None, scratch=scratch, uid=None,
                             limits=gpuworker.RunnerLimits(mem_bytes=64 << 30, run_timeout_s=120))
        try:
            rep = r.request(f"init {r.stage(_shim(tmp), 'shim.so')} 0", timeout=60)
            assert rep.startswith("ok"), rep
            ms: dict[str, list[float]] = {}
            for _ in range(a.candidates):
                for kind, argf in cycle:
                    t = time.perf_counter()
                    rep = r.request(f"stage {argf}", timeout=120)
                    ms.setdefault(kind, []).append((time.perf_counter() - t) * 1e3)
                    assert rep == "ok", rep
                    assert r.request("alloc", timeout=120) == "ok"
            out = {"runner": "real" if a.real else "host-emulated", "source": a.source if not a.real else None,
                   "buffer_mib": a.mb, "candidates": a.candidates,
                   **{f"{k}_stage_ms_median": round(statistics.median(v), 2) for k, v in ms.items()},
                   **{f"{k}_stage_ms_first": round(v[0], 2) for k, v in ms.items()}}
            print(json.dumps(out))
        finally:
            r.close()


if __name__ == "__main__":
    main()
