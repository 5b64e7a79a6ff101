"""torch2cuda dataset: size, contract, references runnable on CPU, signatures match modules,
CUDA variants compile (a sample), GPU check of variants against the module (marked gpu)."""
import json
import os
import random
import shutil
import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
import torch

from cudaperf.inputs import make_inputs
from cudaperf.tasks import TaskError, load_tasks, task_from_dict
from cudaperf.torchtasks import build, family_modules
from cudaperf.torchtasks.runtime import dims_of, instantiate, reference_outputs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "tasks" / "torch2cuda.jsonl.gz"


@pytest.fixture(scope="module")
def tasks():
    return build()[0]


def _sample(tasks, per_family, seed=0):
    by = defaultdict(list)
    for t in tasks:
        by[t.family].append(t)
    rng = random.Random(seed)
    return [t for fam in sorted(by) for t in rng.sample(by[fam], min(per_family, len(by[fam])))]


def test_at_least_1000_tasks_across_families(tasks):
    assert len(tasks) >= 1000
    fams = Counter(t.family for t in tasks)
    assert set(fams) >= {"activations", "elementwise_chain", "reductions", "norms", "softmax", "gemm_epilogue",
                         "conv", "pooling", "losses", "attention", "fused_linear_reduce"}
    assert len({t.task_id for t in tasks}) == len(tasks)


def test_contract_of_every_task(tasks):
    for t in tasks:
        assert t.track == "torch2cuda"
        assert [v.name for v in t.variants][0] == "naive" and len(t.variants) >= 2, t.task_id
        assert sum(x.perf for x in t.tests) == 1 and len(t.tests) >= 4, t.task_id
        roles = [p.role for p in t.signature]
        # sizes, then inputs (forward inputs + parameters), then outputs
        assert roles == sorted(roles, key=["size", "in", "out"].index), t.task_id
        names = t.meta["inputs"] + list(t.meta["parameters"]) + t.meta["outputs"]
        assert names == [p.name for p in t.signature if p.role != "size"], t.task_id
        for v in t.variants:
            assert f'extern "C" void {t.entry}(' in v.source, (t.task_id, v.name)


def test_perf_inputs_fit_on_a_gpu(tasks):
    for t in tasks:
        perf = t.perf_test
        assert t.min_bytes(perf) <= 1.2e9, t.task_id
        assert t.min_bytes(perf) >= 4e6, t.task_id  # well above launch overhead on an H200


def test_build_is_deterministic(tasks):
    again = build()[0]
    assert [t.to_json() for t in again] == [t.to_json() for t in tasks]


def test_committed_dataset_is_the_build(tasks):
    if not DATA.exists():
        pytest.skip("dataset not built yet (python -m cudaperf.torchtasks)")
    committed = load_tasks(DATA)
    built = {t.task_id: t for t in tasks}
    assert len(committed) >= 1000
    for t in committed:
        b = built[t.task_id]
        assert (t.reference, t.signature, [v.source for v in t.variants]) == \
               (b.reference, b.signature, [v.source for v in b.variants])


def test_modules_match_signatures_and_run_on_cpu(tasks):
    for t in _sample(tasks, 6):
        for test in t.tests[:-1]:  # the small configurations
            model, inputs = instantiate(t, test)
            for n, x in zip(t.meta["inputs"], inputs):
                assert tuple(x.shape) == dims_of(t, n, test), (t.task_id, n)
            params = dict(model.named_parameters())
            assert set(params) == set(t.meta["parameters"].values()), t.task_id
            for cn, mn in t.meta["parameters"].items():
                assert tuple(params[mn].shape) == dims_of(t, cn, test)
            arrays = make_inputs(t, test, seed=1)
            outs = reference_outputs(t, test, arrays)
            for p in t.signature:
                if p.role == "out":
                    assert outs[p.name].size == t.numel(p, test), (t.task_id, p.name)
                    assert np.all(np.isfinite(outs[p.name])), (t.task_id, test.name)


