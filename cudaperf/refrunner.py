"""Subprocess entry point that runs a task's serial C reference: ``python -m cudaperf.refrunner SPEC``.

Runs inside `sandbox.run_limited` (the reference is compiled task data, so it gets the same
limits as any untrusted code). Protocol, all files in the scratch dir:
``SPEC`` (JSON: library path, entry, and for each parameter in call order its name, role,
numpy dtype, whether it is a pointer, and for outputs the element count), ``inputs.npz``
(sizes/scalars as 0-d arrays, in/inout buffers, already converted to the reference's
precision) -> ``outputs.npz`` (every out/inout buffer after the call). Exit 0 only when the
call returned and the outputs were written; any failure exits non-zero with a message on stderr.
"""
from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

import numpy as np

_SCALAR_CTYPES = {
    "float32": ctypes.c_float, "float64": ctypes.c_double, "int8": ctypes.c_int8, "uint8": ctypes.c_uint8,
    "int16": ctypes.c_int16, "uint16": ctypes.c_uint16, "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64, "uint64": ctypes.c_uint64, "bool": ctypes.c_bool,
}


def run(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    work = Path(spec_path).parent
    lib = ctypes.CDLL(spec["library"])
    fn = getattr(lib, spec["entry"])
    fn.restype = None
    with np.load(work / "inputs.npz", allow_pickle=False) as f:
        given = {k: f[k] for k in f.files}
    args, argtypes, outputs, keep = [], [], {}, []
    for p in spec["params"]:
        dt = np.dtype(p["dtype"])
        if p["pointer"]:
            if p["role"] == "out":
                arr = np.zeros(int(p["numel"]), dtype=dt)  # zero-initialised, like calloc
            else:
                arr = np.ascontiguousarray(given[p["name"]], dtype=dt).copy()
            if p["role"] in ("out", "inout"):
                outputs[p["name"]] = arr
            if not arr.size:  # never hand out NULL for an empty buffer: C may form base pointers
                arr = np.zeros(1, dt)
            keep.append(arr)
            args.append(ctypes.c_void_p(arr.ctypes.data))
            argtypes.append(ctypes.c_void_p)
        else:
            ct = _SCALAR_CTYPES[dt.name]
            args.append(ct(given[p["name"]].item()))
            argtypes.append(ct)
    fn.argtypes = argtypes
    fn(*args)
    np.savez(work / "outputs.npz", **outputs)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m cudaperf.refrunner SPEC.json", file=sys.stderr)
        return 2
    run(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
