"""cudaperf.runall: discovery order, selection, parameter checks before running, stop-at-failure
reporting, untouched sources and the summary of produced files."""
from __future__ import annotations

import json

import pytest

from cudaperf import nbtools, runall

FIRST = "import cudaperf.params\nfrom pathlib import Path\n_ns0 = set(globals())"
CHECK = "P = cudaperf.params.check(globals(), _ns0)"


def _nb(path, params_src, *body):
    nbtools.write(path, [FIRST, ("parameters", params_src), CHECK, *body])


@pytest.fixture
def project(tmp_path, monkeypatch, repo_root):
    """A throwaway checkout with three notebooks; the second fails in its 4th cell (index 3)."""
    nbd = tmp_path / "notebooks"
    _nb(nbd / "00_make.ipynb", 'profile: str = "smoke"  # p\nrows: int = 3  # rows',
        "Path('data').mkdir(exist_ok=True)\n"
        "Path('data/made.txt').write_text(P['profile'] * P['rows'])")
    _nb(nbd / "01_break.ipynb", 'profile: str = "smoke"  # p\nscale: float = 1.0  # s',
        "x = 1\n\nraise RuntimeError('boom in cell three')", "Path('data/never.txt').write_text('no')")
    _nb(nbd / "02_after.ipynb", 'profile: str = "smoke"  # p',
        "Path('data/after.txt').write_text('x')")
    (tmp_path / "figures").mkdir()
    (tmp_path / "README").write_text("not a notebook")
    # the kernels run in tmp_path: make the package importable there
    monkeypatch.setenv("PYTHONPATH", str(repo_root))
    return tmp_path


def test_discover_numeric_order_and_pattern(tmp_path):
    for name in ("10_z.ipynb", "2_b.ipynb", "01_a.ipynb", "notes.ipynb", "x_01.ipynb"):
        nbtools.write(tmp_path / name, [("parameters", 'profile: str = "smoke"')])
    assert [p.name for _, p in runall.discover(tmp_path)] == ["01_a.ipynb", "2_b.ipynb", "10_z.ipynb"]


def test_duplicate_numbers_rejected(tmp_path):
    for name in ("03_a.ipynb", "3_b.ipynb"):
        nbtools.write(tmp_path / name, [("parameters", 'profile: str = "smoke"')])
    with pytest.raises(runall.RunAllError, match="share number 03"):
        runall.discover(tmp_path)


def test_select_only_and_from(project):
    nbs = runall.discover(project / "notebooks")
    assert [n for n, _ in runall.select(nbs, only=[2, 0])] == [0, 2]
    assert [n for n, _ in runall.select(nbs, start=1)] == [1, 2]
    with pytest.raises(runall.RunAllError, match="no notebook numbered 07"):
        runall.select(nbs, only=[7])


def test_parameters_planned_per_notebook(project):
    sel = runall.discover(project / "notebooks")
    plan = runall.plan_parameters(sel, "mini", [("rows", "5"), ("scale", "2")])
    assert plan[0] == {"profile": "mini", "rows": 5}
    assert plan[1] == {"profile": "mini", "scale": 2.0}
    assert plan[2] == {"profile": "mini"}


@pytest.mark.parametrize("override, msg", [
    (("rowz", "5"), "unknown parameter 'rowz'.*'rows'"),
    (("rows", "five"), "'rows': 'five' is not a valid int"),
    (("profile", "mini"), "--profile"),
])
def test_bad_parameters_rejected_before_running(project, override, msg):
    with pytest.raises(runall.RunAllError, match=msg):
        runall.run(project, "smoke", overrides=[override], log=lambda m: None)
    assert not (project / "data").exists() and not (project / "runs").exists()


def test_notebook_without_profile_rejected(project):
    nbtools.write(project / "notebooks" / "05_bad.ipynb", [("parameters", "n: int = 1")])
    with pytest.raises(runall.RunAllError, match="05_bad.ipynb"):
        runall.run(project, "smoke", only=[5], log=lambda m: None)


def test_unknown_profile_rejected(project):
    with pytest.raises(runall.RunAllError, match="unknown profile"):
        runall.run(project, "huge", log=lambda m: None)


def test_run_stops_at_failure_and_reports(project):
    sources = {p: p.read_bytes() for p in (project / "notebooks").glob("*.ipynb")}
    lines: list[str] = []
    s = runall.run(project, "smoke", overrides=[("rows", "2")], log=lines.append)
    assert not s["ok"]
    assert [r["status"] for r in s["notebooks"]] == ["ok", "failed", "skipped"]
    err = s["notebooks"][1]["error"]
    assert err["cell_index"] == 3 and err["first_line"] == "x = 1"
    assert err["ename"] == "RuntimeError" and "boom in cell three" in err["evalue"]
    text = "\n".join(lines)
    assert "01_break.ipynb, cell 3 ('x = 1'): RuntimeError: boom in cell three" in text
    assert (project / "data/made.txt").read_text() == "smokesmoke"
    assert not (project / "data/after.txt").exists()
    assert s["files"]["created"] == ["data/made.txt"]
    assert (project / "runs/smoke/00_make.ipynb").is_file()
    assert (project / "runs/smoke/01_break.ipynb").is_file()  # kept for its traceback
    assert {p: p.read_bytes() for p in sources} == sources  # sources never written
    on_disk = json.loads((project / "runs/smoke/summary.json").read_text())
    assert on_disk["notebooks"][1]["error"]["cell_index"] == 3 and on_disk["ok"] is False


def test_run_only_and_modified_files(project):
    (project / "data").mkdir()
    (project / "data/made.txt").write_text("old")
    s = runall.run(project, "smoke", only=[0], out_dir=project / "elsewhere", log=lambda m: None)
    assert s["ok"] and [r["name"] for r in s["notebooks"]] == ["00_make"]
    assert s["files"] == {"created": [], "modified": ["data/made.txt"]}
    assert (project / "elsewhere/summary.json").is_file()


def test_cli_exit_codes(capsys):
    assert runall.main(["--profile", "smoke", "-p", "no_such_param", "1"]) == 2
    assert "no_such_param" in capsys.readouterr().err
    assert runall.main(["--list"]) == 0
    assert "00_environment.ipynb" in capsys.readouterr().out


def test_run_all_sh_rejects_unknown_parameter_before_running(repo_root):
    import subprocess

    proc = subprocess.run([str(repo_root / "run_all.sh"), "--profile", "smoke", "-p", "profle", "mini"],
                          cwd=repo_root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "unknown parameter 'profle'" in proc.stderr and "'profile'" in proc.stderr
    assert "[1/" not in proc.stdout  # nothing was executed