def test_reference_uses_the_given_buffers(tasks):
    t = next(x for x in tasks if x.family == "gemm_epilogue" and "linear_bias" in x.meta["parameters"]
             and x.meta["ops"] == ["linear"])
    test = t.tests[1]
    arr = make_inputs(t, test, seed=3)
    x = arr["x"].reshape(dims_of(t, "x", test)).astype(np.float64)
    w = arr["linear_weight"].reshape(dims_of(t, "linear_weight", test)).astype(np.float64)
    want = x @ w.T + arr["linear_bias"]
    got = reference_outputs(t, test, arr)["out"].reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_signature_mismatch_is_refused(tasks):
    t = next(x for x in tasks if x.family == "activations")
    d = t.to_dict()
    d["meta"]["shapes"]["x"] = ["batch_size", "dim", "2"]
    bad = task_from_dict(d)
    with pytest.raises(TaskError):
        reference_outputs(bad, bad.tests[1], make_inputs(bad, bad.tests[1], 0))


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
def test_variants_of_a_sample_compile(tasks, tmp_path):
    # one task per family, every variant, in one nvcc call per variant kind to keep it cheap
    sample = _sample(tasks, 1, seed=7)
    for t in sample:
        for v in t.variants:
            src = tmp_path / f"{t.family}_{v.name}.cu"
            src.write_text(v.source)
            r = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", "-arch=sm_90", "-O3",
                                "-o", str(src.with_suffix(".so")), str(src)], capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, (t.task_id, v.name, r.stderr[-2000:])


def test_verify_marshals_arguments_in_signature_order(tasks):
    from cudaperf.torchtasks.verify import c_args, main

    t = next(x for x in tasks if x.family == "gemm_epilogue" and "linear_bias" in x.meta["parameters"])
    test = t.tests[1]
    ptrs = {p.name: 1000 + i for i, p in enumerate(t.signature) if p.role != "size"}
    args = c_args(t, test, ptrs)
    assert [a.value for a in args] == [test.sizes["batch_size"], test.sizes["in_features"],
                                       test.sizes["out_features"]] + [ptrs[n] for n in ("x", "linear_weight",
                                                                                        "linear_bias", "out")]
    with pytest.raises(KeyError):
        c_args(t, test, {})
    if not torch.cuda.is_available():
        assert main(["--out", "/nonexistent/never_written.jsonl"]) == 2


def test_reference_falls_back_to_strict_float32_when_float64_does_not_fit(tasks, monkeypatch):
    """On the H200, sdpa over 8k tokens in float64 needs 65 GB per process: the reference is then
    computed in float32 with TF32 off, and each test's precision is reported."""
    from cudaperf.torchtasks import runtime, verify

    t = next(x for x in tasks if x.family == "attention")
    seen = []

    def fake(task, test, arrays, device="cpu", double=False):
        seen.append((test.name, double, torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32))
        if double and test is task.perf_test:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB")
        return {"out": np.zeros(4, dtype=np.float64 if double else np.float32)}

    import cudaperf.inputs

    monkeypatch.setattr(runtime, "reference_outputs", fake)
    monkeypatch.setattr(cudaperf.inputs, "make_inputs", lambda task, test, seed: {"seed": seed})
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    small = [x for x in t.tests if x is not t.perf_test][:1]
    monkeypatch.setattr(t, "tests", small + [t.perf_test])
    precisions: list[str] = []
    cases = verify.reference_cases(t, 0, precisions)
    assert precisions == ["float64", "float32"]
    assert [c[0].name for c in cases] == [x.name for x in t.tests]
    assert all(np.asarray(v).dtype == np.float32 for v in cases[1][2].values())
    # the float32 retry ran with TF32 off, and the flags were restored afterwards
    assert seen[-1][1:] == (False, False, False)
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == (seen[0][2], seen[0][3])


def test_every_family_module_declares_itself():
    mods = family_modules()
    assert len(mods) >= 11
    for m in mods.values():
        assert m.__doc__ and m.CATEGORY


