"""Subprocess entry point that runs a task's serial C reference: ``python -m cudaperf.refrunner SPEC``.

Runs inside `sandbox.run_limited` (the reference is compiled task data, so it gets the same
limits as any untrusted code). Protocol, all files in the scratch dir:

* ``SPEC`` (JSON): library path, entry, and for each parameter in call order its name, role,
  reference dtype (numpy name), whether it is a pointer, for scalars their ``value``, for
  in/inout buffers the ``file_dtype`` of their input file, for outputs the element count;
* ``<name>.bin`` for every in/inout buffer: raw values in ``file_dtype``, the dtype they were
  generated in (the child converts to the reference dtype: a float32 buffer crosses at half the
  size of its double). The harness hard-links the very files its runners read;
* ``out_<name>.npy`` for every out/inout buffer, written by the child: each is created at its
  final size and memory-mapped, and the C code writes straight into it (no copy after the call).
  Out buffers start zeroed, like calloc; inout buffers start as their input.

Exit 0 only when the call returned and the outputs were flushed; any failure exits non-zero
with a message on stderr. Perf-size references are hundreds of MB: every copy avoided here is
time the harness does not wait for.
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


def _output(path: Path, dt: np.dtype, n: int, init: np.ndarray | None) -> np.ndarray:
    """An .npy file of n elements mapped into memory (plain zeros file when empty: nothing to map)."""
    if n == 0:
        np.save(path, np.zeros(0, dt))
        return np.zeros(0, dt)
    arr = np.lib.format.open_memmap(path, mode="w+", dtype=dt, shape=(n,))  # a new file reads as zeros
    if init is not None:
        arr[:] = init
    return arr


def _input(path: Path, dt: np.dtype) -> np.ndarray:
    """A raw input file, mapped read-only (an empty file cannot be mapped: an empty array)."""
    n = path.stat().st_size // dt.itemsize
    return np.memmap(path, dtype=dt, mode="r", shape=(n,)) if n else np.zeros(0, dt)


def run(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    work = Path(spec_path).parent
    lib = ctypes.CDLL(spec["library"])
    fn = getattr(lib, spec["entry"])
    fn.restype = None
    args, argtypes, keep, mapped = [], [], [], []
    for p in spec["params"]:
        dt = np.dtype(p["dtype"])
        if p["pointer"]:
            given = None
            if p["role"] in ("in", "inout"):
                given = _input(work / f"{p['name']}.bin", np.dtype(p["file_dtype"]))
            if p["role"] in ("out", "inout"):
                arr = _output(work / f"out_{p['name']}.npy", dt, int(p["numel"]), given)
                if isinstance(arr, np.memmap):
                    mapped.append(arr)
            else:
                arr = np.array(given, dtype=dt)  # a private, writable copy in the reference's precision
            if not arr.size:  # never hand out NULL for an empty buffer: C may form base pointers
                arr = np.zeros(1, dt)
            keep.append(arr)
            args.append(ctypes.c_void_p(arr.ctypes.data))
            argtypes.append(ctypes.c_void_p)
        else:
            ct = _SCALAR_CTYPES[dt.name]
            args.append(ct(dt.type(p["value"]).item()))
            argtypes.append(ct)
    fn.argtypes = argtypes
    fn(*args)
    for arr in mapped:
        arr.flush()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m cudaperf.refrunner SPEC.json", file=sys.stderr)
        return 2
    run(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
