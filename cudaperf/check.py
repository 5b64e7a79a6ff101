"""Output checks: candidate output against the reference, and poison for unwritten elements.

Guarantees of `compare`:

* integer and bool outputs must match exactly;
* float outputs: where the reference is finite the output must be finite, and every element
  must satisfy ``|out - ref| <= atol * max(max|ref|, tiny) + rtol * |ref|`` -- atol is relative
  to the reference's magnitude, so an all-zero output cannot pass a small-but-nonzero
  reference, while an all-zero reference is matched by zeros; in addition
  ``||out - ref||_2 / ||ref||_2 <= l2`` when ``||ref|| > 0``; where the reference is NaN/inf
  the output must be the same non-finite value;
* a size mismatch fails (every element counts as bad).

`POISON` holds, per dtype, the value the harness writes into output buffers before a run; for
floats it is a NaN with a distinctive payload, so `count_poison` tells elements the kernel never
wrote from NaNs it computed.
"""
from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import subprocess
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

_POISON_BITS = {1: 0xAD, 2: 0x7EAD, 4: 0x7FC0DEAD, 8: 0x7FF8DEAD7FC0DEAD}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def poison_value(dtype: Any) -> np.generic:
    """The poison scalar of `dtype` (bit pattern 0x7fc0dead and its relatives)."""
    dt = np.dtype(dtype)
    bits = np.array([_POISON_BITS[dt.itemsize]], dtype=_UINT[dt.itemsize])
    return bits.view(dt)[0]


POISON: dict[np.dtype, np.generic] = {np.dtype(t): poison_value(t) for t in (
    np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
    np.bool_)}


def poison_bytes(dtype: Any) -> bytes:
    """One poison element as raw bytes (native byte order), for fill patterns on the device."""
    dt = np.dtype(dtype)
    return np.array([_POISON_BITS[dt.itemsize]], dtype=_UINT[dt.itemsize]).tobytes()


def poison_array(numel: int, dtype: Any) -> np.ndarray:
    """A buffer of `numel` poison values (copy it to the device before each run)."""
    dt = np.dtype(dtype)
    return np.full(numel, _POISON_BITS[dt.itemsize], dtype=_UINT[dt.itemsize]).view(dt)


def count_poison(out: np.ndarray, dtype: Any) -> int:
    """Elements of `out` that still hold the poison bit pattern (never written)."""
    dt = np.dtype(dtype)
    raw = np.ascontiguousarray(np.asarray(out, dtype=dt)).reshape(-1).view(_UINT[dt.itemsize])
    return int(np.count_nonzero(raw == _POISON_BITS[dt.itemsize]))


@dataclass
class CheckOutcome:
    ok: bool
    max_abs_err: float
    max_rel_err: float
    l2_rel: float
    n_bad: int
    first_bad: int | None
    n_nan: int
    unwritten: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """One line for feedback to the policy and for result records."""
        if self.ok:
            return f"ok (max abs err {self.max_abs_err:.3g}, l2 rel {self.l2_rel:.3g})"
        parts = [f"{self.n_bad} wrong element(s)"]
        if self.first_bad is not None:
            parts.append(f"first at index {self.first_bad}")
        parts.append(f"max abs err {self.max_abs_err:.3g}, max rel err {self.max_rel_err:.3g}, "
                     f"l2 rel {self.l2_rel:.3g}")
        if self.n_nan:
            parts.append(f"{self.n_nan} NaN")
        if self.unwritten:
            parts.append(f"{self.unwritten} never written")
        return "; ".join(parts)


# Elements per pass: memory stays flat (a few 32 MB temporaries) while each numpy call is long
# enough that a harness thread gives up the interpreter lock rarely -- with a dozen busy threads
# every hand-back can wait milliseconds for its turn.
CHUNK = 1 << 22


class _CResult(ctypes.Structure):
    _fields_ = [("n_bad", ctypes.c_int64), ("first_bad", ctypes.c_int64), ("n_nan", ctypes.c_int64),
                ("unwritten", ctypes.c_int64), ("max_abs", ctypes.c_double), ("max_rel", ctypes.c_double),
                ("ss_d", ctypes.c_double), ("ss_r", ctypes.c_double), ("scale", ctypes.c_double),
                ("nonfinite_bad", ctypes.c_int64)]