# ----------------------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.skipif(NVCC is None or not torch.cuda.is_available(), reason="needs nvcc and a CUDA GPU")
def test_variants_match_the_module_on_gpu(tasks, tmp_path):
    from cudaperf.compile import compile_candidate
    from cudaperf.torchtasks.verify import check_variant

    from concurrent.futures import ThreadPoolExecutor

    jobs = [(t, v) for t in _sample(tasks, 3, seed=11) for v in t.variants]
    # nvcc in parallel (one process each): compiled one by one, the sample outlasted a
    # 110-second device slot before its first checks ran.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        built = list(pool.map(lambda tv: compile_candidate(tv[1].source, arch="sm_90", cache_dir=str(tmp_path)), jobs))
    for (t, v), cr in zip(jobs, built):
        assert cr.ok, (t.task_id, v.name, cr.log[-1000:])
        ok, fails = check_variant(t, cr.so_path, seed=5)
        assert ok, (t.task_id, v.name, fails)


def test_harness_reference_for_torch_tasks_is_the_module_in_double(tasks, tmp_path):
    """The harness' reference path (cudaperf.reference) serves torch2cuda tasks: the module on
    the CPU in float64 on the same inputs, cached; it agrees with the float32 module."""
    from cudaperf import reference

    for t in _sample(tasks, 1, seed=3)[:6]:
        test = min(t.tests, key=lambda x: sum(x.sizes.values()))
        got = reference.reference_outputs(t, test, 1, cache_dir=tmp_path)
        f32 = reference_outputs(t, test, make_inputs(t, test, 1))
        assert set(got) <= set(f32), t.task_id
        for name, arr in got.items():
            assert arr.dtype == np.float64 or arr.dtype.kind != "f", (t.task_id, name, arr.dtype)
            np.testing.assert_allclose(arr, f32[name].astype(np.float64), rtol=2e-3, atol=2e-3 * max(1.0, np.abs(arr).max()),
                                       err_msg=t.task_id)
        again = reference.reference_outputs(t, test, 1, cache_dir=tmp_path)  # from the cache
        assert all(np.array_equal(again[k], got[k]) for k in got)


# ----------------------------------------------------------------------------- parallel verification (CPU)


def _fake_verify(tid: str) -> dict:
    if tid == "boom":
        raise RuntimeError("broken task")
    return {"task_id": tid, "variants": {"naive": {"correct": True, "ms": 1.0}}, "eager_ms": 2.0, "pid": os.getpid()}


def test_run_pool_writes_rows_as_they_finish_records_errors_and_resumes(tmp_path):
    from cudaperf.torchtasks.verify import done_ids, run_pool

    out = tmp_path / "rows.jsonl"
    ids = ["a", "boom", "b", "c"]
    assert run_pool(ids, _fake_verify, out, procs=2, log=lambda m: None) == 4
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == sorted(ids)
    assert next(r for r in rows if r["task_id"] == "boom")["error"].startswith("RuntimeError")
    assert len({r["pid"] for r in rows if "pid" in r} - {os.getpid()}) >= 1, "ran in worker processes"
    assert done_ids(out) == {"a", "b", "c"}  # the error row is measured again on resume
    # in-process, with a time budget that is already spent after the first task
    t = iter([0.0, 0.0] + [5.0] * 10)  # start, the check before x; later checks are past the budget
    out2 = tmp_path / "budget.jsonl"
    assert run_pool(["x", "y", "z"], _fake_verify, out2, procs=1, max_seconds=1, log=lambda m: None,
                    clock=lambda: next(t)) == 1


def _fake_verify_hangs(args_tid: str) -> dict:
    tid, pid_dir = args_tid.split("|")
    (Path(pid_dir) / f"{tid}.pid").write_text(str(os.getpid()))
    if tid == "hang":
        time.sleep(3600)
    return _fake_verify(tid)


def test_run_pool_hard_limit_abandons_running_tasks_and_kills_their_process(tmp_path):
    from cudaperf.torchtasks.verify import done_ids, run_pool

    out, logs = tmp_path / "rows.jsonl", []
    ids = [f"{t}|{tmp_path}" for t in ("hang", "a", "b")]
    t0 = time.monotonic()
    run_pool(ids, _fake_verify_hangs, out, procs=2, hard_seconds=8, log=logs.append)
    assert time.monotonic() - t0 < 60, "returned at the hard limit, not after the hung task"
    assert done_ids(out) == {"a", "b"}  # the hung task has no row: measured on resume
    assert any("abandoned" in m and "hang" in m for m in logs)
    pid = int((tmp_path / "hang.pid").read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"the hung worker {pid} still runs")


