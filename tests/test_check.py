"""Output comparison: magnitude-aware tolerance, non-finite handling, poison accounting."""
from __future__ import annotations

import numpy as np
import pytest

from cudaperf import check
from cudaperf.check import POISON, compare, count_poison, poison_array, poison_bytes, poison_value

TOL = {"rtol": 1e-3, "atol": 1e-4, "l2": 1e-3}


def test_zeros_cannot_pass_tiny_nonzero_reference():
    ref = np.random.default_rng(0).uniform(0.5e-7, 2e-7, 1000)
    r = compare(np.zeros(1000, np.float32), ref, tol=TOL, dtype=np.float32)
    assert not r.ok and r.n_bad == 1000 and r.first_bad == 0 and r.l2_rel == pytest.approx(1.0)


def test_zeros_pass_an_all_zero_reference():
    r = compare(np.zeros(10, np.float32), np.zeros(10), tol=TOL, dtype=np.float32)
    assert r.ok and r.n_bad == 0 and r.max_abs_err == 0 and r.l2_rel == 0
    assert not compare(np.full(10, 1e-3, np.float32), np.zeros(10), tol=TOL, dtype=np.float32).ok


def test_float_rounding_passes_and_real_error_fails():
    ref = np.random.default_rng(1).uniform(-1, 1, 4096)
    out = ref.astype(np.float32)
    assert compare(out, ref, tol=TOL, dtype=np.float32).ok
    wrong = out.copy()
    wrong[123] += 0.01
    r = compare(wrong, ref, tol=TOL, dtype=np.float32)
    assert not r.ok and r.n_bad == 1 and r.first_bad == 123 and r.max_abs_err == pytest.approx(0.01, rel=1e-3)


def test_l2_bound_catches_many_small_errors():
    ref = np.ones(10000)
    out = (ref + 9e-4).astype(np.float32)  # each element within rtol 1e-3, l2 rel 9e-4
    assert compare(out, ref, tol=TOL, dtype=np.float32).ok
    assert not compare(out, ref, tol={**TOL, "l2": 1e-4}, dtype=np.float32).ok


def test_nan_inf_handling():
    ref = np.array([1.0, 2.0, np.nan, np.inf])
    ok = np.array([1.0, 2.0, np.nan, np.inf], np.float32)
    assert compare(ok, ref, tol=TOL, dtype=np.float32).ok
    r = compare(np.array([1.0, np.nan, np.nan, np.inf], np.float32), ref, tol=TOL, dtype=np.float32)
    assert not r.ok and r.first_bad == 1 and r.n_nan == 2 and r.max_abs_err == float("inf")
    r = compare(np.array([1.0, 2.0, 0.0, np.inf], np.float32), ref, tol=TOL, dtype=np.float32)
    assert not r.ok and r.first_bad == 2
    assert not compare(np.array([1.0, 2.0, np.nan, -np.inf], np.float32), ref, tol=TOL, dtype=np.float32).ok


def test_integers_exact():
    ref = np.arange(100, dtype=np.int32)
    assert compare(ref.copy(), ref, tol={}, dtype=np.int32).ok
    out = ref.copy()
    out[7] += 1
    r = compare(out, ref, tol={"rtol": 1.0, "atol": 1.0, "l2": 1.0}, dtype=np.int32)  # tolerances ignored
    assert not r.ok and r.n_bad == 1 and r.first_bad == 7
    assert not compare(ref[:99], ref, tol={}, dtype=np.int32).ok  # size mismatch


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.uint32, np.int64, np.int8, np.uint8, np.bool_])
def test_poison_roundtrip(dt):
    buf = poison_array(50, dt)
    assert buf.dtype == np.dtype(dt) and count_poison(buf, dt) == 50
    assert POISON[np.dtype(dt)].tobytes() == poison_value(dt).tobytes()
    assert buf.tobytes() == poison_bytes(dt) * 50
    buf[:20] = np.zeros(20, dt)
    assert count_poison(buf, dt) == 30


def test_poison_nan_differs_from_computed_nan_and_is_reported():
    out = poison_array(8, np.float32)
    out[:4] = [1, 2, 3, np.float32(np.nan)]  # a NaN the kernel computed is not "unwritten"
    assert np.isnan(poison_value(np.float32)) and count_poison(out, np.float32) == 4
    r = compare(out, np.arange(1, 9, dtype=np.float64), tol=TOL, dtype=np.float32)
    assert not r.ok and r.unwritten == 4 and r.n_nan == 5 and r.first_bad == 3
    assert poison_value(np.int32) == np.int32(0x7FC0DEAD)
    assert "never written" in r.summary()