_NATIVE_SRC = Path(__file__).with_name("check_native.c")
_native_lock = threading.Lock()
_native_state: dict[str, Any] = {}


def native_check() -> Any:
    """The one-pass float check (check_native.c, built once with gcc into this user's private
    build dir), or None: no compiler, a failed build, or CUDAPERF_NATIVE_CHECK=0. `compare` then
    uses the numpy path, which gives the same outcome, only slower."""
    if os.environ.get("CUDAPERF_NATIVE_CHECK", "1") == "0":
        return None
    with _native_lock:
        if "fn" in _native_state:
            return _native_state["fn"]
        fn = None
        try:
            from cudaperf.sandbox import cached_build, private_dir

            digest = hashlib.sha256(_NATIVE_SRC.read_bytes()).hexdigest()[:16]
            so = cached_build(private_dir() / digest / "check_native.so",
                              lambda tmp: ["gcc", "-O3", "-ffp-contract=off", "-shared", "-fPIC", "-o", str(tmp),
                                           str(_NATIVE_SRC), "-lm"], "the native output check", 120)
            fn = ctypes.CDLL(str(so)).cudaperf_check_float  # CDLL: the interpreter lock is released
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int64,
                           ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.POINTER(_CResult)]
        except (OSError, RuntimeError, subprocess.SubprocessError) as e:
            log.warning("native output check unavailable, using numpy: %s", str(e)[-300:])
        _native_state["fn"] = fn
        return fn


def _compare_native(fn: Any, out: np.ndarray, ref: np.ndarray, dt: np.dtype, tol: dict) -> CheckOutcome | None:
    """`compare` for float outputs in one C pass; None when the arrays do not suit it."""
    if out.dtype != dt or ref.dtype not in (np.float32, np.float64) or dt.byteorder not in "=|" \
            or ref.dtype.byteorder not in "=|":
        return None
    out = np.ascontiguousarray(out)
    ref = np.ascontiguousarray(ref)
    res = _CResult()
    atol, rtol = float(tol.get("atol", 0.0)), float(tol.get("rtol", 0.0))
    if fn(out.ctypes.data, out.itemsize, ref.ctypes.data, ref.itemsize, out.size, atol, rtol,
          float(np.finfo(dt).tiny), ctypes.byref(res)) != 0:
        return None
    first = int(res.first_bad) if res.first_bad >= 0 else None
    max_abs, max_rel = res.max_abs, res.max_rel
    rn, dn = float(np.sqrt(res.ss_r)), float(np.sqrt(res.ss_d))
    if res.nonfinite_bad:
        max_abs = max_rel = l2 = float("inf")
    else:
        l2 = dn / rn if rn > 0 else (0.0 if dn == 0 else float("inf"))
    ok = res.n_bad == 0 and (rn == 0 or l2 <= tol.get("l2", float("inf")))
    return CheckOutcome(bool(ok), float(max_abs), float(max_rel), float(l2), int(res.n_bad), first,
                        int(res.n_nan), int(res.unwritten))