def _fake_verify_cannot_exit(tid: str) -> dict:
    # A non-daemon thread that never ends: the worker finishes its task but hangs in its exit
    # (what a torch.compile worker did on the H200 in session 13).
    import threading

    threading.Thread(target=time.sleep, args=(3600,), daemon=False).start()
    return _fake_verify(tid)


def test_run_pool_returns_when_a_finished_worker_cannot_exit(tmp_path, monkeypatch):
    from cudaperf.torchtasks import verify

    monkeypatch.setattr(verify, "EXIT_GRACE_S", 2.0)
    out = tmp_path / "rows.jsonl"
    t0 = time.monotonic()
    assert verify.run_pool(["a", "b"], _fake_verify_cannot_exit, out, procs=2, log=lambda m: None) == 2
    assert time.monotonic() - t0 < 45, "a clean run waited on workers that cannot exit"
    assert verify.done_ids(out) == {"a", "b"}


def _hold(args):
    from pathlib import Path

    from cudaperf.gpulock import GpuLock

    path, kind, log, hold = args
    lock = GpuLock(Path(path))
    with (lock.exclusive() if kind == "ex" else lock.shared()):
        with open(log, "a") as fh:
            fh.write(f"{kind} in {time.monotonic():.4f}\n")
        time.sleep(hold)
        with open(log, "a") as fh:
            fh.write(f"{kind} out {time.monotonic():.4f}\n")


def _lock_events(tmp_path, jobs):
    import multiprocessing as mp

    tmp_path.mkdir(parents=True, exist_ok=True)
    path, log = str(tmp_path / "lock"), tmp_path / "log"
    with mp.get_context("spawn").Pool(len(jobs)) as pool:
        pool.map(_hold, [(path, kind, str(log), hold) for kind, hold in jobs])
    ev = [ln.split() for ln in log.read_text().splitlines()]
    return sorted(ev, key=lambda e: float(e[2]))


def test_gpu_lock_across_processes_readers_share_and_a_writer_is_alone(tmp_path):
    # Readers and writers of four processes: a writer is never in company. (In which order the
    # writers and readers get in is scheduling: with writer preference, readers may well alternate
    # with writers and never meet.)
    inside: list[str] = []
    for kind, what, _ in _lock_events(tmp_path, [("sh", 0.6), ("sh", 0.6), ("ex", 0.3), ("ex", 0.3)]):
        if what == "in":
            assert "ex" not in inside, "someone entered while a writer held the lock"
            assert kind != "ex" or not inside, "a writer entered while others held the lock"
            inside.append(kind)
        else:
            inside.remove(kind)
    assert not inside
    # Readers alone always share: two of them holding 2 s each (longer than a spawned worker's
    # start-up on a loaded machine) are inside together.
    inside, most = [], 0
    for kind, what, _ in _lock_events(tmp_path / "readers", [("sh", 2.0), ("sh", 2.0)]):
        if what == "in":
            inside.append(kind)
        else:
            inside.remove(kind)
        most = max(most, len(inside))
    assert most == 2, "two readers of different processes did not share the lock"


