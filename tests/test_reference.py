"""Serial C references: build, promote to double, run sandboxed, cache, fail loudly."""
from __future__ import annotations

import time

import numpy as np
import pytest

from cudaperf import reference as ref
from cudaperf.check import compare
from cudaperf.devtasks import dev_tasks
from cudaperf.inputs import make_inputs
from cudaperf.tasks import task_from_dict


def _expected(task, x):
    """numpy ground truth of each dev task, in float64."""
    if task.entry == "saxpy":
        return {"y": np.float64(x["a"]) * x["x"] + x["y"]}
    if task.entry == "row_sum":
        return {"out": x["a"].astype(np.float64).reshape(int(x["rows"]), int(x["cols"])).sum(axis=1)}
    if task.entry == "histogram":
        return {"hist": np.bincount(x["data"], minlength=int(x["bins"])).astype(np.int32)}
    if task.entry == "transpose":
        return {"out": x["in"].reshape(int(x["rows"]), int(x["cols"])).T.reshape(-1).astype(np.float64)}
    raise KeyError(task.entry)


def test_dev_references_every_small_test(tmp_path):
    for t in dev_tasks():
        so, precision = ref.build_reference_info(t, cache_dir=tmp_path)
        assert so.exists() and precision == "double"
        for test in t.tests:
            if test.perf:
                continue
            out = ref.reference_outputs(t, test, 0, cache_dir=tmp_path)
            exp = _expected(t, make_inputs(t, test, 0))
            assert set(out) == set(exp)
            for name, v in out.items():
                p = next(p for p in t.signature if p.name == name)
                assert v.dtype == (np.float64 if p.dtype == np.float32 else p.dtype)
                r = compare(v, exp[name], tol={"rtol": 1e-12, "atol": 1e-13, "l2": 1e-12}, dtype=v.dtype)
                assert r.ok, (t.task_id, test.name, r.summary())


def test_perf_size_and_cache(tmp_path):
    t = next(t for t in dev_tasks() if t.entry == "row_sum")
    test = t.perf_test
    t0 = time.monotonic()
    out = ref.reference_outputs(t, test, 1, cache_dir=tmp_path)
    first = time.monotonic() - t0
    exp = _expected(t, make_inputs(t, test, 1))["out"]
    assert out["out"].shape == (8192,) and np.allclose(out["out"], exp, rtol=1e-12)
    t0 = time.monotonic()
    again = ref.reference_outputs(t, test, 1, cache_dir=tmp_path)
    assert time.monotonic() - t0 < first / 5 and np.array_equal(again["out"], out["out"])
    assert (ref._ref_dir(t, tmp_path) / "perf" / "1.npz").exists()


def test_double_promotion_is_more_accurate_than_float(tmp_path):
    d = dict(next(x for x in __import__("cudaperf.devtasks", fromlist=["DEV_TASKS"]).DEV_TASKS
                  if x["entry"] == "row_sum"))
    d["tests"] = [{"name": "long", "sizes": {"rows": 2, "cols": 2_000_000}}]
    promoted = task_from_dict(d)
    native = task_from_dict({**d, "task_id": "dev/row_sum_native", "meta": {"reference_precision": "native"}})
    x = make_inputs(promoted, promoted.tests[0], 0)
    exact = _expected(promoted, x)["out"]
    hi = ref.reference_outputs(promoted, promoted.tests[0], 0, cache_dir=tmp_path)["out"]
    lo = ref.reference_outputs(native, native.tests[0], 0, cache_dir=tmp_path)["out"]
    assert hi.dtype == np.float64 and lo.dtype == np.float32
    assert ref.reference_precision(native, cache_dir=tmp_path) == "native"
    assert np.max(np.abs(hi - exact)) < 1e-6 < np.max(np.abs(lo.astype(np.float64) - exact))


def _mini(reference: str, tid: str = "t/mini", **meta):
    return task_from_dict({
        "task_id": tid, "track": "c2cuda", "family": "f", "entry": "f", "reference": reference, "meta": meta,
        "signature": [{"name": "n", "ctype": "int", "role": "size"},
                      {"name": "x", "ctype": "const float*", "role": "in", "shape": "n"},
                      {"name": "y", "ctype": "float*", "role": "out", "shape": "n"}],
        "tests": [{"name": "a", "sizes": {"n": 100}}]})


def test_falls_back_to_native_when_promotion_breaks(tmp_path):
    t = _mini('_Static_assert(sizeof(float) == 4, "needs 32-bit float");\n'
              "void f(int n, const float *x, float *y) { for (int i = 0; i < n; i++) y[i] = expf(x[i]); }\n")
    so, precision = ref.build_reference_info(t, cache_dir=tmp_path)
    assert precision == "native"
    out = ref.reference_outputs(t, t.tests[0], 0, cache_dir=tmp_path)["y"]
    assert out.dtype == np.float32
    x = make_inputs(t, t.tests[0], 0)["x"]
    assert np.allclose(out, np.exp(x.astype(np.float64)), rtol=1e-6)


def test_promoted_float_math_runs_in_double(tmp_path):
    t = _mini("#include <math.h>\nvoid f(int n, const float *x, float *y) {\n"
              "  for (int i = 0; i < n; i++) y[i] = expf(x[i]) * sqrtf(fabsf(x[i]));\n}\n")
    out = ref.reference_outputs(t, t.tests[0], 0, cache_dir=tmp_path)["y"]
    x = make_inputs(t, t.tests[0], 0)["x"].astype(np.float64)
    assert np.max(np.abs(out - np.exp(x) * np.sqrt(np.abs(x)))) < 1e-14


