"""cudaperf.ceilings: the measuring code runs, checks its own results, and files per GPU."""
from __future__ import annotations

import json
import math

import pytest

from cudaperf import ceilings


def test_measure_runs_on_cpu_with_tiny_sizes():
    r = ceilings.measure(device="cpu", copy_bytes=1 << 20, n=64, warmup=1, repeats=3)
    for key in ("copy_bandwidth_bytes_per_s", "matmul_fp32_flops_per_s",
                "matmul_tf32_flops_per_s", "matmul_bf16_flops_per_s"):
        assert math.isfinite(r[key]) and r[key] > 0, key
    assert len(r["details"]["copy"]["times_s"]) == 3
    assert r["details"]["copy"]["bytes_moved"] == 2 * (1 << 20)
    assert r["details"]["timer"] == "perf_counter" and r["gpu"] is None


def test_wrong_matmul_is_caught(monkeypatch):
    import torch

    def zeros(a, b, out):  # a "kernel" that is fast because it does nothing
        return out.zero_()

    monkeypatch.setattr(torch, "matmul", zeros)
    with pytest.raises(RuntimeError, match="wrong"):
        ceilings.matmul_rate("cpu", n=32, repeats=1, warmup=0)


def test_wrong_copy_is_caught(monkeypatch):
    import torch

    real = torch.Tensor.copy_
    monkeypatch.setattr(torch.Tensor, "copy_", lambda self, src: real(self, src * 0.5))
    with pytest.raises(RuntimeError, match="wrong data"):
        ceilings.copy_bandwidth("cpu", nbytes=1 << 16, repeats=1, warmup=0)


def test_save_refuses_cpu_numbers(tmp_path):
    r = ceilings.measure(device="cpu", copy_bytes=1 << 16, n=16, warmup=0, repeats=1)
    with pytest.raises(ValueError, match="GPU"):
        ceilings.save(r, tmp_path)


def test_save_load_by_gpu_name(tmp_path):
    r = ceilings.measure(device="cpu", copy_bytes=1 << 16, n=16, warmup=0, repeats=1)
    r.update(device="cuda", gpu="NVIDIA Test GPU")  # file handling only; numbers are not claims
    path = ceilings.save(r, tmp_path, command="pytest")
    assert path == tmp_path / "nvidia-test-gpu.json"
    back = ceilings.load("NVIDIA Test GPU", tmp_path)
    assert back["copy_bandwidth_bytes_per_s"] == r["copy_bandwidth_bytes_per_s"]
    assert back["measured_with"]["command"] == "pytest"
    assert set(back["measured_with"]) >= {"gpu", "driver", "torch", "cuda_runtime", "git"}
    assert ceilings.load("NVIDIA Other", tmp_path) is None
    assert [x["gpu"] for x in ceilings.load_all(tmp_path)] == ["NVIDIA Test GPU"]
    json.loads(path.read_text())


def test_committed_ceilings_are_well_formed():
    for rec in ceilings.load_all():
        assert rec["device"].startswith("cuda") and rec["gpu"]
        assert rec["details"]["repeats"] >= 10
        assert 1e11 < rec["copy_bandwidth_bytes_per_s"] < 1e14  # 0.1 .. 100 TB/s
        assert rec["matmul_bf16_flops_per_s"] > rec["matmul_fp32_flops_per_s"]


@pytest.mark.gpu
def test_measure_on_gpu():
    r = ceilings.measure("cuda", copy_bytes=256 << 20, n=2048, warmup=2, repeats=10)
    assert r["copy_bandwidth_bytes_per_s"] > 1e11
    assert r["matmul_bf16_flops_per_s"] > r["matmul_fp32_flops_per_s"]
    assert r["details"]["timer"] == "cuda events"