@pytest.mark.gpu
@pytest.mark.skipif(NVCC is None or not torch.cuda.is_available(), reason="needs nvcc and a CUDA GPU")
def test_parallel_verify_on_gpu_writes_timed_rows(tmp_path):
    from cudaperf.torchtasks.verify import main

    out = tmp_path / "rows.jsonl"
    assert main(["--out", str(out), "--limit", "4", "--procs", "2", "--reps", "5",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 4 and not any("error" in r for r in rows), rows
    for r in rows:
        assert r["eager_ms"] > 0 and r["l2_flush_bytes"] > 0
        assert ("compile_ms" in r) or ("compile_error" in r)
        assert all(v["compiled"] and v["correct"] and v["ms"] > 0 for v in r["variants"].values()), r


def _fake_verify_dies(tid: str) -> dict:
    if tid == "dies":
        os._exit(70)  # as _verify_by_id does when a CUDA error left the context unusable
    time.sleep(0.2)
    return _fake_verify(tid)


def test_run_pool_survives_a_dying_worker(tmp_path):
    from cudaperf.torchtasks.verify import done_ids, run_pool

    out = tmp_path / "rows.jsonl"
    ids = ["a", "dies", "b", "c", "d", "e", "f", "g", "h"]
    logs: list[str] = []
    run_pool(ids, _fake_verify_dies, out, procs=2, log=logs.append)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == sorted(ids), "every task has exactly one row"
    assert "error" in next(r for r in rows if r["task_id"] == "dies")
    # Which tasks were in flight when the pool broke depends on how late the executor notices the
    # death (seconds on a loaded machine): those get error rows naming the broken pool, nothing
    # else does, and the tail of the list runs in the fresh pool.
    for r in rows:
        if "error" in r and r["task_id"] != "dies":
            assert "BrokenProcessPool" in r["error"] or "pool broke" in r["error"], r
    assert {"f", "g", "h"} <= done_ids(out), "tasks after the death ran in a fresh pool"
    assert any("fresh pool" in m for m in logs)


def test_rep_plan_keeps_fast_functions_and_bounds_slow_ones():
    from cudaperf.torchtasks.verify import rep_plan

    assert rep_plan(0.2, 2, 20, budget_ms=2000) == (2, 20)     # fast: as asked
    assert rep_plan(100.0, 2, 20, budget_ms=2000) == (0, 20)   # 20 fit exactly: no warm-up left
    assert rep_plan(150.0, 2, 20, budget_ms=2000) == (0, 13)   # as many as fit
    assert rep_plan(1358.0, 2, 20, budget_ms=2000) == (0, 5)   # never fewer than 5
    assert rep_plan(50.0, 2, 3, budget_ms=2000, min_reps=5) == (2, 3)  # nor more than asked
    assert rep_plan(0.0, 0, 20) == (0, 20)


def test_cuda_time_ms_times_fewer_repetitions_of_a_slow_function(monkeypatch):
    """cuda_time_ms's bookkeeping on the CPU: CUDA events replaced by the host clock."""
    import torch

    from cudaperf.torchtasks import verify

    class HostEvent:
        def __init__(self, enable_timing=True):
            self.t = None

        def record(self):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return (other.t - self.t) * 1e3

    monkeypatch.setattr(torch.cuda, "Event", HostEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.03)

    med, cv = verify.cuda_time_ms(slow, warmup=3, reps=20, budget_ms=200)
    # ~30 ms a call: two timed warm-up calls (the first looked slow), then 200 // 30 = 6
    # repetitions (5, the minimum, when a loaded machine stretches the sleeps), no more warm-up
    assert len(calls) in (2 + 5, 2 + 6) and 25 <= med <= 80, (len(calls), med)
    calls.clear()
    verify.cuda_time_ms(lambda: calls.append(1), warmup=3, reps=20, budget_ms=200)
    assert len(calls) == 3 + 20  # fast: as asked


def test_verify_limits_count_from_the_command_start():
    from cudaperf.torchtasks.verify import budget_left

    # 40 s went to the prebuilt install: the pool gets what is left of each limit
    assert budget_left(230, 300, 40.0) == (190.0, 260.0)
    # the hard limit defaults to max + 120, also counted from the start
    assert budget_left(230, 0, 40.0) == (190.0, 310.0)
    # no limits stay no limits; a spent budget leaves 1 s (0 would mean "no limit" to run_pool)
    assert budget_left(0, 0, 40.0) == (0.0, 0.0)
    assert budget_left(30, 50, 60.0) == (1.0, 1.0)


def test_tasks_to_do_skips_rows_of_another_gpu(tmp_path):
    from cudaperf.torchtasks.verify import tasks_to_do

    here, other = tmp_path / "h100.jsonl", tmp_path / "h200.jsonl"
    here.write_text(json.dumps({"task_id": "a"}) + "\n" + json.dumps({"task_id": "b", "error": "x"}) + "\n")
    other.write_text(json.dumps({"task_id": "c"}) + "\n" + json.dumps({"task_id": "d", "error": "y"}) + "\n")
    todo, done, elsewhere = tasks_to_do(["a", "b", "c", "d", "e"], here, [str(other), str(here)])
    assert todo == ["b", "d", "e"]  # error rows are measured again, wherever they are
    assert done == {"a"} and elsewhere == {"c"}
    assert tasks_to_do(["a", "c"], tmp_path / "new.jsonl")[0] == ["a", "c"]
