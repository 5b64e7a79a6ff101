"""Input generation: determinism across processes, generator semantics, dtype exactness, errors."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from cudaperf import inputs
from cudaperf.devtasks import dev_tasks
from cudaperf.tasks import TaskError, task_from_dict


def _task(params, tests=None, tid="t/gen"):
    return task_from_dict({"task_id": tid, "track": "c2cuda", "family": "f", "entry": "f",
                           "signature": params, "reference": "void f() {}",
                           "tests": tests or [{"name": "a", "sizes": {"n": 1000, "m": 50}}]})


SIZES = [{"name": "n", "ctype": "int", "role": "size"}, {"name": "m", "ctype": "int", "role": "size"}]


def test_dev_tasks_shapes_and_roles():
    for t in dev_tasks():
        for test in t.tests[:3]:
            x = inputs.make_inputs(t, test, seed=0)
            shapes = inputs.output_shapes(t, test)
            for p in t.signature:
                if p.role == "out":
                    assert p.name not in x and p.name in shapes
                elif p.role in ("in", "inout"):
                    assert x[p.name].shape == (t.numel(p, test),) and x[p.name].dtype == p.dtype
                else:
                    assert isinstance(x[p.name], np.generic) and x[p.name].dtype == p.dtype
            for name, (n, dt) in shapes.items():
                assert n == t.numel(next(p for p in t.signature if p.name == name), test)
    hist = next(t for t in dev_tasks() if t.task_id == "dev/histogram_i32")
    test = hist.tests[1]
    d = inputs.make_inputs(hist, test, 3)["data"]
    assert d.min() >= 0 and d.max() < test.sizes["bins"]  # randint(0, bins): hi exclusive


def test_deterministic_and_seed_sensitive():
    t = dev_tasks()[0]
    test = t.tests[2]
    a, b, c = (inputs.make_inputs(t, test, s) for s in (7, 7, 8))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["x"], c["x"])
    assert not np.array_equal(a["x"], a["y"])  # independent stream per parameter
    code = ("from cudaperf import inputs; from cudaperf.devtasks import dev_tasks; import numpy as np;"
            "t = dev_tasks()[0]; x = inputs.make_inputs(t, t.tests[2], 7);"
            "print(float(np.sum(x['x'].astype(np.float64))), float(x['a']))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"}, check=True).stdout.split()
    assert float(other[0]) == float(np.sum(a["x"].astype(np.float64))) and float(other[1]) == float(a["a"])


def test_floats_exactly_representable():
    t = dev_tasks()[0]
    x = inputs.make_inputs(t, t.tests[2], 1)["x"]
    assert x.dtype == np.float32
    assert np.array_equal(x.astype(np.float64).astype(np.float32), x)
    assert np.all((x >= -1) & (x < 1))


def test_generators():
    params = SIZES + [
        {"name": "p", "ctype": "int*", "role": "in", "shape": "n", "init": "perm(m)"},
        {"name": "rp", "ctype": "int*", "role": "in", "shape": "m+1", "init": "csr_rowptr(m, n)"},
        {"name": "s", "ctype": "float*", "role": "in", "shape": "n", "init": "sorted_uniform(0, 10)"},
        {"name": "c", "ctype": "double*", "role": "in", "shape": "n", "init": "const(2.5)"},
        {"name": "ar", "ctype": "long long*", "role": "in", "shape": "n", "init": "arange(5, 3)"},
        {"name": "b", "ctype": "unsigned char*", "role": "in", "shape": "n", "init": "bernoulli(0.25)"},
        {"name": "ch", "ctype": "int*", "role": "in", "shape": "n", "init": "choice(1, 7, 42)"},
        {"name": "g", "ctype": "float*", "role": "in", "shape": "n", "init": "normal(3, 0.5)"},
        {"name": "flag", "ctype": "bool*", "role": "inout", "shape": "n"},
        {"name": "k", "ctype": "int", "role": "scalar", "init": "randint(m, m+1)"},
        {"name": "fixed", "ctype": "float", "role": "scalar", "value": 0.1},
    ]
    t = _task(params)
    x = inputs.make_inputs(t, t.tests[0], 0)
    p = x["p"]
    assert sorted(p[:50]) == list(range(50)) and np.array_equal(p[50:100], p[:50])  # tiled
    rp = x["rp"]
    assert rp[0] == 0 and rp[-1] == 1000 and len(rp) == 51 and np.all(np.diff(rp) >= 0)
    assert np.all(np.diff(x["s"]) >= 0) and x["s"].min() >= 0 and x["s"].max() < 10
    assert np.all(x["c"] == 2.5)
    assert x["ar"][0] == 5 and x["ar"][1] == 8 and x["ar"].dtype == np.int64
    assert set(np.unique(x["b"])) <= {0, 1} and 150 < int(x["b"].sum()) < 350
    assert set(np.unique(x["ch"])) == {1, 7, 42}
    assert abs(float(x["g"].mean()) - 3) < 0.1
    assert x["flag"].dtype == np.bool_
    assert x["k"] == 50 and x["k"].dtype == np.int32
    assert x["fixed"] == np.float32(0.1) and x["fixed"].dtype == np.float32


def test_test_scalars_override():
    params = [{"name": "n", "ctype": "int", "role": "size"},
              {"name": "a", "ctype": "float", "role": "scalar", "value": 1.0}]
    t = _task(params, [{"name": "z", "sizes": {"n": 3}, "scalars": {"a": 0.5}}])
    assert inputs.make_inputs(t, t.tests[0], 0)["a"] == np.float32(0.5)


def test_errors_name_task_param_and_known_generators():
    t = _task(SIZES + [{"name": "q", "ctype": "float*", "role": "in", "shape": "n", "init": "zipf(2)"}])
    with pytest.raises(TaskError) as e:
        inputs.make_inputs(t, t.tests[0], 0)
    msg = str(e.value)
    assert "t/gen" in msg and "'q'" in msg and "zipf" in msg and "csr_rowptr" in msg and "uniform" in msg
    t = _task(SIZES + [{"name": "q", "ctype": "char*", "role": "in", "shape": "n", "init": "randint(0, 1000)"}])
    with pytest.raises(TaskError, match="do not fit"):
        inputs.make_inputs(t, t.tests[0], 0)
    t = _task(SIZES + [{"name": "q", "ctype": "int*", "role": "in", "shape": "n", "init": "randint(5, 5)"}])
    with pytest.raises(TaskError, match="empty"):
        inputs.make_inputs(t, t.tests[0], 0)
    t = _task(SIZES + [{"name": "q", "ctype": "int*", "role": "in", "shape": "m", "init": "csr_rowptr(m, n)"}])
    with pytest.raises(TaskError, match="m\\+1"):
        inputs.make_inputs(t, t.tests[0], 0)


def test_fixed_inputs_override_generation_for_their_test_only():
    from cudaperf.devtasks import SAXPY
    from cudaperf.inputs import make_inputs
    from cudaperf.tasks import task_from_dict

    rec = dict(SAXPY, meta={"fixed_inputs": {"odd": {"x": list(range(1003)), "y": [0.5] * 1003}}})
    rec["tests"] = [dict(t, scalars={"a": 2.0}) for t in SAXPY["tests"]]
    t = task_from_dict(rec)
    odd = next(x for x in t.tests if x.name == "odd")
    for seed in (0, 1):  # every seed gets the given values
        got = make_inputs(t, odd, seed)
        assert got["x"].dtype == np.float32 and got["x"][7] == 7.0 and got["y"][0] == 0.5
    other = make_inputs(t, next(x for x in t.tests if x.name == "medium"), 0)
    assert other["x"].size == 65537 and not np.all(other["x"] == np.arange(65537))
    bad = task_from_dict(dict(rec, meta={"fixed_inputs": {"odd": {"x": [1.0], "y": [0.5] * 1003}}}))
    with pytest.raises(TaskError, match="fixed values"):
        make_inputs(bad, odd, 0)


def test_float32_and_integer_draws_stay_in_range_and_dtype():
    """uniform / normal / randint draw float32 and integer parameters in their own dtype: the
    half-open interval holds (rounding in float32 could reach hi), values are deterministic."""
    from cudaperf.inputs import GENERATORS, _finish

    rng = np.random.default_rng(3)
    v = GENERATORS["uniform"](rng, 200_000, np.dtype(np.float32), [0.1, 0.1000001])
    assert v.dtype == np.float32 and v.min() >= np.float32(0.1) and v.max() < np.float32(0.1000001)
    w = GENERATORS["uniform"](np.random.default_rng(3), 200_000, np.dtype(np.float32), [0.1, 0.1000001])
    assert np.array_equal(v, w)
    i8 = GENERATORS["randint"](rng, 1000, np.dtype(np.int8), [-128, 128])
    assert i8.dtype == np.int8 and i8.min() >= -128 and i8.max() <= 127
    big = GENERATORS["randint"](rng, 10, np.dtype(np.int8), [0, 1000])  # does not fit: int64, then refused
    assert big.dtype == np.int64
    with pytest.raises(TaskError):
        _finish(big, np.dtype(np.int8), "t/x")
    n = GENERATORS["normal"](rng, 100_000, np.dtype(np.float32), [2.0, 0.5])
    assert n.dtype == np.float32 and abs(float(n.mean()) - 2.0) < 0.01 and abs(float(n.std()) - 0.5) < 0.01
    assert _finish(n, np.dtype(np.float32), "t/y") is n  # no copy of a perf-size buffer


def test_reference_cache_key_includes_the_generator_version(monkeypatch):
    from cudaperf import inputs, reference
    from cudaperf.devtasks import dev_tasks

    t = dev_tasks()[0]
    a = reference.task_hash(t)
    monkeypatch.setattr(reference, "GENERATOR_VERSION", inputs.GENERATOR_VERSION + 1)
    assert reference.task_hash(t) != a
