"""Dataset-wide static features (cudaperf.featurize) and the CPU side of the profiling script
(benchmarks/profile_dataset.py): plan, shards, resume, parsing. GPU run marked."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from cudaperf import featurize
from cudaperf.devtasks import dev_tasks
from cudaperf.features import FEATURE_NAMES, phi_hat, static_features
from cudaperf.occupancy import occupancy
from cudaperf.profiled import MARKER_KERNEL
from cudaperf.tasks import Task, Variant, stratified_order

ROOT = Path(__file__).resolve().parents[1]
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def _load_script():
    spec = importlib.util.spec_from_file_location("profile_dataset", ROOT / "benchmarks/profile_dataset.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PD = _load_script()


def _fake_tasks(n_per_family: dict[str, int], variants: int = 3) -> list[Task]:
    base = dev_tasks()[0]
    out = []
    for fam, n in n_per_family.items():
        for i in range(n):
            out.append(Task(task_id=f"c2cuda/{fam}/t{i}", track="c2cuda", family=fam, entry=base.entry,
                            signature=base.signature, reference=base.reference,
                            variants=[Variant(f"v{j}" if j else "naive", "") for j in range(variants)],
                            tests=base.tests, meta={"category": "x"}))
    return out


# ------------------------------------------------------------------ static table


def test_static_table_one_row_per_variant_with_hats_against_naive():
    tasks = dev_tasks()
    df = featurize.static_table(tasks, resources=False, jobs=1)
    assert len(df) == sum(len(t.variants) for t in tasks)
    assert list(zip(df.task_id, df.variant)) == [(t.task_id, v.name) for t in tasks for v in t.variants]
    assert set(FEATURE_NAMES + featurize.HAT_COLUMNS + ["parse_ok"]) <= set(df.columns)
    assert not df.resources_ok.any() and df.parse_ok.all()
    t = tasks[0]
    sizes = t.perf_test.sizes
    naive = static_features(t.baseline_variant.source, sizes=sizes)
    for v in t.variants:
        row = df[(df.task_id == t.task_id) & (df.variant == v.name)].iloc[0]
        want = phi_hat(static_features(v.source, sizes=sizes), naive)
        assert np.allclose(row[featurize.HAT_COLUMNS].to_numpy(float), want)
    nv = df[df.variant == "naive"]
    assert (nv[["hat_ai", "hat_gmem_access", "hat_ops"]] == 0).all().all()  # log ratio to itself


def test_parallel_table_equals_serial():
    tasks = dev_tasks()
    a = featurize.static_table(tasks, resources=False, jobs=1)
    b = featurize.static_table(tasks, resources=False, jobs=2)
    pd.testing.assert_frame_equal(a, b)


def test_save_load_roundtrip_keeps_metadata_and_uses_zstd(tmp_path):
    df = featurize.static_table(dev_tasks()[:2], resources=False, jobs=1)
    p = featurize.save(df, tmp_path / "t.parquet", meta={"resources": False, "note": "x"})
    back = featurize.load(p)
    pd.testing.assert_frame_equal(df, back)
    assert back.attrs["cudaperf"]["resources"] is False and back.attrs["cudaperf"]["rows"] == len(df)
    assert pq.ParquetFile(p).metadata.row_group(0).column(0).compression == "ZSTD"


def test_split_batch_resources_strips_namespaces_without_prefix_confusion():
    res = {"v_naive::k(int, float*)": {"registers": 10},
           "void v_naive2::k<4>(int)": {"registers": 20},
           "v_tiled_smem::t(int)": {"registers": 30}, "other(int)": {"registers": 1}}
    out = featurize.split_batch_resources(res, ["naive", "naive2", "tiled_smem"])
    assert out == {"naive": {"k(int, float*)": {"registers": 10}},
                   "naive2": {"void k<4>(int)": {"registers": 20}},
                   "tiled_smem": {"t(int)": {"registers": 30}}}


@needs_nvcc
def test_resources_from_one_batch_build_set_occupancy(tmp_path):
    t = next(t for t in dev_tasks() if "transpose" in t.task_id)
    df = featurize.static_table([t], resources=True, jobs=1, cache_dir=tmp_path)
    assert df.resources_ok.all() and (df.registers > 0).all()
    tiled = df[df.variant == "tiled_smem"].iloc[0]
    assert tiled.smem_static > 0  # the tile is declared __shared__
    want = occupancy("9.0", 256, int(tiled.registers), int(tiled.smem_static))["occupancy"]
    assert tiled.occ == pytest.approx(want)
    assert len(list((tmp_path / "compile").rglob("*.json"))) == 1  # one nvcc call for all variants


@needs_nvcc
def test_batch_failure_falls_back_to_one_by_one(tmp_path):
    # Both variants export the same extern "C" kernel: one translation unit cannot hold both.
    src = ('extern "C" __global__ void k(int n, float *y) { int i = threadIdx.x; if (i < n) y[i] %s; }\n'
           'extern "C" void f(int n, float *y) { k<<<1, 128>>>(n, y); }\n')
    base = dev_tasks()[0]
    t = Task(task_id="c2cuda/x/clash", track="c2cuda", family="x", entry="f", signature=base.signature,
             reference="", variants=[Variant("naive", src % "= 1.0f"), Variant("other", src % "*= 2.0f"),
                                     Variant("broken", "this is not CUDA")], tests=base.tests)
    res = featurize.variant_resources(t, cache_dir=tmp_path)
    assert res["naive"] and res["other"] and res["broken"] is None
    assert next(iter(res["naive"].values()))["registers"] > 0


def test_stratified_tasks_spreads_over_families():
    tasks = _fake_tasks({"a": 10, "b": 10, "c": 2})
    s = featurize.stratified_tasks(tasks, 5, seed=1)
    assert len(s) == 5 and {t.family for t in s} == {"a", "b", "c"}
    assert s == featurize.stratified_tasks(tasks, 5, seed=1)
    assert featurize.stratified_tasks(tasks, 0) == tasks


def test_probe_validation_covers_every_feature_and_can_fail(monkeypatch):
    tab = featurize.probe_validation()
    assert set(tab.feature) == set(FEATURE_NAMES)
    assert tab.moves_right_way.all(), tab
    flipped = [(f, hi, lo, rh, rl) for f, lo, hi, rl, rh in featurize.PROBE_PAIRS]
    monkeypatch.setattr(featurize, "PROBE_PAIRS", flipped)
    assert not featurize.probe_validation().moves_right_way.any()


def test_committed_static_table_covers_the_dataset():
    from cudaperf.families import build_dataset

    path = featurize.default_path(root=ROOT)
    df = featurize.load(path)
    meta = df.attrs["cudaperf"]
    assert meta["kind"] == "static_features" and meta["resources"] in (True, False)
    if not meta["resources"]:
        assert not df.resources_ok.any() and "default registers" in meta["occupancy"]
    keys = {(t.task_id, v.name) for t in build_dataset() for v in t.variants}
    assert set(zip(df.task_id, df.variant)) == keys, \
        "dataset changed: rerun `python benchmarks/featurize_dataset.py`"
    assert not df.duplicated(["task_id", "variant"]).any()


# ------------------------------------------------------------------ profiling plan (CPU side)


def test_stratified_order_prefixes_are_proportional():
    tasks = _fake_tasks({"big": 60, "mid": 30, "small": 10})
    order = stratified_order(tasks, seed=3)
    assert sorted(t.task_id for t in order) == sorted(t.task_id for t in tasks)
    first = pd.Series([t.family for t in order[:20]]).value_counts()
    assert dict(first) == {"big": 12, "mid": 6, "small": 2}
    assert [t.task_id for t in order] == [t.task_id for t in stratified_order(tasks, seed=3)]


def test_plan_skips_done_and_keeps_the_same_capped_sample():
    tasks = _fake_tasks({"a": 5, "b": 5})
    full = PD.plan_items(tasks, max_variants=9)
    assert len(full) == 9 and len({t.task_id for t, _ in full}) == 3  # whole tasks
    done = {(t.task_id, v) for t, v in full[:4]}
    rest = PD.plan_items(tasks, done=done, max_variants=9)
    assert rest == full[4:]
    df = pd.DataFrame({"task_id": [k[0] for k in done], "variant": [k[1] for k in done],
                       "status": ["ok", "failed", "ok", "ok"]})
    assert len(PD.done_keys(df)) == 4 and len(PD.done_keys(df, retry_failed=True)) == 3


def test_shards_keep_tasks_together_unless_too_big():
    tasks = _fake_tasks({"a": 4}, variants=3) + _fake_tasks({"b": 1}, variants=7)
    items = [(t, v.name) for t in tasks for v in t.variants]
    sh = PD.shards(items, 5)
    assert [x for s in sh for x in s] == items and all(len(s) <= 5 for s in sh)
    for s in sh[:4]:
        assert len({t.task_id for t, _ in s}) == 1  # 3 + 3 > 5: never split a 3-variant task
    assert [len(s) for s in sh[4:]] == [5, 2]


def test_classify_status_finds_the_candidate_that_killed_the_worker():
    lines = ["start 0", "ok 0", "start 1", "err 1 cuda 700 cudaErrorIllegalAddress", "start 2",
             "ok 2", "start 3", "sta"]
    ok, failed, remaining = PD.classify_status(lines, 6)
    assert ok == {0, 2} and failed == {1: "cuda 700 cudaErrorIllegalAddress", 3: "died"}
    assert remaining == [4, 5]


HDR = ('"ID","Kernel Name","Block Size","Grid Size","Metric Name","Metric Unit","Metric Value"')


def _k(kid, name, grid, metrics):
    return [f'"{kid}","{name}","(256, 1, 1)","({grid}, 1, 1)","{m}","{u}","{v}"' for m, u, v in metrics]


def test_rows_from_profile_attribute_kernels_by_marker():
    tasks = _fake_tasks({"a": 1}, variants=3)
    items = [(tasks[0], v.name) for v in tasks[0].variants]
    m = [("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector", "1,024"),
         ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "", "128"),
         ("launch__block_size", "", "256"), ("launch__thread_count", "thread", "1,024"),
         ("smsp__sass_inst_executed_op_global_ld.sum", "inst", "32"),
         ("gpu__time_duration.sum", "ns", "5,000"), ("dram__bytes.sum", "byte", "4,096")]
    lines = ["==PROF== Connected", HDR] + _k(0, MARKER_KERNEL, 1, [("dram__bytes.sum", "byte", "0")])
    lines += _k(1, "k(int, float *)", 4, m)
    lines += _k(2, MARKER_KERNEL, 2, [("dram__bytes.sum", "byte", "0")])  # candidate 1: no kernel
    rows = PD.rows_from_profile("\n".join(lines), items, ok={0, 1}, failed={2: "timeout"}, shard_id=7)
    by = {r["variant"]: r for r in rows}
    assert by["naive"]["status"] == "ok" and by["naive"]["shard"] == 7
    assert by["naive"]["prof_sectors_per_request"] == 8.0
    assert by["naive"]["prof_coal"] == pytest.approx(0.5)  # float signature: ideal 4 sectors
    assert by["naive"]["prof_gmem_access"] == pytest.approx(1.0) and by["naive"]["prof_kernels"] == 1
    assert by["naive"]["prof_duration_ns"] == 5000 and np.isnan(by["naive"]["prof_syncthreads"])
    assert by["v1"]["status"] == "no_kernels" and by["v2"]["status"] == "failed"
    assert by["v2"]["error"] == "timeout"


def test_ideal_sectors_follow_the_widest_element():
    t = next(t for t in dev_tasks() if "saxpy" in t.task_id)
    assert PD.ideal_sectors(t) == 4.0
    d = Task(**{**t.__dict__, "signature": [p.__class__(**{**p.__dict__, "ctype": p.ctype.replace("float", "double")})
                                             for p in t.signature]})
    assert PD.ideal_sectors(d) == 8.0


def test_merge_rows_replaces_retried_rows_and_counts_coverage(tmp_path):
    tasks = _fake_tasks({"a": 1, "b": 1}, variants=2)
    items = [(t, v.name) for t in tasks for v in t.variants]
    first = PD.failed_rows(items, "died", 0)
    df = PD.merge_rows(None, first)
    retry = PD.rows_from_profile("", items[:1], {0}, {}, 1)  # ok but no kernels: status no_kernels
    df = PD.merge_rows(df, retry)
    assert len(df) == 4 and df.set_index(["task_id", "variant"]).loc[(items[0][0].task_id, "naive"), "shard"] == 1
    cov = PD.coverage(df, tasks)
    assert cov["variants_attempted"] == 4 and cov["variants_ok"] == 0 and cov["families_in_dataset"] == 2
    p = featurize.save(df, tmp_path / "p.parquet", meta={"gpu": "x", **cov})
    back = featurize.load(p)
    assert PD.done_keys(back) == {(t.task_id, v) for t, v in items}


@needs_nvcc
def test_worker_helper_library_compiles(tmp_path):
    from cudaperf.compile import compile_candidate

    r = compile_candidate(PD.HELPER_SOURCE, cache_dir=tmp_path)
    assert r.ok, r.log
    assert any(k.startswith(MARKER_KERNEL) for k in r.resources)


def test_dry_run_plan_touches_every_family(capsys):
    assert PD.main(["--dry-run", "--max-variants", "600"]) == 0
    out = capsys.readouterr().out
    n_fam = out.split(" families")[0].split(", ")[-1]
    have, total = n_fam.split(" of ")
    assert have == total


@pytest.mark.gpu
def test_profile_a_few_variants_on_the_gpu(tmp_path):
    if shutil.which("ncu") is None:
        pytest.skip("ncu not on PATH")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks/profile_dataset.py"), "--max-variants", "8",
                        "--out-dir", str(tmp_path), "--cache-dir", str(tmp_path / "cache"),
                        "--shard-size", "4", "--time-budget-s", "300"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    (p,) = tmp_path.glob("profiled_c2cuda_*.parquet")
    df = featurize.load(p)
    ok = df[df.status == "ok"]
    assert len(df) >= 8 and len(ok) >= 0.75 * len(df), df[["variant", "status", "error"]]
    assert ok.prof_coal.between(0, 1).all() and (ok.prof_kernels >= 1).all() and (ok.prof_tpb > 0).all()
    assert df.attrs["cudaperf"]["gpu"] and df.attrs["cudaperf"]["ncu"]


# ------------------------------------------------------------------ analyses


def _toy_static():
    return featurize.static_table(dev_tasks(), resources=False, jobs=1)


def test_compare_tables_flags_missing_and_changed_rows():
    a = _toy_static()
    assert (featurize.compare_tables(a, a)[["rows_missing", "rows_differing"]] == 0).all().all()
    b = a.copy()
    b.loc[0, "ops"] += 1
    c = featurize.compare_tables(a.iloc[1:], b).set_index("column")
    assert c.loc["ops", "rows_missing"] == 1 and c.loc["ops", "rows_differing"] == 0
    c = featurize.compare_tables(a, b).set_index("column")
    assert c.loc["ops", "rows_differing"] == 1 and c.loc["coal", "rows_differing"] == 0


def test_speedups_from_runtimes_and_correlation_signs():
    st = _toy_static()
    # runtimes that fall with hat_ops: ops must correlate positively with speedup, pooled and within
    meas = st[["task_id", "variant"]].copy()
    meas["runtime_ms"] = 10.0 / (1.0 + st["hat_ops"] - st["hat_ops"].min() + 0.01 * np.arange(len(st)))
    meas["correct"] = True
    sp = featurize.speedups(meas)
    assert np.allclose(sp[sp.variant == "naive"].speedup, 1.0)
    corr = featurize.speedup_correlation(st, meas).set_index("feature")
    assert corr.loc["ops", "rho_pooled"] > 0.5 and corr.loc["ops", "rows"] == len(st)
    meas2 = meas.assign(runtime_ms=1.0 / meas["runtime_ms"])
    assert featurize.speedup_correlation(st, meas2).set_index("feature").loc["ops", "rho_pooled"] < -0.5
    with pytest.raises(ValueError, match="speedup"):
        featurize.speedups(meas.drop(columns="runtime_ms"))


def test_static_vs_profiled_agreement_uses_only_ok_rows():
    st = _toy_static()
    prof = st[["task_id", "variant"]].copy()
    for n in FEATURE_NAMES:
        prof[f"prof_{n}"] = st[n] * 3.0 + 1.0  # a monotone map: perfect rank agreement
    prof["prof_xfer"] = np.nan
    prof["status"] = "ok"
    prof.loc[0, "status"] = "failed"
    prof.loc[0, "prof_ops"] = -1e9  # would break agreement if failed rows counted
    agree = featurize.static_vs_profiled(st, prof).set_index("feature")
    assert agree.loc["ops", "rho"] == pytest.approx(1.0) and agree.loc["ops", "pairs"] == len(st) - 1
    assert agree.loc["xfer", "pairs"] == 0 and pd.isna(agree.loc["xfer", "rho"])


@needs_nvcc
def test_compile_task_uses_prebuilt_libraries_without_nvcc(tmp_path, monkeypatch):
    """Variants already in the compile cache (a --prebuilt archive installed) are profiled from
    their own libraries under the task's entry symbol; nothing is compiled."""
    from cudaperf import compile as C

    task = dev_tasks()[0]
    for v in task.variants:
        assert C.compile_candidate(v.source, arch="sm_90", cache_dir=tmp_path).ok
    monkeypatch.setattr(C, "compile_batch", lambda *a, **k: pytest.fail("compiled although cached"))
    monkeypatch.setattr(C, "compile_candidate", lambda *a, **k: pytest.fail("compiled although cached"))
    got = PD.compile_task(task, str(tmp_path), "sm_90")
    assert set(got) == {v.name for v in task.variants}
    for v in task.variants:
        so, sym, log = got[v.name]
        assert so == C.lookup(v.source, arch="sm_90", cache_dir=tmp_path).so_path and sym == task.entry and log == ""


