"""The artifact's notebooks follow the conventions, are all run by run_all.sh, and the smoke
profile runs every one of them end to end within the 15-minute budget, leaving the expected files."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cudaperf import envinfo, nbtools, params, runall

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SMOKE_BUDGET_S = 15 * 60


def test_there_are_notebooks():
    assert any(p.name == "00_environment.ipynb" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_conventions(path):
    assert nbtools.problems(path) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_papermill_sees_the_annotated_parameters(path):
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    (idx,) = nbtools.parameters_cells(nb)
    declared = params.declared(nb.cells[idx].source)
    seen = runall.declared_parameters(path)
    assert set(seen) == set(declared) and "profile" in seen
    for name, info in seen.items():
        assert info["help"], f"{path.name}: parameter {name!r} has no comment"


def test_every_notebook_is_discovered():
    found = {p for _, p in runall.discover(ROOT / "notebooks")}
    assert set(NOTEBOOKS) == found, "a notebook not named NN_*.ipynb would never be run"


@pytest.mark.slow
def test_run_all_smoke_end_to_end():
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run(["./run_all.sh", "--profile", "smoke"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=SMOKE_BUDGET_S + 300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    summary = json.loads((ROOT / "runs/smoke/summary.json").read_text())
    assert summary["ok"] and summary["profile"] == "smoke"
    assert [r["source"] for r in summary["notebooks"]] == [
        str(p.relative_to(ROOT)) for p in NOTEBOOKS]
    assert all(r["status"] == "ok" for r in summary["notebooks"])
    assert summary["seconds"] <= SMOKE_BUDGET_S, "smoke profile over its 15-minute budget"
    for r in summary["notebooks"]:
        assert Path(r["output"]).is_file()
    assert "run_all: OK" in proc.stdout and "[1/" in proc.stdout
    manifest = ROOT / "data/environment" / f"manifest_{envinfo.machine_tag()}.json"
    assert manifest.is_file()
    m = json.loads(manifest.read_text())
    assert m["python"] and m["packages"]["papermill"]
