"""Every benchmark script imports and parses its arguments on a CPU machine (`--help` exits 0).

The benchmarks themselves run on a GPU and are not tests; this catches the breakage CI would
otherwise never see (an import, a renamed function, a bad argparse declaration) before a scarce
device call does."""
from __future__ import annotations

import json
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


def test_gen_speed_configs_and_summary():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import argparse

    import gen_speed

    assert gen_speed.parse_config("static:256") == ("static", 256, True)
    assert gen_speed.parse_config("dynamic") == ("dynamic", 0, True)
    assert gen_speed.parse_config("dynamic:0:keep") == ("dynamic", 0, False)
    for bad in ("paged:0", "static:x", "static:-8", "static:0:hold", "static:0:keep:1"):
        with pytest.raises(argparse.ArgumentTypeError):
            gen_speed.parse_config(bad)
    rows = [{"config": "static:0", "seconds": 30.0, "tokens": 100, "max_new": 50},
            {"config": "static:0", "seconds": 2.0, "tokens": 300, "max_new": 90},
            {"config": "static:0", "seconds": 2.0, "tokens": 500, "max_new": 70}]
    s = gen_speed.summarise(rows)  # the first batch (compilation) is kept apart from the steady state
    assert (s["first_s"], s["later_mean_s"], s["later_tokens_per_s"], s["later_max_new"]) == (30.0, 2.0, 200.0, 90)
    assert gen_speed.summarise(rows[:1])["later_mean_s"] is None


def _gen_speed_with_static_raising(monkeypatch, out: Path, exc: BaseException) -> list[dict]:
    """gen_speed.main over dynamic:0, static:64, dynamic:0:keep (2 batches of 2 tasks x 1) with a
    fake batch that raises `exc` for the static cache; the rows written to `out` (also when main exits)."""
    import json

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gen_speed

    def fake(model, tok, tasks, n, cache, pad, release, a):
        if cache == "static":
            raise exc
        return {"seconds": 1.0, "released_gb": 0.0, "sequences": len(tasks) * n, "tokens": 10, "max_new": 5,
                "mean_new": 5.0, "prompt_width": 8, "tokens_per_s": 10.0}

    monkeypatch.setattr(gen_speed, "run_batch", fake)
    try:
        gen_speed.main(["--configs", "dynamic:0", "static:64", "dynamic:0:keep", "--batches", "2", "--tasks", "2",
                        "--n", "1", "--out", str(out)])
    finally:
        lines = [json.loads(x) for x in out.read_text().splitlines()]
    return lines


def test_gen_speed_goes_on_after_a_configuration_fails(tmp_path, monkeypatch):
    """A configuration that raises (say the compiled decoding step fails on the GPU at hand) gets an
    error line; the configurations after it still run and are summarised."""
    lines = _gen_speed_with_static_raising(monkeypatch, tmp_path / "g.jsonl", RuntimeError("simulated compile failure"))
    assert lines[0]["batch"] == 2 and "alloc_conf" in lines[0]
    errors = [x for x in lines if "error" in x]
    assert len(errors) == 1 and errors[0]["config"] == "static:64" and "simulated" in errors[0]["error"]
    summaries = [x for x in lines if "later_mean_s" in x]
    assert [x["config"] for x in summaries] == ["dynamic:0", "dynamic:0:keep"]


def test_gen_speed_keeps_its_rows_when_the_time_limit_interrupts_it(tmp_path, monkeypatch):
    """The caller's limit (SIGINT) inside a configuration: the rows so far are already in --out, and an
    'interrupted' row says which configuration it fell in and how long that batch had run (session 25
    lost a whole run's rows, written only at the end, to such a cut)."""
    out = tmp_path / "g.jsonl"
    with pytest.raises(SystemExit) as ex:
        _gen_speed_with_static_raising(monkeypatch, out, KeyboardInterrupt())
    assert ex.value.code == 130
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x.get("config") for x in lines[1:]] == ["dynamic:0"] * 3 + ["static:64"]
    assert lines[-1]["error"] == "interrupted" and lines[-1]["batches_done"] == 0
    assert "seconds_in_batch" in lines[-1]


def test_bench_speed_ratio_only_from_a_full_load_inline_pool():
    """The '10x load_inline' figure compares throughputs: with fewer load_inline candidates than its
    parallel processes (session 25: 4 in a pool of 16, printed as 32x) or with failed builds there is
    no ratio, and the reason is given instead."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_harness

    thr = {"per_minute": 200.0}
    full = {"candidates": 16, "parallel_processes": 16, "built_ok": 16, "per_minute": 20.0}
    assert bench_harness.speed_ratio(thr, full) == (10.0, None)
    ratio, why = bench_harness.speed_ratio(thr, {**full, "candidates": 4, "built_ok": 4})
    assert ratio is None and "not full" in why
    ratio, why = bench_harness.speed_ratio(thr, {**full, "built_ok": 15})
    assert ratio is None and "1 of 16" in why


def test_bench_harness_cpu_picks_streaming_tasks_and_runs_one_candidate(tmp_path):
    """bench_harness_cpu.py on the host emulator: seeded task choice over the streaming families,
    and a one-candidate run that judges the C reference correct and writes its file."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_harness_cpu as B

    from cudaperf.tasks import load_tasks

    tasks = load_tasks(ROOT / "data" / "tasks" / "c2cuda.jsonl.gz")
    a, b = B.pick_tasks(tasks, 5, 1), B.pick_tasks(tasks, 5, 1)
    assert [t.task_id for t in a] == [t.task_id for t in b] and all(t.family in B.STREAMING for t in a)
    assert len({t.family for t in a}) == 5  # one family after another
    assert B.main(["--n-tasks", "1", "--per-task", "1", "--workers", "1", "--out", str(tmp_path)]) == 0
    (f,) = tmp_path.glob("harness_cpu_*.json")
    out = json.loads(f.read_text())
    assert out["status_counts"] == {"correct": 1} and out["harness_cpu_s_per_candidate"] > 0
