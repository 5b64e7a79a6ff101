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

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

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


def compare(out: np.ndarray, ref: np.ndarray, *, tol: dict, dtype: Any) -> CheckOutcome:
    """Check `out` (the candidate's, in `dtype`) against `ref` (possibly float64) -- see module doc."""
    dt = np.dtype(dtype)
    out = np.asarray(out).reshape(-1)
    ref = np.asarray(ref).reshape(-1)
    unwritten = count_poison(out, dt) if out.dtype == dt else 0
    if out.size != ref.size:
        return CheckOutcome(False, float("inf"), float("inf"), float("inf"), max(out.size, ref.size),
                            0, int(np.count_nonzero(np.isnan(out))) if out.dtype.kind == "f" else 0, unwritten)
    if dt.kind != "f":
        o = out.astype(dt)
        r = ref.astype(dt)
        bad = o != r
        diff = np.abs(o.astype(np.float64) - r.astype(np.float64))
        n_bad = int(np.count_nonzero(bad))
        max_abs = float(diff.max()) if diff.size else 0.0
        denom = np.maximum(np.abs(r.astype(np.float64)), 1.0)
        max_rel = float((diff / denom).max()) if diff.size else 0.0
        rn = float(np.linalg.norm(r.astype(np.float64)))
        l2 = float(np.linalg.norm(diff)) / rn if rn > 0 else (0.0 if n_bad == 0 else float("inf"))
        return CheckOutcome(n_bad == 0, max_abs, max_rel, l2, n_bad, int(np.argmax(bad)) if n_bad else None, 0,
                            unwritten)
    o = out.astype(np.float64)
    r = ref.astype(np.float64)
    n_nan = int(np.count_nonzero(np.isnan(o)))
    fin_r = np.isfinite(r)
    fin_o = np.isfinite(o)
    both = fin_r & fin_o
    # non-finite reference: the output must be the same NaN/inf
    bad = (fin_r & ~fin_o) | (~fin_r & ~((np.isnan(r) & np.isnan(o)) | (r == o)))
    rf = np.where(fin_r, r, 0.0)
    scale = max(float(np.max(np.abs(rf))) if rf.size else 0.0, float(np.finfo(dt).tiny))
    d = np.where(both, np.abs(o - rf), 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        bad |= both & (d > tol.get("atol", 0.0) * scale + tol.get("rtol", 0.0) * np.abs(rf))
    any_nonfinite_bad = bool(np.any(bad & ~both))
    max_abs = float("inf") if any_nonfinite_bad else (float(d.max()) if d.size else 0.0)
    rel_den = np.maximum(np.abs(rf), 1e-6 * scale)  # relative to the element, floored by the magnitude
    max_rel = float("inf") if any_nonfinite_bad else (float((d / rel_den).max()) if d.size else 0.0)
    rn = float(np.linalg.norm(rf[both])) if both.any() else 0.0
    dn = float(np.linalg.norm(d))
    l2 = float("inf") if any_nonfinite_bad else (dn / rn if rn > 0 else (0.0 if dn == 0 else float("inf")))
    l2_ok = rn == 0 or l2 <= tol.get("l2", float("inf"))
    n_bad = int(np.count_nonzero(bad))
    ok = n_bad == 0 and l2_ok
    first = int(np.argmax(bad)) if n_bad else None
    return CheckOutcome(ok, max_abs, max_rel, l2, n_bad, first, n_nan, unwritten)
