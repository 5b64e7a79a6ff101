"""Hardware ceilings of a GPU, measured once per GPU model and filed in data/ceilings/<slug>.json.

The harness uses them for roofline bounds: a candidate that moves B bytes cannot run faster than
B / copy_bandwidth, so a speedup beyond that is flagged as impossible (DESIGN §4).

What is measured (torch on one CUDA device):
- device-to-device copy bandwidth: one large copy (2 GiB by default, less if memory is short),
  counted as bytes read + bytes written over the elapsed time;
- dense matrix-product rate, n x n x n (8192 by default) on random normal data (never zeros: some
  GPUs finish zero operands faster), for fp32 with TF32 disabled, fp32 with TF32 allowed, and bf16.
Every figure is timed with CUDA events after warm-up and is the median of >= 10 repetitions; the
repetition lists are kept so the spread is visible. A corner of each product is checked against
float64 so that a silently wrong kernel cannot pass as a fast one.

`measure(device="cpu", ...)` runs the same code with a wall clock so it can be tested without a
GPU; such numbers are not ceilings and `save` refuses them.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

from cudaperf import envinfo

SCHEMA = 1


def _device(device: Any) -> Any:
    """torch.device with an explicit index for CUDA ('cuda' -> 'cuda:<current>'): several CUDA
    calls (set_device, mem_get_info) refuse an index-less device."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    return dev


def _timer(fn: Callable[[], Any], device: Any, warmup: int, repeats: int) -> list[float]:
    """Seconds per call of fn, one entry per repetition, after `warmup` untimed calls."""
    import torch

    device = _device(device)
    for _ in range(warmup):
        fn()
    times: list[float] = []
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        for _ in range(repeats):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) / 1e3)
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return times


