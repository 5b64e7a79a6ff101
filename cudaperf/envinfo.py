"""What machine is this? GPU detection and the machine manifest every measurement is filed with.

Guarantees:
- `gpu_available()` is cheap (no CUDA context is created when `nvidia-smi -L` answers) and never
  raises: any failure means "no GPU".
- `machine_manifest()` always returns a JSON-serialisable dict with the same keys; a fact that
  cannot be found is `None` (or an empty list), never an exception. It records hostname, OS,
  CPU model and count, memory, Python, GPUs (name, driver, memory, compute capability), nvcc and
  gcc versions, versions of the package stack, git commit + dirty flag and a UTC timestamp.
- `gpu_slug(name)` turns a marketing name into a file-name-safe key ("NVIDIA H200" -> "nvidia-h200")
  so per-GPU files (ceilings, baselines) are found again by the GPU's name alone.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

# The stack whose versions decide whether a number is reproducible.
STACK = ("cudaperf", "torch", "transformers", "trl", "peft", "accelerate", "bitsandbytes",
         "datasets", "tokenizers", "lightgbm", "scikit-learn", "numpy", "scipy", "pandas",
         "pyarrow", "seaborn", "matplotlib", "papermill", "nbformat", "jupyterlab", "ipykernel",
         "tree-sitter", "tree-sitter-cuda", "cupy-cuda13x", "pytest")


def repo_root() -> Path:
    """The checkout this package lives in (editable install or source tree), else the cwd."""
    here = Path(__file__).resolve().parent.parent
    return here if (here / "pyproject.toml").is_file() else Path.cwd()


def _run(cmd: list[str], timeout: float = 10.0, cwd: str | Path | None = None) -> str | None:
    """stdout of cmd, or None if it is missing, fails or hangs."""
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def gpu_available() -> bool:
    """True when a CUDA GPU is visible to this process."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    out = _run(["nvidia-smi", "-L"], timeout=10.0)
    if out is not None:
        return "GPU" in out
    if not Path("/proc/driver/nvidia").exists() and not list(Path("/dev").glob("nvidia[0-9]*")):
        return False  # no driver, no device nodes: skip the seconds-long torch import
    try:  # containers without nvidia-smi; importing torch is slow, so this is the fallback only
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken torch install means no usable GPU
        return False


def gpu_slug(name: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200'; 'NVIDIA A100-SXM4-80GB' -> 'nvidia-a100-sxm4-80gb'."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.strip().lower()).strip("-")
    if not slug:
        raise ValueError(f"cannot make a slug from GPU name {name!r}")
    return slug


def gpus() -> list[dict[str, Any]]:
    """One dict per visible GPU: index, name, driver, memory_mib, compute_capability."""
    q = "index,name,driver_version,memory.total,compute_cap"
    out = _run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"])
    rows: list[dict[str, Any]] = []
    if out:
        for line in out.strip().splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 5:
                continue
            idx, name, driver, mem, cc = parts
            rows.append({"index": int(idx), "name": name, "driver": driver,
                         "memory_mib": _int_or_none(mem), "compute_capability": cc})
        return rows
    try:
        import torch

        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                rows.append({"index": i, "name": p.name, "driver": None,
                             "memory_mib": p.total_memory // 2**20,
                             "compute_capability": f"{p.major}.{p.minor}"})
    except Exception:  # noqa: BLE001
        pass
    return rows


def _int_or_none(s: str) -> int | None:
    try:
        return int(float(s))
    except ValueError:
        return None


def nvcc_version() -> str | None:
    """'13.0.88'-style release string from `nvcc --version`."""
    out = _run(["nvcc", "--version"])
    if not out:
        return None
    m = re.search(r"V(\d+\.\d+\.\d+)", out) or re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1]


def gcc_version() -> str | None:
    out = _run(["gcc", "-dumpfullversion"]) or _run(["gcc", "-dumpversion"])
    return out.strip() if out else None


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def package_versions(names: tuple[str, ...] = STACK) -> dict[str, str | None]:
    """Installed distribution versions (None where not installed); no imports are done."""
    out: dict[str, str | None] = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = None
    return out


