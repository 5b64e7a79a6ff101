"""Small shared helpers for the stencil/conv/image/physics family generators.

Guarantees: every helper is pure string/dict building (no I/O, no randomness of its own), so a
family's output depends only on the `random.Random` it is given. `record` returns a plain dict in
the layout of `cudaperf.tasks` (validated later by `task_from_dict`), `TYPES` maps a C element
type to the literal formatting and math-function names that CUDA code for that type must use.
The leading underscore keeps this module out of the family registry.
"""
from __future__ import annotations

HDR = "#include <cuda_runtime.h>\n"
SM_COUNT = 132  # H200; only used to cap grid-stride grids, any value is correct


class Ty:
    """A C element type as seen by generated code."""

    def __init__(self, name: str, tag: str, is_float: bool, fsuffix: str, vec: str, vw: int):
        self.name, self.tag, self.is_float, self.fsuffix = name, tag, is_float, fsuffix
        self.vec, self.vw = vec, vw  # 16-byte vector type and its width

    def lit(self, v) -> str:
        """A constant of this type as CUDA/C source (0.25f, 0.25, 3)."""
        if not self.is_float:
            return str(int(v))
        s = repr(float(v))
        if "e" not in s and "." not in s:
            s += ".0"
        return s + ("f" if self.name == "float" else "")

    def fn(self, name: str) -> str:
        """CUDA math function for this type: fn('sqrt') -> sqrtf for float."""
        return name + self.fsuffix

    @property
    def zero(self) -> str:
        return self.lit(0)


TYPES = {
    "float": Ty("float", "f32", True, "f", "float4", 4),
    "double": Ty("double", "f64", True, "", "double2", 2),
    "int": Ty("int", "i32", False, "", "int4", 4),
}

FLOAT_TOL = {"rtol": 2e-3, "atol": 2e-4, "l2": 2e-3}


from cudaperf.families._kernelgen import P  # noqa: E402,F401 - one parameter-record helper for all kits


def T(name: str, sizes: dict, perf: bool = False, scalars: dict | None = None) -> dict:
    d = {"name": name, "sizes": dict(sizes), "perf": perf}
    if scalars:
        d["scalars"] = dict(scalars)
    return d


def V(name: str, strategy: str, src: str) -> dict:
    return {"name": name, "strategy": strategy, "source": HDR + src.lstrip("\n")}


def cparams(sig: list[dict]) -> str:
    """The C parameter list of a signature: 'int n, const float *x, float *y'."""
    out = []
    for p in sig:
        ct = p["ctype"]
        out.append(f"{ct[:-1].rstrip()} *{p['name']}" if ct.endswith("*") else f"{ct} {p['name']}")
    return ", ".join(out)


def cargs(sig: list[dict]) -> str:
    return ", ".join(p["name"] for p in sig)


def record(family: str, slug: str, entry: str, sig: list[dict], reference: str,
           variants: list[dict], tests: list[dict], knobs: dict, *, flops: str | None = None,
           tolerance: dict | None = None, min_bytes: str | None = None,
           extra_meta: dict | None = None) -> dict:
    meta = {"source": "generated", "knobs": dict(knobs)}
    if flops:
        meta["flops"] = flops
    if min_bytes:
        meta["min_bytes"] = min_bytes
    if extra_meta:
        meta.update(extra_meta)
    rec = {"task_id": f"c2cuda/{family}/{slug}", "track": "c2cuda", "family": family,
           "entry": entry, "signature": sig, "reference": reference.strip() + "\n",
           "variants": variants, "tests": tests, "meta": meta}
    if tolerance:
        rec["tolerance"] = dict(tolerance)
    return rec


def blocks(expr: str, bs: int = 256) -> str:
    """Grid size expression for `expr` work items (C source, 64-bit safe)."""
    return f"(unsigned)(((long long)({expr}) + {bs - 1}) / {bs})"


def capped_blocks(expr: str, bs: int, per_sm: int = 16) -> str:
    """Grid size for a grid-stride loop: enough blocks for `expr` items, at most per_sm per SM."""
    nb = f"(((long long)({expr}) + {bs - 1}) / {bs})"
    cap = SM_COUNT * per_sm
    return f"(unsigned)({nb} < {cap} ? {nb} : {cap})"
