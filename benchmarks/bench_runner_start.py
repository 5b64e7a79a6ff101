"""How fast can fresh sandboxed runners get a CUDA context? (issue 3: what bounds throughput)

Every candidate runs in a fresh runner process (`cudaperf.gpuworker.Runner`), whose `init`
creates a CUDA context and allocates the L2-flush buffer. bench_harness.py showed runner starts
growing with the number of runner threads (1.2 s at 12, 2.7 s at 16, 4.8 s at 24 on the H200) once
`init` left the GPU lock, which points at context creation being serialised below us. This
benchmark starts `c` runners at once (c = 1, 4, 8, 16 ...), and times each one's spawn, `init` and
quit, and the batch's wall time: contexts per second at each concurrency is the ceiling that one
context per candidate puts on candidates per minute. Not a test; prints and writes JSON.

    python benchmarks/bench_runner_start.py --out data/bench/
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaperf import envinfo, gpuworker, sandbox  # noqa: E402
from cudaperf.config import L2_FLUSH_BYTES  # noqa: E402
from cudaperf.devtasks import dev_tasks  # noqa: E402


def one(binary: Path, shim: Path, base: Path, flush: int, out: list, barrier: threading.Barrier) -> None:
    limits = gpuworker.RunnerLimits(run_timeout_s=30, mem_bytes=8 << 30, fsize_bytes=64 << 20)
    barrier.wait()
    with sandbox.acquire_uid() as uid:
        scratch = sandbox.make_scratch(base, uid=uid, prefix="rs-")
        t0 = time.perf_counter()
        r = gpuworker.Runner(binary, gpu=0, scratch=scratch, uid=uid, limits=limits)
        t1 = time.perf_counter()
        rep = r.request(f"init {r.stage(shim, 'shim.so')} {flush}", timeout=120)
        t2 = time.perf_counter()
        r.quit()
        r.close()
        t3 = time.perf_counter()
        sandbox.cleanup_scratch(scratch)
    out.append({"spawn_s": t1 - t0, "init_s": t2 - t1, "quit_s": t3 - t2, "ok": rep.startswith("ok"),
                "start": t0, "end": t3})


def batch(binary: Path, shim: Path, base: Path, conc: int, flush: int) -> dict:
    out: list = []
    barrier = threading.Barrier(conc)
    ts = [threading.Thread(target=one, args=(binary, shim, base, flush, out, barrier)) for _ in range(conc)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = max(o["end"] for o in out) - min(o["start"] for o in out)
    med = {k: round(statistics.median(o[k] for o in out), 4) for k in ("spawn_s", "init_s", "quit_s")}
    return {"concurrency": conc, "flush_bytes": flush, "ok": sum(o["ok"] for o in out), "wall_s": round(wall, 3),
            "contexts_per_s": round(conc / wall, 2), **{f"median_{k}": v for k, v in med.items()},
            "max_init_s": round(max(o["init_s"] for o in out), 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8, 16, 32])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cache-dir", default="/tmp/cudaperf-runner-bench")
    ap.add_argument("--out", default="data/bench")
    a = ap.parse_args(argv)
    if not envinfo.gpu_available():
        print("bench_runner_start: no GPU visible; this benchmark measures CUDA context creation.")
        return 2
    cache = Path(a.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    binary = gpuworker.build_runner(cache)
    shim = gpuworker.build_shim(dev_tasks()[0], cache)
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else cache
    rows = []
    for flush in (L2_FLUSH_BYTES, 0):
        for c in a.concurrency:
            for k in range(a.rounds):
                r = batch(binary, shim, base, c, flush)
                r["round"] = k
                rows.append(r)
                print(json.dumps(r), flush=True)
    gpu = envinfo.gpus()[0]["name"]
    d = Path(a.out)
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"runner_start_{envinfo.gpu_slug(gpu)}.json"
    f.write_text(json.dumps({"gpu": gpu, "manifest": envinfo.machine_manifest(with_torch=False),
                             "command": envinfo.invocation(), "rows": rows}, indent=1))
    print(f"wrote {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