def git_state(root: str | Path | None = None) -> dict[str, Any]:
    """{'commit': sha or None, 'dirty': bool or None} of the checkout at root. $CUDAPERF_COMMIT,
    when set, is the commit instead (source 'env'): the lent GPU machine gets a copy of the
    working tree whose .git need not be the tree's (it reported the session's first commit, clean,
    while running later code), so device commands pass the commit they were launched at."""
    env = os.environ.get("CUDAPERF_COMMIT", "").strip()
    if env:
        return {"commit": env, "dirty": None, "source": "env"}
    root = Path(root) if root else repo_root()
    sha = _run(["git", "rev-parse", "HEAD"], cwd=root)
    if sha is None:
        return {"commit": None, "dirty": None}
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    return {"commit": sha.strip(), "dirty": None if status is None else bool(status.strip())}


def torch_cuda() -> dict[str, Any]:
    """torch's own view: version, CUDA runtime it was built for, cuDNN; None where absent."""
    try:
        import torch
    except Exception:  # noqa: BLE001
        return {"torch": None, "cuda_runtime": None, "cudnn": None}
    cudnn = None
    try:
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except Exception:  # noqa: BLE001
        pass
    return {"torch": torch.__version__, "cuda_runtime": torch.version.cuda, "cudnn": cudnn}


def machine_manifest(with_torch: bool = True) -> dict[str, Any]:
    """Everything needed to say where and with what a number was measured.

    `with_torch=False` skips importing torch (seconds on a cold disk) for quick manifests.
    """
    gpu_list = gpus()
    return {
        "timestamp_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_gib": memory_gib(),
        "python": sys.version.split()[0],
        "gpus": gpu_list,
        "gpu_count": len(gpu_list),
        "nvcc": nvcc_version(),
        "gcc": gcc_version(),
        "torch_cuda": torch_cuda() if with_torch else None,
        "packages": package_versions(),
        "git": git_state(),
    }


# Facts that change on every run without the machine changing.
VOLATILE = ("timestamp_utc", "hostname", "git")


def invocation(argv: list[str] | None = None) -> str:
    """The command line that made a benchmark's output (``python3 script.py --args``, quoted for a
    shell), as benchmark result files record it."""
    import shlex

    return " ".join(shlex.quote(x) for x in [Path(sys.executable).name] + list(sys.argv if argv is None else argv))


def write_manifest(manifest: dict[str, Any], path: str | Path) -> bool:
    """Write manifest as JSON unless the file already holds the same machine facts (ignoring
    VOLATILE keys), so re-running on the same machine leaves the committed file alone.
    Returns True when the file was (re)written."""
    path = Path(path)
    if path.is_file():
        try:
            old = json.loads(path.read_text())
        except ValueError:
            old = None
        strip = lambda m: {k: v for k, v in m.items() if k not in VOLATILE}  # noqa: E731
        if isinstance(old, dict) and strip(old) == strip(json.loads(json.dumps(manifest))):
            return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return True


def machine_tag(manifest: dict[str, Any] | None = None) -> str:
    """File-name key for a machine: the first GPU's slug, else 'cpu-<N>core' (no hostname, so
    re-running on a like machine overwrites the same file instead of adding noise)."""
    m = manifest if manifest is not None else {"gpus": gpus(), "cpu_count": os.cpu_count()}
    if m.get("gpus"):
        return gpu_slug(m["gpus"][0]["name"])
    return f"cpu-{m.get('cpu_count') or 0}core"


__all__ = ["STACK", "cpu_model", "gcc_version", "git_state", "gpu_available", "gpu_slug", "gpus",
           "machine_manifest", "machine_tag", "memory_gib", "nvcc_version", "package_versions",
           "repo_root", "torch_cuda", "write_manifest"]