def test_chunked_compare_matches_one_pass(monkeypatch):
    """Outputs are compared chunk by chunk; the verdict and error sizes must not depend on it."""
    import math

    rng = np.random.default_rng(3)
    tol = {"atol": 1e-5, "rtol": 1e-4, "l2": 1e-3}
    for trial in range(400):
        n = int(rng.integers(0, 50))
        dt = [np.float32, np.float64, np.int32, np.uint8][trial % 4]
        r = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6) if np.dtype(dt).kind == "f" \
            else rng.integers(0, 200, n).astype(np.float64)
        o = r.astype(dt).copy()
        for _ in range(int(rng.integers(0, 3))):
            if n:
                o[rng.integers(n)] = np.nan if np.dtype(dt).kind == "f" and rng.random() < 0.5 else o[0] + 1
        if n and np.dtype(dt).kind == "f" and rng.random() < 0.3:
            r[rng.integers(n)] = np.inf
        monkeypatch.setattr(check, "CHUNK", 1 << 20)
        whole = check.compare(o, r, tol=tol, dtype=dt, native=False)
        monkeypatch.setattr(check, "CHUNK", 7)
        with np.errstate(all="ignore"):
            parts = check.compare(o, r, tol=tol, dtype=dt, native=False)
        for f in ("ok", "n_bad", "first_bad", "n_nan", "unwritten"):
            assert getattr(whole, f) == getattr(parts, f), (trial, f)
        for f in ("max_abs_err", "max_rel_err", "l2_rel"):
            a, b = getattr(whole, f), getattr(parts, f)
            assert (math.isinf(a) and math.isinf(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-300), (trial, f)


def _same_outcome(a, b, where):
    import math

    for f in ("ok", "n_bad", "first_bad", "n_nan", "unwritten"):
        assert getattr(a, f) == getattr(b, f), (where, f, a, b)
    for f in ("max_abs_err", "max_rel_err"):  # maxima: exactly the same numbers
        assert getattr(a, f) == getattr(b, f) or (math.isnan(getattr(a, f)) and math.isnan(getattr(b, f))), \
            (where, f, a, b)
    x, y = a.l2_rel, b.l2_rel  # sums: the order of additions differs
    assert (math.isinf(x) and math.isinf(y)) or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-300), (where, x, y)


@pytest.mark.skipif(__import__("shutil").which("gcc") is None, reason="no C compiler")
def test_native_check_gives_the_numpy_outcome():
    """The C pass (check_native.c) and the numpy path agree on every field, on random outputs with
    rounding noise, real errors, NaN, both infinities, poison (never written) and zeros, for every
    pair of float widths of output and reference."""
    assert check.native_check() is not None  # gcc is here: a broken build must fail this test
    rng = np.random.default_rng(11)
    tols = [{"atol": 1e-5, "rtol": 1e-4, "l2": 1e-3}, {"atol": 0.0, "rtol": 0.0}, {"atol": 1e-3, "rtol": 0.0, "l2": 1e-6}]
    for trial in range(1500):
        n = int(rng.integers(1, 300))
        dt = [np.float32, np.float64][trial % 2]
        rdt = [np.float32, np.float64][(trial // 2) % 2]
        r = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30)).astype(rdt)
        if rng.random() < 0.1:
            r[:] = 0
        o = r.astype(dt)
        if rng.random() < 0.7:
            o = (o + rng.standard_normal(n).astype(dt) * np.asarray(np.abs(r).max() * 10.0 ** rng.integers(-9, -1), dt))
        for _ in range(int(rng.integers(0, 4))):
            k = int(rng.integers(n))
            what = rng.integers(6)
            if what == 0:
                o[k] = np.nan
            elif what == 1:
                o[k] = poison_value(dt)
            elif what == 2:
                r[k] = [np.inf, -np.inf, np.nan][int(rng.integers(3))]
                if rng.random() < 0.5:
                    o[k] = r[k]
            elif what == 3:
                o[k] = [np.inf, -np.inf][int(rng.integers(2))]
            elif what == 4:
                o[k] = o[k] * 2 + 1
            else:
                o[:] = 0
        tol = tols[trial % len(tols)]
        with np.errstate(all="ignore"):
            slow = check.compare(o, r, tol=tol, dtype=dt, native=False)
            fast = check.compare(o, r, tol=tol, dtype=dt)
        _same_outcome(fast, slow, trial)


def test_native_check_can_be_turned_off(monkeypatch):
    monkeypatch.setattr(check, "_native_state", {})
    monkeypatch.setenv("CUDAPERF_NATIVE_CHECK", "0")
    assert check.native_check() is None
    r = check.compare(np.zeros(4, np.float32), np.ones(4), tol={"atol": 1e-5, "rtol": 1e-5}, dtype=np.float32)
    assert not r.ok and r.n_bad == 4