def compare(out: np.ndarray, ref: np.ndarray, *, tol: dict, dtype: Any, native: bool = True) -> CheckOutcome:
    """Check `out` (the candidate's, in `dtype`) against `ref` (possibly float64) -- see module doc.

    Works in chunks of `CHUNK` elements (outputs reach hundreds of MB at the perf sizes); the
    result is the same as one pass over the whole arrays.
    """
    dt = np.dtype(dtype)
    out = np.asarray(out).reshape(-1)
    ref = np.asarray(ref).reshape(-1)
    if native and dt.kind == "f" and out.size and out.size == ref.size:
        fn = native_check()
        got = _compare_native(fn, out, ref, dt, tol) if fn is not None else None
        if got is not None:  # the poison count included: no numpy pass over the output at all
            return got
    unwritten = count_poison(out, dt) if out.dtype == dt else 0
    if out.size != ref.size:
        return CheckOutcome(False, float("inf"), float("inf"), float("inf"), max(out.size, ref.size),
                            0, int(np.count_nonzero(np.isnan(out))) if out.dtype.kind == "f" else 0, unwritten)
    n = out.size
    n_bad, first, max_abs, max_rel, ss_d, ss_r = 0, None, 0.0, 0.0, 0.0, 0.0
    if dt.kind != "f":
        # Exact match required; error sizes are only needed (second pass) when something differs.
        for i in range(0, n, CHUNK):
            bad = out[i:i + CHUNK].astype(dt, copy=False) != ref[i:i + CHUNK].astype(dt, copy=False)
            nb = int(np.count_nonzero(bad))
            if nb and first is None:
                first = i + int(np.argmax(bad))
            n_bad += nb
        if n_bad == 0:
            return CheckOutcome(True, 0.0, 0.0, 0.0, 0, None, 0, unwritten)
        for i in range(0, n, CHUNK):
            r64 = ref[i:i + CHUNK].astype(dt, copy=False).astype(np.float64)
            diff = np.abs(out[i:i + CHUNK].astype(dt, copy=False).astype(np.float64) - r64)
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float((diff / np.maximum(np.abs(r64), 1.0)).max()))
            ss_d += float(np.dot(diff, diff))
            ss_r += float(np.dot(r64, r64))
        rn = float(np.sqrt(ss_r))
        l2 = float(np.sqrt(ss_d)) / rn if rn > 0 else float("inf")
        return CheckOutcome(False, max_abs, max_rel, l2, n_bad, first, 0, unwritten)
    # The magnitude every atol is relative to: the largest finite |ref| (one pass first).
    scale = 0.0
    for i in range(0, n, CHUNK):
        r = ref[i:i + CHUNK]
        fin = np.isfinite(r)
        if fin.all():
            scale = max(scale, float(np.max(np.abs(r))))
        elif fin.any():
            scale = max(scale, float(np.max(np.abs(r[fin]))))
    scale = max(scale, float(np.finfo(dt).tiny))
    atol, rtol = tol.get("atol", 0.0), tol.get("rtol", 0.0)
    n_nan, any_nonfinite_bad = 0, False
    for i in range(0, n, CHUNK):
        o = out[i:i + CHUNK].astype(np.float64)
        r = ref[i:i + CHUNK].astype(np.float64)
        fin_r = np.isfinite(r)
        fin_o = np.isfinite(o)
        n_nan += int(np.count_nonzero(np.isnan(o)))
        if fin_r.all() and fin_o.all():  # the common case: no masks needed
            d = np.abs(o - r)
            ar = np.abs(r)
            bad = d > atol * scale + rtol * ar
            ss_r += float(np.dot(r, r))
        else:
            both = fin_r & fin_o
            # non-finite reference: the output must be the same NaN/inf
            bad = (fin_r & ~fin_o) | (~fin_r & ~((np.isnan(r) & np.isnan(o)) | (r == o)))
            rf = np.where(fin_r, r, 0.0)
            d = np.where(both, np.abs(o - rf), 0.0)
            ar = np.abs(rf)
            with np.errstate(invalid="ignore", over="ignore"):
                bad |= both & (d > atol * scale + rtol * ar)
            any_nonfinite_bad = any_nonfinite_bad or bool(np.any(bad & ~both))
            rb = rf[both]
            ss_r += float(np.dot(rb, rb))
        nb = int(np.count_nonzero(bad))
        if nb and first is None:
            first = i + int(np.argmax(bad))
        n_bad += nb
        if d.size:
            max_abs = max(max_abs, float(d.max()))
            # relative to the element, floored by the magnitude
            max_rel = max(max_rel, float((d / np.maximum(ar, 1e-6 * scale)).max()))
        ss_d += float(np.dot(d, d))
    if any_nonfinite_bad:
        max_abs = max_rel = l2 = float("inf")
    else:
        rn, dn = float(np.sqrt(ss_r)), float(np.sqrt(ss_d))
        l2 = dn / rn if rn > 0 else (0.0 if dn == 0 else float("inf"))
    rn = float(np.sqrt(ss_r))
    l2_ok = rn == 0 or l2 <= tol.get("l2", float("inf"))
    ok = n_bad == 0 and l2_ok
    return CheckOutcome(ok, max_abs, max_rel, l2, n_bad, first, n_nan, unwritten)