def test_crash_timeout_and_compile_error_raise(tmp_path):
    crash = _mini("void f(int n, const float *x, float *y) { *(volatile int *)0 = n; }\n", tid="t/crash")
    with pytest.raises(ref.ReferenceError, match="t/crash") as e:
        ref.reference_outputs(crash, crash.tests[0], 0, cache_dir=tmp_path)
    assert "SIGSEGV" in str(e.value)
    hang = _mini("void f(int n, const float *x, float *y) { for (volatile int i = 0; ; i++) ; }\n", tid="t/hang")
    t0 = time.monotonic()
    # A spinning reference is stopped by whichever limit fires first: the wall-clock watchdog or
    # RLIMIT_CPU (equal budgets; which wins depends on how much CPU the run got).
    with pytest.raises(ref.ReferenceError, match="timed out|CPU time limit"):
        ref.reference_outputs(hang, hang.tests[0], 0, cache_dir=tmp_path, timeout_s=2)
    assert time.monotonic() - t0 < 15
    broken = _mini("void f(int n, const float *x, float *y) { y[0] = undefined_name; }\n", tid="t/broken")
    with pytest.raises(ref.ReferenceError, match="t/broken.*does not compile") as e:
        ref.build_reference(broken, cache_dir=tmp_path)
    assert "undefined_name" in str(e.value)


def test_memory_cache_serves_read_only_copies_and_stays_bounded(tmp_path):
    import numpy as np

    from cudaperf import reference as R

    mc = R._MemoryCache(max_bytes=3 * 800)
    a = {"out": np.arange(100, dtype=np.float64)}
    mc.put("k1", a)
    got = mc.get("k1")
    assert got is not None and not got["out"].flags.writeable
    for i in range(2, 6):
        mc.put(f"k{i}", {"out": np.zeros(100)})
    assert mc.bytes <= 3 * 800 and mc.get("k1") is None and mc.get("k5") is not None
    mc.put("huge", {"out": np.zeros(10_000)})  # larger than the whole cache: not kept
    assert mc.get("huge") is None


def test_outputs_over_the_disk_limit_stay_in_memory_and_are_computed_once(tmp_path, monkeypatch):
    """A perf-size reference is not written to disk; threads asking at once share one run (and
    an inout buffer starts from its input: saxpy's y)."""
    import threading

    t = next(t for t in dev_tasks() if t.entry == "saxpy")
    test = t.tests[1]
    monkeypatch.setattr(ref, "DISK_MAX_BYTES", 0)
    runs = []
    real = ref.sandbox.run_limited

    def counting(cmd, *a, **k):
        if "cudaperf.refrunner" in cmd:  # (gcc building the reference runs through here too)
            runs.append(1)
            time.sleep(0.3)  # keep the first run in flight while the other threads ask
        return real(cmd, *a, **k)

    monkeypatch.setattr(ref.sandbox, "run_limited", counting)
    got = [None] * 4

    def ask(i):
        got[i] = ref.reference_outputs(t, test, 7, cache_dir=tmp_path)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(runs) == 1
    assert not (ref._ref_dir(t, tmp_path) / ref._safe(test.name) / "7.npz").exists()
    exp = _expected(t, make_inputs(t, test, 7))["y"]
    for g in got:
        assert np.allclose(g["y"], exp, rtol=1e-12) and not g["y"].flags.writeable


def test_prepare_makes_memory_only_references_ahead_only_when_they_fit(tmp_path, monkeypatch):
    """Harness.prepare: references over the disk limit are made ahead only when all of them
    (every test and check seed) fit in half of the memory cache; otherwise at first use."""
    from cudaperf.config import get_profile
    from cudaperf.harness import Harness

    t = next(t for t in dev_tasks() if t.entry == "saxpy")
    monkeypatch.setattr(ref, "DISK_MAX_BYTES", 0)  # every reference memory-only
    need = sum(ref.output_bytes(t, x) for x in t.tests)
    h = Harness(get_profile("smoke", **{"harness.cache_dir": str(tmp_path)}).harness, use_store=False)
    seeds = h.cfg.check_seeds
    monkeypatch.setattr(ref._MEMORY, "max_bytes", 2 * need * seeds)
    assert h.memory_references_fit([t])
    monkeypatch.setattr(ref._MEMORY, "max_bytes", 2 * need * seeds - 2)
    assert not h.memory_references_fit([t])
    made = []
    monkeypatch.setattr(Harness, "_reference", lambda self, task, test, seed: made.append((test.name, seed)))
    assert h.prepare([t]) == {} and made == []  # nothing fits: all left to first use
    monkeypatch.setattr(ref._MEMORY, "max_bytes", 2 * need * seeds)
    assert h.prepare([t]) == {} and len(made) == len(t.tests) * seeds
    h.close()


def test_prepare_builds_no_naive_variant_for_a_task_without_variants(tmp_path, monkeypatch):
    """A KernelBench problem has no variants (speedups over eager): prepare must not report its
    missing naive build as an error, and still builds the naive variant of every other task."""
    import dataclasses

    from cudaperf.config import get_profile
    from cudaperf.harness import Harness

    t = next(t for t in dev_tasks() if t.entry == "saxpy")
    bare = dataclasses.replace(t, task_id="kb/bare", variants=[])
    h = Harness(get_profile("smoke", **{"harness.cache_dir": str(tmp_path)}).harness, use_store=False)
    h.gpus = [0]  # as on a GPU machine: prepare builds naive variants there
    built = []
    monkeypatch.setattr(Harness, "_baseline_so", lambda self, task: built.append(task.task_id) or "x.so")
    monkeypatch.setattr(Harness, "_reference", lambda self, task, test, seed: None)
    assert h.prepare([t, bare]) == {}
    assert built == [t.task_id]
    h.gpus = []
    h.close()