def copy_bandwidth(device: str = "cuda", nbytes: int = 2 << 30, warmup: int = 3,
                   repeats: int = 10) -> dict[str, Any]:
    """Device-to-device copy rate in bytes/s (read + write) of one nbytes buffer."""
    import torch

    device = _device(device)
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        nbytes = min(nbytes, int(free * 0.4))  # two buffers must fit with room to spare
    n = max(nbytes // 4, 1)
    src = torch.rand(n, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    times = _timer(lambda: dst.copy_(src), device, warmup, repeats)
    if not torch.equal(dst[:4096], src[:4096]) or not torch.equal(dst[-4096:], src[-4096:]):
        raise RuntimeError("device copy produced wrong data; bandwidth figure would be meaningless")
    moved = 2 * n * 4
    med = statistics.median(times)
    del src, dst
    return {"bytes_per_s": moved / med, "bytes_moved": moved, "median_s": med, "times_s": times}


def matmul_rate(device: str = "cuda", n: int = 8192, dtype: str = "float32", tf32: bool = False,
                warmup: int = 3, repeats: int = 10, seed: int = 0) -> dict[str, Any]:
    """FLOP/s (2 n^3 per product) of an n x n x n product on random data."""
    import torch

    device = _device(device)
    dt = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(n, n, device=device, dtype=torch.float32, generator=gen).to(dt)
    b = torch.randn(n, n, device=device, dtype=torch.float32, generator=gen).to(dt)
    c = torch.empty(n, n, device=device, dtype=dt)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        times = _timer(lambda: torch.matmul(a, b, out=c), device, warmup, repeats)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    k = min(n, 8)
    ref = a[:k].double() @ b[:, :k].double()
    rel_err = float(((c[:k, :k].double() - ref).norm() / ref.norm()).item())
    # Reduced-precision inputs/accumulation err ~1e-3..1e-2; anything near 1 means garbage output.
    tol = 1e-4 if (dtype == "float32" and not tf32) else 5e-2
    if not rel_err < tol:
        raise RuntimeError(f"matmul {dtype} tf32={tf32} wrong: relative error {rel_err:.3g}")
    med = statistics.median(times)
    del a, b, c
    return {"flops_per_s": 2.0 * n**3 / med, "n": n, "dtype": dtype, "tf32": tf32,
            "median_s": med, "times_s": times, "check_rel_err": rel_err}


def measure(device: str = "cuda", copy_bytes: int = 2 << 30, n: int = 8192, warmup: int = 3,
            repeats: int = 10) -> dict[str, Any]:
    """All ceilings of one device as a flat dict (rates in bytes/s and FLOP/s) plus details."""
    import torch

    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("no CUDA device visible: ceilings are measured on a GPU")
    device = _device(device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
        gpu_name = torch.cuda.get_device_name(device)
    else:
        gpu_name = None
    copy = copy_bandwidth(device, copy_bytes, warmup, repeats)
    mm = {
        "fp32": matmul_rate(device, n, "float32", False, warmup, repeats),
        "tf32": matmul_rate(device, n, "float32", True, warmup, repeats),
        "bf16": matmul_rate(device, n, "bfloat16", False, warmup, repeats),
    }
    return {
        "schema": SCHEMA,
        "device": str(device),
        "gpu": gpu_name,
        "copy_bandwidth_bytes_per_s": copy["bytes_per_s"],
        "matmul_fp32_flops_per_s": mm["fp32"]["flops_per_s"],
        "matmul_tf32_flops_per_s": mm["tf32"]["flops_per_s"],
        "matmul_bf16_flops_per_s": mm["bf16"]["flops_per_s"],
        "details": {"copy": copy, "matmul": mm, "warmup": warmup, "repeats": repeats,
                    "timer": "cuda events" if device.type == "cuda" else "perf_counter"},
    }


def default_dir() -> Path:
    return envinfo.repo_root() / "data" / "ceilings"


def save(result: dict[str, Any], path: str | Path | None = None,
         command: str | None = None) -> Path:
    """Write result with the manifest subset that identifies where it was measured.

    path may be a directory (the file is <dir>/<gpu_slug>.json) or a .json file.
    """
    if not result.get("gpu") or not str(result.get("device", "")).startswith("cuda"):
        raise ValueError("only GPU measurements are ceilings; this result has no GPU")
    target = Path(path) if path is not None else default_dir()
    if target.suffix != ".json":
        target = target / f"{envinfo.gpu_slug(result['gpu'])}.json"
    man = envinfo.machine_manifest()
    gpu_rows = [g for g in man["gpus"] if g["name"] == result["gpu"]] or man["gpus"]
    record = dict(result)
    record["measured_with"] = {
        "gpu": gpu_rows[0] if gpu_rows else {"name": result["gpu"]},
        "driver": gpu_rows[0].get("driver") if gpu_rows else None,
        "torch": man["torch_cuda"]["torch"] if man["torch_cuda"] else None,
        "cuda_runtime": man["torch_cuda"]["cuda_runtime"] if man["torch_cuda"] else None,
        "nvcc": man["nvcc"],
        "git": man["git"],
        "timestamp_utc": man["timestamp_utc"],
        "command": command or envinfo.invocation(),
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return target


def load(gpu_name: str, directory: str | Path | None = None) -> dict[str, Any] | None:
    """The committed ceilings of this GPU model, or None when it has not been measured."""
    d = Path(directory) if directory is not None else default_dir()
    f = d / f"{envinfo.gpu_slug(gpu_name)}.json"
    if not f.is_file():
        return None
    return json.loads(f.read_text())


def load_all(directory: str | Path | None = None) -> list[dict[str, Any]]:
    """Every committed ceilings file, sorted by GPU name."""
    d = Path(directory) if directory is not None else default_dir()
    if not d.is_dir():
        return []
    recs = [json.loads(f.read_text()) for f in sorted(d.glob("*.json"))]
    return sorted(recs, key=lambda r: str(r.get("gpu")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cudaperf.ceilings", description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(default_dir()), help="directory (or .json file) to write")
    ap.add_argument("--device", default="cuda", help="torch device, e.g. cuda or cuda:1")
    ap.add_argument("--copy-gib", type=float, default=2.0, help="copy buffer size in GiB")
    ap.add_argument("--n", type=int, default=8192, help="matrix size of the products")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args(argv)
    res = measure(args.device, int(args.copy_gib * 2**30), args.n, args.warmup, args.repeats)
    out = save(res, args.out, command="python -m cudaperf.ceilings " + " ".join(argv or sys.argv[1:]))
    print(f"{res['gpu']}: copy {res['copy_bandwidth_bytes_per_s'] / 1e12:.2f} TB/s, "
          f"fp32 {res['matmul_fp32_flops_per_s'] / 1e12:.1f} TFLOP/s, "
          f"tf32 {res['matmul_tf32_flops_per_s'] / 1e12:.1f} TFLOP/s, "
          f"bf16 {res['matmul_bf16_flops_per_s'] / 1e12:.1f} TFLOP/s -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
