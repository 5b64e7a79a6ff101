"""`cudaperf` command line: task browsing, evaluation, and clear errors for bad input."""
from __future__ import annotations

import json

import pytest

from cudaperf.cli import main
from cudaperf.devtasks import dev_tasks


def test_tasks_list_and_show(capsys):
    assert main(["tasks", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"dev/saxpy_f32", "dev/transpose_f32"} <= {r["task_id"] for r in rows}
    assert main(["tasks", "show", "dev/saxpy_f32"]) == 0
    out = capsys.readouterr().out
    assert "inout" in out and "naive" in out and "for (int i = 0; i < n; i++)" in out
    assert main(["tasks", "show", "dev/saxpy_f32", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entry"] == "saxpy"


def test_unknown_task_and_missing_file_exit_2(capsys, tmp_path):
    assert main(["tasks", "show", "no/such_task"]) == 2
    assert "no task 'no/such_task'" in capsys.readouterr().err
    assert main(["eval", "--task", "dev/saxpy_f32", "--candidate", str(tmp_path / "missing.cu")]) == 2
    assert "no candidate file" in capsys.readouterr().err


def test_eval_prints_one_honest_record(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default cache dir is relative: keep it out of the repo
    cand = tmp_path / "saxpy.cu"
    cand.write_text(dev_tasks()[0].variant("grid_stride").source)
    assert main(["eval", "--task", "dev/saxpy_f32", "--candidate", str(cand), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["task_id"] == "dev/saxpy_f32" and rec["compiled"] is True
    from cudaperf.envinfo import gpu_available

    if not gpu_available():
        assert rec["status"] == "compiled" and rec["runtime_ms"] is None and rec["speedup"] is None
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k( {")
    assert main(["eval", "--task", "dev/saxpy_f32", "--candidate", str(bad)]) == 0
    out = capsys.readouterr().out
    assert "compile_error" in out and "error" in out


def test_task_file_with_one_task(tmp_path, capsys):
    from cudaperf.tasks import save_tasks

    f = save_tasks(dev_tasks()[:1], tmp_path / "one.jsonl")
    assert main(["tasks", "show", str(f)]) == 0
    assert "dev/saxpy_f32" in capsys.readouterr().out
    two = save_tasks(dev_tasks()[:2], tmp_path / "two.jsonl")
    assert main(["tasks", "show", str(two)]) == 2
    assert "holds 2 tasks" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["frobnicate"], []])
def test_bad_subcommand_is_a_usage_error(argv):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
