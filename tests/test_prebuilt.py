"""Variants compiled here, installed into another compile cache (cudaperf.prebuilt): real nvcc."""
from __future__ import annotations

import copy
import tarfile

import pytest

from cudaperf import prebuilt
from cudaperf.compile import compile_candidate
from cudaperf.config import get_profile
from cudaperf.devtasks import dev_tasks
from cudaperf.harness import Harness
from cudaperf.measurements import row_from_result

pytestmark = pytest.mark.timeout(600)
FLAGS = ("-O3", "-std=c++17")


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    task = copy.deepcopy([t for t in dev_tasks() if t.task_id == "dev/row_sum_f32"][0])
    broken = copy.deepcopy(task.variants[0])
    broken.name, broken.source = "broken", "this is not CUDA {"
    task.variants.append(broken)
    out = tmp_path_factory.mktemp("prebuilt") / "shard.tar.gz"
    summary = prebuilt.pack([task], out, arch="sm_90", flags=FLAGS, jobs=2, progress=False)
    return task, out, summary


def test_pack_keeps_what_built_and_says_who_built_it(packed):
    task, out, summary = packed
    assert summary["variants"] == len(task.variants) and summary["packed"] == len(task.variants) - 1
    assert summary["failed"] == 1 and summary["nvcc_release"].startswith("release ")
    assert "nvcc release" in summary["built_with"] and "gcc" in summary["built_with"]
    with tarfile.open(out) as tar:
        names = tar.getnames()
    assert "manifest.json" in names and sum(n.startswith("lib/") for n in names) == summary["packed"]


def test_install_fills_the_compile_cache_marked_built_with(packed, tmp_path):
    task, out, summary = packed
    cache = tmp_path / "cache"
    counts = prebuilt.install(out, [task], cache, arch="sm_90", flags=FLAGS)
    assert counts["refused"] is None and counts["installed"] == summary["packed"]
    assert counts["not_in_archive"] == 1  # the variant that did not build: compiled (and failing) in the open
    good = task.variants[1].source
    r = compile_candidate(good, arch="sm_90", flags=FLAGS, cache_dir=cache)
    assert r.ok and r.cached and r.built_with == summary["built_with"]
    assert any("row_sum" in k for k in r.resources)
    again = prebuilt.install(out, [task], cache, arch="sm_90", flags=FLAGS)
    assert again["installed"] == 0 and again["already_cached"] == summary["packed"]
    # The harness' record and the measurement row say where the library was built.
    h = Harness(get_profile("smoke", **{"harness.cache_dir": str(cache), "harness.arch": "sm_90"}).harness,
                gpus=[])
    try:
        res = h.evaluate(task, good)
    finally:
        h.close()
    assert res.compiled and res.versions["built_with"] == summary["built_with"]
    assert row_from_result(task, task.variants[1].name, res)["built_with"] == summary["built_with"]


@pytest.mark.parametrize("change", ["nvcc", "flags", "arch"])
def test_install_refuses_another_nvcc_or_other_settings(packed, tmp_path, monkeypatch, change):
    task, out, _ = packed
    kw = {"arch": "sm_90", "flags": FLAGS}
    if change == "nvcc":
        monkeypatch.setattr(prebuilt, "toolchain_versions",
                            lambda: {"nvcc": "Cuda compilation tools, release 12.4, V12.4.131", "gcc": "gcc 13"})
    elif change == "flags":
        kw["flags"] = ("-O2",)
    else:
        kw["arch"] = "sm_80"
    counts = prebuilt.install(out, [task], tmp_path / "cache", **kw)
    assert counts["refused"] and counts["installed"] == 0
    assert not (tmp_path / "cache").exists()


def test_not_yet_measured_leaves_out_tasks_with_a_measured_row(tmp_path):
    import json

    from cudaperf.prebuilt import not_yet_measured

    tasks = dev_tasks()
    rows = tmp_path / "torch2cuda_gpu.jsonl"
    rows.write_text(json.dumps({"task_id": tasks[0].task_id}) + "\n"
                    + json.dumps({"task_id": tasks[1].task_id, "error": "boom"}) + "\n")
    left = [t.task_id for t in not_yet_measured(tasks, [rows, tmp_path / "absent.jsonl"])]
    assert left == [t.task_id for t in tasks[1:]]  # the error row is measured again, so it is packed
    assert len(not_yet_measured(tasks, [])) == len(tasks)
