"""Measurement table: schema round trip, shard merging, and the verified-dataset filter."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cudaperf import measurements as M
from cudaperf.devtasks import dev_tasks
from cudaperf.result import EvalResult


def _res(task, status="correct", runtime=1.0, base=2.0, flags=(), gpu="NVIDIA H200"):
    ok = status == "correct"
    return EvalResult(task_id=task.task_id, candidate_hash="h", status=status, compiled=status != "compile_error",
                      pass_rate=1.0 if ok else (0.5 if status == "wrong" else None), correct=ok if status != "compiled" else None,
                      runtime_ms=runtime if ok else None, cv=0.01 if ok else None,
                      cv_robust=0.008 if ok else None,
                      baseline_ms=base if ok else None, speedup=base / runtime if ok else None,
                      gpu=gpu, versions={"toolchain": "nvcc 13.0"}, flags=list(flags), message=status)


def _rows(tasks, bad=None):
    bad = bad or {}
    rows = []
    for t in tasks:
        for v in t.variants:
            status, flags = bad.get((t.task_id, v.name), ("correct", ()))
            rows.append(M.row_from_result(t, v.name, _res(t, status, flags=flags), measured_at="2026-12-03T00:00:00+00:00"))
    return rows


def test_round_trip_keeps_values_types_and_metadata(tmp_path):
    t = dev_tasks()[0]
    rows = _rows([t], {(t.task_id, t.variants[1].name): ("wrong", ("hack:faster_than_roofline",))})
    rows.append(M.row_from_result(t, "extra", _res(t, "compiled")))
    p = M.save_measurements(rows, tmp_path / "m.parquet", metadata={"gpu": "NVIDIA H200", "driver": "580"})
    df = M.load_measurements(p)
    assert list(df.columns) == list(M.COLUMNS) and len(df) == len(rows)
    assert df.loc[0, "runtime_ms"] == 1.0 and df.loc[0, "speedup"] == 2.0 and df.loc[0, "toolchain"] == "nvcc 13.0"
    assert df.loc[0, "cv_robust"] == 0.008 and pd.isna(df.loc[0, "baseline_cv_robust"])
    assert df.loc[1, "flags"] == ["hack:faster_than_roofline"] and df.loc[1, "status"] == "wrong"
    assert pd.isna(df.loc[1, "runtime_ms"]), "a field the harness did not fill must stay null"
    assert pd.isna(df.loc[len(df) - 1, "correct"])  # compiled-only: correctness unknown, not False
    assert M.measurement_metadata(p) == {"gpu": "NVIDIA H200", "driver": "580"}
    import pyarrow.parquet as pq
    assert pq.ParquetFile(p).metadata.row_group(0).column(0).compression == "ZSTD"


def test_shards_written_before_the_robust_cv_still_load(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = dev_tasks()[0]
    df = M.to_table(_rows([t])).drop(columns=["cv_robust", "baseline_cv_robust"])
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "old.parquet")
    back = M.load_measurements(tmp_path / "old.parquet")
    assert list(back.columns) == list(M.COLUMNS) and back["cv_robust"].isna().all()


def test_schema_is_enforced(tmp_path):
    t = dev_tasks()[0]
    row = M.row_from_result(t, "naive", _res(t))
    with pytest.raises(M.MeasurementError, match="unknown columns"):
        M.save_measurements([{**row, "bogus": 1}], tmp_path / "x.parquet")
    row.pop("cv")
    with pytest.raises(M.MeasurementError, match="missing columns"):
        M.save_measurements([row], tmp_path / "x.parquet")
    with pytest.raises(M.MeasurementError):
        M.row_from_result(dev_tasks()[1], "naive", _res(t))


def test_merge_later_shard_wins(tmp_path):
    t = dev_tasks()[0]
    first = _rows([t], {(t.task_id, "naive"): ("crashed", ())})
    second = [M.row_from_result(t, "naive", _res(t, runtime=3.0))]
    p1 = M.save_measurements(first, tmp_path / "s0.parquet")
    merged = M.merge([p1, pd.DataFrame(second)])
    assert len(merged) == len(t.variants)
    naive = merged[merged["variant"] == "naive"].iloc[0]
    assert naive["status"] == "correct" and naive["runtime_ms"] == 3.0
    # order matters: the earlier shard loses
    merged2 = M.merge([pd.DataFrame(second), p1])
    assert merged2[merged2["variant"] == "naive"].iloc[0]["status"] == "crashed"


def test_verified_dataset_drops_unverified_variants_and_tasks():
    saxpy, row_sum, hist, transpose = dev_tasks()
    bad = {
        (saxpy.task_id, saxpy.variants[2].name): ("wrong", ()),                          # task keeps 2 < 3
        (row_sum.task_id, "naive"): ("compile_error", ()),                               # no naive
        (hist.task_id, hist.variants[1].name): ("correct", ("hack:baseline_disturbed",)),  # flagged
    }
    rows = _rows([saxpy, row_sum, hist, transpose], bad)
    rows = [r for r in rows if not (r["task_id"] == transpose.task_id and r["variant"] == transpose.variants[2].name)]
    hist.variants.append(type(hist.variants[0])(name="extra", source=hist.variants[0].source))
    rows.append(M.row_from_result(hist, "extra", _res(hist)))
    n_hist = len(hist.variants)
    kept, rep = M.verified_dataset([saxpy, row_sum, hist, transpose], pd.DataFrame(rows))
    assert [t.task_id for t in kept] == [hist.task_id]
    assert [v.name for v in kept[0].variants] == [v.name for v in hist.variants if v.name != hist.variants[1].name]
    assert len(hist.variants) == n_hist, "the input tasks must not be modified"
    reasons = {(d["task_id"], d["variant"]): d["reason"] for d in rep.dropped_variants}
    assert reasons[(saxpy.task_id, saxpy.variants[2].name)] == "status wrong"
    assert reasons[(row_sum.task_id, "naive")] == "status compile_error"
    assert reasons[(hist.task_id, hist.variants[1].name)] == "flagged hack:baseline_disturbed"
    assert reasons[(transpose.task_id, transpose.variants[2].name)] == "not measured"
    tr = {d["task_id"]: d["reason"] for d in rep.dropped_tasks}
    assert tr == {saxpy.task_id: "fewer than 3 verified variants", row_sum.task_id: "naive variant not verified",
                  transpose.task_id: "fewer than 3 verified variants"}
    assert rep.tasks_kept == 1 and rep.variants_kept == len(kept[0].variants)


def test_a_compiled_only_cpu_row_never_verifies():
    t = dev_tasks()[0]
    rows = [M.row_from_result(t, v.name, _res(t, "compiled")) for v in t.variants]
    kept, rep = M.verified_dataset([t], pd.DataFrame(rows))
    assert kept == [] and rep.variant_reasons() == {"status compiled": len(t.variants)}


def test_any_failing_row_of_a_variant_rejects_it():
    t = dev_tasks()[0]
    rows = _rows([t]) + [M.row_from_result(t, t.variants[1].name, _res(t, "crashed", gpu="other"))]
    kept, rep = M.verified_dataset([t], pd.DataFrame(rows), min_variants=2)
    assert [v.name for v in kept[0].variants] == [t.variants[0].name, t.variants[2].name]


def test_summarize_counts_and_naive_threshold():
    saxpy, row_sum = dev_tasks()[:2]
    rows = _rows([saxpy, row_sum], {(row_sum.task_id, row_sum.variants[1].name): ("wrong", ())})
    for r in rows:
        if r["variant"] == "naive" and r["task_id"] == saxpy.task_id:
            r["runtime_ms"] = 0.005  # below 20 us
    s = M.summarize(pd.DataFrame(rows))
    assert s["verified"] == len(rows) - 1 and s["failed"] == 1 and s["by_status"]["wrong"] == 1
    assert s["naive_ge_min_fraction"] == 0.5 and s["tasks"] == 2


# --------------------------------------------------------------------------- verify_dataset.py (CPU logic)

def _verify_module():
    import importlib.util
    from pathlib import Path

    p = Path(__file__).resolve().parents[1] / "benchmarks" / "verify_dataset.py"
    spec = importlib.util.spec_from_file_location("verify_dataset", p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class FakeHarness:
    """Stands in for Harness on a CPU: hand-made EvalResults, a prepare error for one task."""

    def __init__(self, broken=(), wrong=()):
        self.broken, self.wrong = set(broken), set(wrong)
        self.prepared, self.evaluated = [], []

    def prepare(self, tasks):
        self.prepared.append([t.task_id for t in tasks])
        return {t.task_id: "naive: does not compile" for t in tasks if t.task_id in self.broken}

    def evaluate_many(self, items):
        out = []
        for t, src in items:
            name = next(v.name for v in t.variants if v.source == src)
            self.evaluated.append((t.task_id, name))
            out.append(_res(t, "wrong" if (t.task_id, name) in self.wrong else "correct",
                            runtime=0.05 if name == "naive" else 0.01, base=0.05))
        return out

    threads = 3

    def evaluate_groups(self, groups, gate=None, on_done=None):
        """Like Harness.evaluate_groups: groups on threads, gate before, on_done after each."""
        from concurrent.futures import ThreadPoolExecutor

        self.groups = getattr(self, "groups", [])
        out = [None] * len(groups)

        def one(i):
            t, srcs = groups[i]
            if gate is not None and not gate(i):
                return
            self.groups.append(len(srcs))
            out[i] = self.evaluate_many([(t, s) for s in srcs])
            if on_done is not None:
                on_done(i, out[i])

        with ThreadPoolExecutor(self.threads) as ex:
            list(ex.map(one, range(len(groups))))
        return out

    def versions(self):
        return {"toolchain": "nvcc 13.0"}


def _many_tasks(n):
    import copy
    base = dev_tasks()
    out = []
    for i in range(n):
        t = copy.deepcopy(base[i % len(base)])
        t.task_id = f"{t.task_id}_{i:02d}"
        out.append(t)
    return out


def test_shards_partition_the_tasks():
    V = _verify_module()
    tasks = _many_tasks(23)
    shards = [V.shard_tasks(tasks, k, 4) for k in range(4)]
    ids = [t.task_id for s in shards for t in s]
    assert sorted(ids) == sorted(t.task_id for t in tasks) and len(set(ids)) == len(ids)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    assert [t.task_id for t in V.shard_tasks(list(reversed(tasks)), 1, 4)] == [t.task_id for t in shards[1]]
    with pytest.raises(ValueError):
        V.shard_tasks(tasks, 4, 4)


def test_a_shard_is_verified_in_stratified_order_so_a_prefix_covers_every_family():
    import copy

    V = _verify_module()
    tasks = []
    for fam, n in {"aa": 40, "bb": 20, "cc": 8}.items():  # task-id order would put all of "aa" first
        for i in range(n):
            t = copy.deepcopy(dev_tasks()[0])
            t.task_id, t.family = f"{fam}/t{i:02d}", fam
            tasks.append(t)
    plain = V.shard_order(tasks, 1, 2, "task_id")
    strat = V.shard_order(tasks, 1, 2)
    assert [t.task_id for t in plain] == [t.task_id for t in V.shard_tasks(tasks, 1, 2)]
    assert sorted(t.task_id for t in strat) == sorted(t.task_id for t in plain)
    assert {t.family for t in plain[:10]} == {"aa"}
    assert {t.family for t in strat[:10]} == {"aa", "bb", "cc"}
    # the same relative order as the whole dataset's stratified order (the profiled sample first)
    rank = {t.task_id: i for i, t in enumerate(V.stratified_order(tasks, 0))}
    assert [rank[t.task_id] for t in strat] == sorted(rank[t.task_id] for t in strat)
    with pytest.raises(ValueError):
        V.shard_order(tasks, 0, 2, "random")


def test_sample_file_joins_the_shard_files_and_the_sample_is_the_profiled_one(tmp_path):
    import importlib.util

    V = _verify_module()
    t = dev_tasks()[0]
    M.save_measurements([M.row_from_result(t, "naive", _res(t, "wrong"))], V.shard_path(tmp_path, "g", 2))
    M.save_measurements([M.row_from_result(t, "naive", _res(t, "correct")),
                         M.row_from_result(t, "fast", _res(t, "correct"))], V.sample_path(tmp_path, "g"))
    M.save_measurements([M.row_from_result(t, "other", _res(t, "correct"))], V.shard_path(tmp_path, "g", 10))
    table = V.existing_table(tmp_path, "g")
    assert sorted(table["variant"]) == ["fast", "naive", "other"]
    assert table.set_index("variant").loc["naive", "status"] == "correct", "the sample file is read last"
    # --sample N verifies exactly the tasks benchmarks/profile_dataset.py --max-variants N profiles
    spec = importlib.util.spec_from_file_location(
        "profile_dataset", Path(__file__).resolve().parents[1] / "benchmarks" / "profile_dataset.py")
    PD = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(PD)

    tasks = _many_tasks(12)
    for i, x in enumerate(tasks):
        x.family = f"f{i % 3}"
    sample = V.stratified_prefix(tasks, 10)
    assert [x.task_id for x in sample] == list(dict.fromkeys(x.task_id for x, _ in PD.plan_items(tasks, max_variants=10)))
    assert sum(len(x.variants) for x in sample) >= 10 and len({x.family for x in sample}) == 3


def test_run_builds_the_table_and_resumes(tmp_path):
    V = _verify_module()
    tasks = _many_tasks(6)
    wrong = {(tasks[2].task_id, tasks[2].variants[1].name)}
    h = FakeHarness(broken={tasks[1].task_id}, wrong=wrong)
    out = V.shard_path(tmp_path, "nvidia-h200", 0)
    meta = {"gpu": "NVIDIA H200", "driver": "580.1", "nvcc": "13.0", "command": "test"}
    table = V.run_stream(h, V.pending(tasks, set()), out, meta, prepare_tasks=2, log=lambda s: None)
    n_all = sum(len(t.variants) for t in tasks)
    # one group per prepared task, all of its variants
    assert sorted(h.groups) == sorted(len(t.variants) for t in tasks if t.task_id != tasks[1].task_id)
    assert len(table) == n_all and M.measurement_metadata(out)["driver"] == "580.1"
    assert all(len(c) <= 2 for c in h.prepared), "prepare is called per block of tasks"
    assert [x for c in h.prepared for x in c] == [t.task_id for t in tasks]
    broken = table[table["task_id"] == tasks[1].task_id]
    assert set(broken["status"]) == {"crashed"} and all("preparation failed" in m for m in broken["message"])
    assert (tasks[1].task_id, "naive") not in h.evaluated, "an unprepared task is not evaluated"
    reasons = V.failure_reasons(table)
    assert reasons == {"crashed (task:prepare_failed)": len(tasks[1].variants), "wrong": 1}
    bad = table[table["status"] != "correct"]
    assert set(zip(bad["task_id"], bad["variant"])) - {(tasks[1].task_id, v.name) for v in tasks[1].variants} == wrong
    # resume: nothing left; with --retry-failed only the failed pairs run again
    done = V.done_pairs(V.existing_table(tmp_path, "nvidia-h200"))
    assert V.pending(tasks, done) == []
    redo = V.pending(tasks, V.done_pairs(V.existing_table(tmp_path, "nvidia-h200"), retry_failed=True))
    assert sorted((t.task_id, n) for t, ns in redo for n in ns) == sorted(
        [(tasks[1].task_id, v.name) for v in tasks[1].variants] + list(wrong))
    h2 = FakeHarness()
    table2 = V.run_chunks(h2, redo, out, meta, log=lambda s: None)
    assert not hasattr(h2, "groups"), "--one-by-one evaluates with evaluate_many"
    assert len(table2) == n_all and (table2["status"] == "correct").all()
    assert len(h2.evaluated) == len(tasks[1].variants) + 1
    lines = V.summary_lines(table2)
    assert "verified 18, failed 0" in lines[0] and "100.0% of 6" in lines[2]


def test_stream_saves_as_it_goes_and_starts_nothing_that_would_overrun(tmp_path):
    V = _verify_module()
    tasks = _many_tasks(8)
    now = [0.0]
    out = V.shard_path(tmp_path, "gpu", 3)
    seen = []

    class SlowHarness(FakeHarness):
        threads = 1

        def evaluate_many(self, items):
            seen.append(len(M.load_measurements(out)) if out.exists() else 0)
            now[0] += 40.0  # every group takes 40 "seconds"
            return super().evaluate_many(items)

    h = SlowHarness()
    logs = []
    table = V.run_stream(h, V.pending(tasks, set()), out, {}, prepare_tasks=2, max_seconds=100,
                         save_every_s=0, clock=lambda: now[0], log=logs.append)
    # group 1 fits a quarter-budget margin; group 2 (at 40 s) fits its 40 s; group 3 (at 80 s) does not
    assert h.groups == [3, 3] and len(table) == 6 and out.exists()
    assert seen == [0, 3], "the rows of a finished group are on disk before the next group starts"
    assert len(h.prepared) == 2, "the block in use and one block ahead"
    assert any("18 variants not started" in line for line in logs), logs
    rest = V.pending(tasks, V.done_pairs(V.existing_table(tmp_path, "gpu")))
    assert [t.task_id for t, _ in rest] == [t.task_id for t in tasks[2:]]


def test_one_by_one_chunks_stop_at_the_time_budget(tmp_path):
    V = _verify_module()
    tasks = _many_tasks(8)
    now = [0.0]

    class SlowHarness(FakeHarness):
        def evaluate_many(self, items):
            now[0] += 40.0  # every chunk takes 40 "seconds"
            return super().evaluate_many(items)

    out = V.shard_path(tmp_path, "gpu", 3)
    h = SlowHarness()
    table = V.run_chunks(h, V.pending(tasks, set()), out, {}, chunk_variants=3, max_seconds=100,
                         clock=lambda: now[0], log=lambda s: None)
    assert len(h.prepared) == 2, "a third 40 s chunk does not fit in the 20 s left"
    assert len(table) == 6 and out.exists()
    rest = V.pending(tasks, V.done_pairs(V.existing_table(tmp_path, "gpu")))
    assert [t.task_id for t, _ in rest] == [t.task_id for t in tasks[2:]]


def test_resources_timings_and_baseline_fields_round_trip(tmp_path):
    import json

    t = dev_tasks()[0]
    r = _res(t)
    r.resources = {"saxpy_kernel": {"registers": 16, "smem_static": 0, "spill_stores": 0}}
    r.timings = {"compile": 1.5, "check": 0.25}
    r.baseline_cv, r.baseline_clean_ms = 0.02, 1.9
    df = M.load_measurements(M.save_measurements([M.row_from_result(t, "naive", r)], tmp_path / "m.parquet"))
    assert json.loads(df.loc[0, "resources"])["saxpy_kernel"]["registers"] == 16
    assert json.loads(df.loc[0, "timings"]) == {"check": 0.25, "compile": 1.5}
    assert df.loc[0, "baseline_cv"] == 0.02 and df.loc[0, "baseline_clean_ms"] == 1.9
    empty = M.row_from_result(t, "naive", _res(t))
    assert empty["resources"] is None and empty["timings"] is None, "nothing invented for missing fields"


def test_verify_script_failure_rows_and_stage_medians():
    import importlib.util
    import json
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "verify_dataset", Path(__file__).resolve().parents[1] / "benchmarks" / "verify_dataset.py")
    vd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vd)
    t = dev_tasks()[0]
    rows = vd.prepare_failure_rows(t, [v.name for v in t.variants], "reference crashed", "NVIDIA H200", "nvcc 13.0")
    df = M.to_table(rows)
    assert set(df["status"]) == {"crashed"} and df["runtime_ms"].isna().all()
    timed = [M.row_from_result(t, v.name, _res(t)) for v in t.variants]
    for i, row in enumerate(timed):
        row["timings"] = json.dumps({"check": float(i), "time": 2.0})
    assert vd.stage_seconds(M.to_table(timed)) == {"check": 1.0, "time": 2.0}


def test_done_pairs_always_retries_harness_errors():
    """A row the harness could not judge (its own error) is pending again even without --retry-failed;
    a real verdict (wrong, crashed by the candidate) is kept."""
    V = _verify_module()
    t = pd.DataFrame({"task_id": ["a", "a", "b"], "variant": ["naive", "tiled", "naive"],
                      "status": ["crashed", "wrong", "crashed"], "correct": [False, False, False],
                      "message": ["internal harness error: ValueError: filedescriptor out of range in select()",
                                  "max abs err 1.0", "runner exited with signal 11"]})
    assert V.done_pairs(t) == {("a", "tiled"), ("b", "naive")}
    assert V.done_pairs(t, retry_failed=True) == set()


def test_verified_dataset_names_a_harness_error_as_no_verdict():
    from cudaperf.measurements import _why_not, to_table

    rows = to_table([{"task_id": "t", "family": "f", "variant": "naive", "status": "crashed", "correct": False,
                      "pass_rate": 0.0, "runtime_ms": None, "cv": None, "baseline_ms": None, "speedup": None,
                      "gpu": "H200", "toolchain": "nvcc", "measured_at": "2026-12-03T00:00:00+00:00",
                      "message": "internal harness error: ValueError: filedescriptor out of range in select()",
                      "flags": []}])
    assert _why_not(rows).startswith("harness error")
    rows.loc[0, "message"] = "runner exited with signal 11"
    assert _why_not(rows) == "status crashed"


def test_verified_tasks_serves_the_policy_stages_only_what_the_gpu_verified(tmp_path):
    """families.verified_tasks: every task while nothing is measured; once shards exist, only
    the tasks (and variants) they verify."""
    from cudaperf import families

    tasks = dev_tasks()
    path = families.write_dataset(tasks, tmp_path / "tasks.jsonl.gz")
    meas = tmp_path / "measurements"
    meas.mkdir()
    assert [t.task_id for t in families.verified_tasks(path, meas)] == [t.task_id for t in tasks]
    saxpy, row_sum = tasks[0], tasks[1]
    M.save_measurements(_rows([saxpy, row_sum], {(row_sum.task_id, "naive"): ("wrong", ())}),
                        meas / "c2cuda_nvidia-h200_shard0.parquet")
    got = families.verified_tasks(path, meas)
    assert [t.task_id for t in got] == [saxpy.task_id]
    assert [v.name for v in got[0].variants] == [v.name for v in saxpy.variants]


def test_measurement_files_order_is_shared_by_every_reader(tmp_path):
    """Shards by number (shard10 after shard2), the sample file last (it wins a repeated pair), per
    GPU slug, other parquet files after them by name; every reader merges in this order."""
    t = dev_tasks()[0]
    names = ["c2cuda_gpu_shard10", "c2cuda_gpu_sample", "c2cuda_gpu_shard2", "c2cuda_other_shard0"]
    for i, n in enumerate(names):
        M.save_measurements([M.row_from_result(t, "naive", _res(t, runtime=float(i + 1)))], tmp_path / f"{n}.parquet")
    M.save_measurements([M.row_from_result(t, "naive", _res(t, runtime=9.0))], tmp_path / "a_rerun.parquet")
    (tmp_path / "notes.jsonl").write_text("{}\n")
    got = [p.stem for p in M.measurement_files(tmp_path)]
    assert got == ["c2cuda_gpu_shard2", "c2cuda_gpu_shard10", "c2cuda_gpu_sample", "c2cuda_other_shard0", "a_rerun"]
    assert [p.stem for p in M.measurement_files(tmp_path, slug="gpu")] == got[:3]
    assert [p.stem for p in M.measurement_files(str(tmp_path / "c2cuda_gpu_*.parquet"))] == got[:3]
    assert M.load_merged(tmp_path, slug="gpu").iloc[0]["runtime_ms"] == 2.0  # the sample won
    assert M.measurement_files(tmp_path / "missing") == []
    from cudaperf import policy, ranker

    assert ranker.load_measurements(tmp_path).iloc[0]["runtime_ms"] == 9.0  # other names merged last
    got_pol = policy.load_variant_measurements(tmp_path)
    assert got_pol[(t.task_id, "naive")]["speedup"] == pytest.approx(2.0 / 9.0)


def _roofline_rows(task, runtimes, flagged=(), status=None):
    """One correct timed row per variant of `task` with the given runtimes (ms); variants in
    `flagged` carry the roofline flag (as the harness set it under an older min_bytes)."""
    rows = []
    for v, rt in zip(task.variants, runtimes):
        flags = ("hack:faster_than_roofline",) if v.name in flagged else ()
        st = (status or {}).get(v.name, "correct")
        rows.append(M.row_from_result(task, v.name, _res(task, st, runtime=rt, flags=flags),
                                      measured_at="2026-12-03T00:00:00+00:00"))
    return rows


def test_reflag_roofline_removes_adds_and_keeps_flags_by_the_current_bound():
    import copy

    t = copy.deepcopy(dev_tasks()[0])
    bw = 1e12  # bytes/s
    t.meta["min_bytes"] = "1000000000"  # 1 GB -> roofline 1 ms, flag below 0.8 ms
    a, b, c = (v.name for v in t.variants[:3])
    rows = _roofline_rows(t, [0.5, 0.9, 0.7], flagged={a, b})
    # a wrong row keeps whatever it had: the harness never checks the roofline of a wrong result
    wrong = M.row_from_result(t, "wrong_one", _res(t, "wrong", flags=("hack:faster_than_roofline",)))
    unknown = dict(rows[0], task_id="c2cuda/none/such", flags=["hack:faster_than_roofline"])
    table = M.to_table(rows + [wrong, unknown])
    before = [list(f) for f in table["flags"]]
    out, rep = M.reflag_roofline(table, [t], bw, slack=0.8)
    flags = {r.variant: list(r.flags) for r in out.itertuples() if r.task_id == t.task_id}
    assert "hack:faster_than_roofline" in flags[a]          # 0.5 < 0.8: stays
    assert "hack:faster_than_roofline" not in flags[b]      # 0.9 >= 0.8: stale flag removed
    assert flags[c] == ["hack:faster_than_roofline"]        # 0.7 < 0.8: added
    assert flags["wrong_one"] == ["hack:faster_than_roofline"]
    assert list(out[out["task_id"] == "c2cuda/none/such"]["flags"].iloc[0]) == ["hack:faster_than_roofline"]
    assert (rep.removed, rep.added, rep.rows_checked) == (1, 1, 3)
    assert rep.by_family == {t.family: {"removed": 1, "added": 1}}
    assert rep.unknown_tasks == ["c2cuda/none/such"]
    assert (rep.flagged_before, rep.flagged_after) == (4, 4)
    assert [list(f) for f in table["flags"]] == before      # pure: the input is untouched
    # a lower bound (smaller min_bytes) clears every flag; the slack is honoured
    t.meta["min_bytes"] = "100000000"
    out2, rep2 = M.reflag_roofline(table, [t], bw)
    assert rep2.removed == 2 and rep2.added == 0
    mine = out2[(out2["task_id"] == t.task_id) & (out2["status"] == "correct")]
    assert len(mine) == 3 and not any("hack:faster_than_roofline" in f for f in mine["flags"])
    _, rep3 = M.reflag_roofline(table, [t], bw, slack=0.0)
    assert rep3.added == 0 and rep3.removed == 2
    # the flag decides verification: the reflagged table keeps the variant the stale flag dropped
    assert a == "naive"
    assert M.verified_dataset([t], table, min_variants=1)[1].variants_kept == 0  # naive flagged
    assert M.verified_dataset([t], out2, min_variants=1)[1].variants_kept == 3
    with pytest.raises(M.MeasurementError):
        M.reflag_roofline(table, [t], 0.0)


def test_committed_measurements_agree_with_the_current_min_bytes():
    """The committed H200 shards carry the roofline flags the current task bounds give (run
    benchmarks/reflag_roofline.py after changing a family's min_bytes)."""
    import json

    from cudaperf.families import committed_or_built

    root = Path(__file__).resolve().parents[1]
    files = M.measurement_files(root / "data" / "measurements", "nvidia-h200")
    ceil = root / "data" / "ceilings" / "nvidia-h200.json"
    if not files or not ceil.is_file():
        pytest.skip("no committed H200 measurements")
    bw = json.loads(ceil.read_text())["copy_bandwidth_bytes_per_s"]
    from cudaperf.config import HarnessConfig

    _, rep = M.reflag_roofline(M.merge(files), committed_or_built(), bw, HarnessConfig().roofline_slack)
    assert (rep.removed, rep.added) == (0, 0), rep.to_dict()


def test_every_min_bytes_override_is_at_most_the_whole_buffer_count():
    """meta.min_bytes is a lower bound (the roofline check must not flag honest code): wherever a
    family overrides it, it never exceeds the default count (every buffer read and/or written
    whole, inout twice) at any test size, and is never negative."""
    import copy

    from cudaperf.families import committed_or_built

    n = 0
    for t in committed_or_built():
        if "min_bytes" not in t.meta:
            continue
        d = copy.deepcopy(t)
        d.meta.pop("min_bytes")
        for te in t.tests:
            assert 0 <= t.min_bytes(te) <= d.min_bytes(te), (t.task_id, te.name)
        n += 1
    assert n > 500