# ------------------------------------------------------------------ profiling: inputs made ahead


def test_inputs_written_ahead_are_the_inputs_the_worker_would_make(tmp_path):
    from cudaperf.inputs import make_inputs

    task = dev_tasks()[0]
    test = task.perf_test
    where = PD.write_inputs({**task.to_dict(), "variants": []}, test.name, str(tmp_path / "x"))
    got = PD.read_inputs(where)
    want = make_inputs(task, test, seed=0)
    assert set(got) == set(want)
    for k in want:
        assert np.asarray(got[k]).dtype == np.asarray(want[k]).dtype
        assert np.array_equal(np.asarray(got[k]), np.asarray(want[k]))
    (tmp_path / "x" / "DONE").unlink()  # incomplete: the worker must make them itself
    assert PD.read_inputs(where) is None and PD.read_inputs(None) is None


def test_input_prefetcher_runs_ahead_waits_and_releases(tmp_path, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    tasks = _fake_tasks({"a": 3, "b": 3})
    queue = PD.shards(PD.plan_items(tasks), 6)  # two tasks (6 variants) per shard
    made = []

    def fake_write(task_dict, test_name, where):
        made.append(task_dict["task_id"])
        Path(where).mkdir(parents=True)
        (Path(where) / "DONE").write_text("")
        return where

    with ThreadPoolExecutor(2) as pool:
        monkeypatch.setattr(PD, "write_inputs", fake_write)
        pf = PD.InputPrefetcher(tmp_path, pool, lambda t: t.tests[0], lookahead=2)
        pf.ahead(queue)
        pf.wait(queue[0])
        assert all(Path(pf.where(t), "DONE").exists() for t in PD.tasks_of(queue[0]))
        pf.ahead(queue)  # nothing submitted twice
        pf.wait(queue[1])
        ids = [t.task_id for sh in queue[:2] for t in PD.tasks_of(sh)]
        assert sorted(made) == sorted(ids) and len(queue) == 3
        assert len({pf.where(t) for t in tasks}) == len(tasks)
        assert all(Path(pf.where(t), "DONE").exists() for sh in queue[:2] for t in PD.tasks_of(sh))
        pf.release(PD.tasks_of(queue[1]))
        assert not any(Path(pf.where(t)).exists() for t in PD.tasks_of(queue[0]))
        assert all(Path(pf.where(t)).exists() for t in PD.tasks_of(queue[1]))
