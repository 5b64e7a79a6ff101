"""Every benchmark script imports and parses its arguments on a CPU machine (`--help` exits 0).

The benchmarks themselves run on a GPU and are not tests; this catches the breakage CI would
otherwise never see (an import, a renamed function, a bad argparse declaration) before a scarce
device call does."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_script_help(script):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (script, r.stderr[-2000:])
    assert "usage" in r.stdout.lower(), script


def test_torch2cuda_verify_module_help():
    r = subprocess.run([sys.executable, "-m", "cudaperf.torchtasks.verify", "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "--procs" in r.stdout, r.stderr[-2000:]
