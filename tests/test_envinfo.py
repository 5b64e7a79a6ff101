"""cudaperf.envinfo: GPU detection, manifest completeness, slugs and quiet manifest rewrites."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys
import time

import pytest

from cudaperf import envinfo

KEYS = {"timestamp_utc", "hostname", "os", "platform", "cpu_model", "cpu_count", "memory_gib",
        "python", "gpus", "gpu_count", "nvcc", "gcc", "torch_cuda", "packages", "git"}


@pytest.mark.parametrize("name, slug", [
    ("NVIDIA H200", "nvidia-h200"),
    ("NVIDIA A100-SXM4-80GB", "nvidia-a100-sxm4-80gb"),
    ("  NVIDIA GeForce RTX 4090 ", "nvidia-geforce-rtx-4090"),
    ("../../etc/passwd", "etc-passwd"),  # a name never escapes data/ceilings/
])
def test_gpu_slug(name, slug):
    assert envinfo.gpu_slug(name) == slug


def test_gpu_slug_rejects_empty():
    with pytest.raises(ValueError):
        envinfo.gpu_slug(" // ")


def test_manifest_complete_and_serialisable():
    m = envinfo.machine_manifest(with_torch=False)
    assert set(m) == KEYS
    json.dumps(m)
    assert m["cpu_count"] >= 1 and re.match(r"\d+\.\d+", m["python"])
    assert set(envinfo.STACK) <= set(m["packages"])
    assert m["packages"]["numpy"] is not None
    assert m["gpu_count"] == len(m["gpus"])
    assert re.fullmatch(r"[0-9a-f]{40}", m["git"]["commit"] or "0" * 40)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_nvcc_version_parsed():
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", envinfo.nvcc_version())


def _fake_nvidia_smi(tmp_path, monkeypatch, body: str):
    exe = tmp_path / "nvidia-smi"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_fake_gpu_detected_and_parsed(tmp_path, monkeypatch):
    _fake_nvidia_smi(tmp_path, monkeypatch, """
case "$1" in
  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-x)";;
  *) echo "0, NVIDIA H200, 580.82.07, 143771, 9.0";;
esac
""")
    assert envinfo.gpu_available()
    assert envinfo.gpus() == [{"index": 0, "name": "NVIDIA H200", "driver": "580.82.07",
                               "memory_mib": 143771, "compute_capability": "9.0"}]
    assert envinfo.machine_tag({"gpus": envinfo.gpus()}) == "nvidia-h200"


def test_failing_or_hidden_gpu_means_none(tmp_path, monkeypatch):
    _fake_nvidia_smi(tmp_path, monkeypatch, "echo 'NVIDIA-SMI has failed' >&2; exit 9\n")
    monkeypatch.setitem(sys.modules, "torch", None)  # and no torch fallback to ask
    assert envinfo.gpu_available() is False
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert envinfo.gpu_available() is False


def test_machine_tag_cpu_has_no_hostname():
    tag = envinfo.machine_tag({"gpus": [], "cpu_count": 2})
    assert tag == "cpu-2core"


def test_write_manifest_ignores_volatile_facts(tmp_path):
    path = tmp_path / "m.json"
    m = envinfo.machine_manifest(with_torch=False)
    assert envinfo.write_manifest(m, path)
    before = path.stat().st_mtime_ns
    time.sleep(0.01)
    later = dict(m, timestamp_utc="2099-01-01T00:00:00+00:00", hostname="elsewhere",
                 git={"commit": "f" * 40, "dirty": True})
    assert not envinfo.write_manifest(later, path)
    assert path.stat().st_mtime_ns == before
    changed = dict(m, gcc="99.0")
    assert envinfo.write_manifest(changed, path)
    assert json.loads(path.read_text())["gcc"] == "99.0"


def test_repo_root_is_the_checkout():
    assert (envinfo.repo_root() / "pyproject.toml").is_file()
    assert (envinfo.repo_root() / "cudaperf" / "envinfo.py").is_file()


def test_git_state_takes_the_commit_a_device_command_names(monkeypatch):
    from cudaperf import envinfo

    monkeypatch.delenv("CUDAPERF_COMMIT", raising=False)
    here = envinfo.git_state()
    assert here.get("source") != "env"
    monkeypatch.setenv("CUDAPERF_COMMIT", "abc1234")
    assert envinfo.git_state() == {"commit": "abc1234", "dirty": None, "source": "env"}


def test_invocation_is_a_shell_command_line():
    import shlex
    import sys
    from pathlib import Path

    from cudaperf import envinfo

    line = envinfo.invocation(["bench.py", "--out", "a dir"])
    assert shlex.split(line) == [Path(sys.executable).name, "bench.py", "--out", "a dir"]
