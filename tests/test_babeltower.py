"""BabelTower import: conversion of the sample's unit cases, the C references reproduce the
printed outputs on the given inputs, the naive variant follows the candidate contract and
compiles, and the parser rejects what the contract cannot express. Skipped without the sample
(../shared/data relative to the repo root, or /work/shared/data)."""
from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cudaperf import babeltower as B
from cudaperf.inputs import make_inputs

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = [ROOT.parent / "shared/data/babeltower/unit_cases_sample.jsonl",
              Path("/work/shared/data/babeltower/unit_cases_sample.jsonl")]
SAMPLE = next((p for p in CANDIDATES if p.is_file()), None)
needs_sample = pytest.mark.skipif(SAMPLE is None, reason="BabelTower sample not present")

# What the sample's 24 cases must give: 21 convert; these 3 cannot be expressed (see reasons).
EXPECTED_REJECTED = {0: "depends on buffer contents", 7: "allocates 64", 14: "launches no kernel"}


@functools.lru_cache(maxsize=1)
def converted():
    rep = B.ConversionReport()
    return B.load_babeltower(SAMPLE, report=rep), rep


@needs_sample
def test_sample_conversion_counts_and_reasons():
    tasks, rep = converted()
    assert rep.cases == 24 and len(tasks) == 21 == len(rep.converted)
    got = {r["index"]: r["reason"] for r in rep.rejected}
    assert set(got) == set(EXPECTED_REJECTED)
    for i, frag in EXPECTED_REJECTED.items():
        assert frag in got[i], got[i]
    # a case within a kept task whose arrays are shorter than its sizes imply is dropped, not patched
    assert any(d["index"] == 16 and d["test"] == "case3" for d in rep.dropped_cases)


@needs_sample
def test_roles_shapes_and_tests():
    tasks = {t.entry: t for t in converted()[0]}  # vectorAdd occurs twice; it is not looked at
    mm = tasks["cpu_matrix_mul"]
    assert {p.name: (p.role, p.shape) for p in mm.signature} == {
        "a": ("in", "N * N"), "b": ("in", "N * N"), "c": ("out", "N * N"), "N": ("size", None)}
    mean = tasks["getMeanImage_cpu"]
    assert {p.name: p.role for p in mean.signature}["meanImage"] == "inout"  # = then +=
    pw = {p.name: p for p in tasks["pow_cpu"].signature}
    assert pw["INCX"].role == "scalar" and pw["INCX"].value == 1          # same in every case
    assert pw["ALPHA"].role == "scalar" and pw["ALPHA"].value is None     # varies: per test
    assert [t.scalars["ALPHA"] for t in tasks["pow_cpu"].tests[:5]] == [2.0, 0.0, 8.0, 1.0, 3.0]
    off = {p.name: p for p in tasks["setOffset_cpu"].signature}
    assert off["offset"].role == "out" and off["offset"].shape.replace(" ", "") == "(batchSize+1)"
    for t in tasks.values():
        assert t.split == "test" and t.family == "babeltower" and [v.name for v in t.variants] == ["naive"]
        large = t.tests[-1]
        assert large.name == "large" and large.perf and t.perf_test is large
        assert t.numel_total(large) <= B.LARGE_ELEMS
        assert t.numel_total(large) > max(t.numel_total(x) for x in t.tests[:-1])
        make_inputs(t, large, 0)  # the generated test's inputs can be drawn


@needs_sample
def test_fixed_inputs_are_the_given_values():
    t = next(t for t in converted()[0] if t.entry == "cpu_matrix_mul")
    x = B.fixed_inputs(t, "case1")
    assert x["N"] == 3 and x["N"].dtype == np.int32
    assert x["a"].tolist() == list(range(1, 10)) and x["b"].dtype == np.int32
    assert "c" not in x  # outputs are not inputs
    with pytest.raises(KeyError):
        B.fixed_inputs(t, "large")
    sig = next(t for t in converted()[0] if t.entry == "sigmoid_kernel")
    vals = [B.fixed_inputs(sig, c.name)["input"] for c in sig.tests if c.name != "large"]
    assert any(v.size and v[0] == -np.finfo(np.float32).max for v in vals)  # -FLT_MAX survives


@needs_sample
@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_references_reproduce_the_printed_outputs(tmp_path):
    n_checked = 0
    for t in converted()[0]:
        for x in t.tests:
            if x.name == "large":
                continue
            out = B.reference_outputs_fixed(t, x, cache_dir=tmp_path)
            assert B.check_expected(t, x, out) == [], f"{t.task_id} {x.name}"
            n_checked += 1
    assert n_checked >= 90
    # and the comparison can fail: a perturbed output is caught
    t = converted()[0][0]
    out = B.reference_outputs_fixed(t, t.tests[0], cache_dir=tmp_path)
    bad = {k: np.asarray(v) + 1 for k, v in out.items()}
    assert B.check_expected(t, t.tests[0], bad)


@needs_sample
def test_naive_variant_follows_the_candidate_contract():
    for t in converted()[0]:
        src = t.variants[0].source
        assert re.search(rf'extern "C"\s+void\s+{re.escape(t.entry)}\s*\(', src), t.task_id
        assert "<<<" in src
        for bad in ("cudaMalloc", "cudaMemcpy", "cudaFree", "malloc", "memcpy", "new ", "delete"):
            assert bad not in src.split('extern "C"')[1], f"{t.task_id}: {bad} left in the entry"


@needs_sample
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("entry", ["LreluForward", "pow_cpu", "cpu_cross_correlate"])
def test_naive_variant_compiles(entry, tmp_path):
    # a name clash (kernel named like the entry), a dim3 named blockDim, a 2-D launch
    t = next(t for t in converted()[0] if t.entry == entry)
    (tmp_path / "v.cu").write_text(t.variants[0].source)
    r = subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-O3", "v.cu", "-o", "v.so"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]


def _case(**over):
    rec = {
        "cpp_code": "void scale_cpu ( float * x , float * y , float a , int n ) "
                    "{ for ( int i = 0 ; i < n ; i ++ ) y [ i ] = a * x [ i ] ; }",
        "cuda_code": "__global__ void scale ( float * x , float * y , float a , int n ) "
                     "{ int i = blockIdx . x * blockDim . x + threadIdx . x ; if ( i < n ) y [ i ] = a * x [ i ] ; }",
        "cuda_wrapper": "void scale_invoke(float* x, float* y, float a, int n) {\n float *d_x, *d_y;\n"
                        " cudaMalloc((void**)&d_x, n * sizeof(float));\n cudaMalloc((void**)&d_y, n * sizeof(float));\n"
                        " cudaMemcpy(d_x, x, n * sizeof(float), cudaMemcpyHostToDevice);\n"
                        " scale<<<(n + 255) / 256, 256>>>(d_x, d_y, a, n);\n"
                        " cudaMemcpy(y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost);\n cudaFree(d_x); cudaFree(d_y);\n}",
        "consistent_cpp_inputs": ["float x1[] = {1.0f, -2.0f, 3.5f};\nfloat y1[3];\nwrapper(scale_cpu, x1, y1, 2.0f, 3);",
                                  "float x2[] = {FLT_MAX};\nfloat y2[1];\nwrapper(scale_cpu, x2, y2, 0.5f, 1);"],
        "consistent_outputs": ["Return value: void\nArguments after function call: ([ 1, -2, 3.5 ], [ 2, -4, 7 ], 2, 3)\n",
                               "Return value: void\nArguments after function call: ([ 3.40282e+38 ], [ 1.70141e+38 ], 0.5, 1)\n"],
    }
    rec.update(over)
    return rec


def test_synthetic_case_converts():
    t = B.convert_case(_case(), 7)
    assert t.task_id == "babeltower/0007_scale_cpu"
    assert {p.name: p.role for p in t.signature} == {"x": "in", "y": "out", "a": "scalar", "n": "size"}
    assert [x.name for x in t.tests] == ["case1", "case2", "large"] and t.tests[1].scalars == {"a": 0.5}
    assert t.meta["expected_outputs"]["case1"] == {"y": [2.0, -4.0, 7.0]}
    assert "scale<<<(n+255)/256,256>>>(x,y,a,n);" in t.variants[0].source.replace(" ", "")
    assert "d_x" not in t.variants[0].source


@pytest.mark.parametrize("change, reason", [
    ({"cuda_wrapper": "void w(float* x, float* y, float a, int n) { for (int i = 0; i < n; i++) y[i] = a * x[i]; }"},
     "launches no kernel"),
    ({"consistent_cpp_inputs": ["float x1[] = {1.0f};\nfloat y1[1];\nwrapper(scale_cpu, x1, y1, 2.0f, 3);"],
      "consistent_outputs": ["Arguments after function call: ([ 1 ], [ 2 ], 2, 3)"]}, "allocates 3"),
    ({"consistent_cpp_inputs": ["float x1[] = {(float)rand()};\nfloat y1[1];\nwrapper(scale_cpu, x1, y1, 2.0f, 1);"],
      "consistent_outputs": ["Arguments after function call: ([ 1 ], [ 2 ], 2, 1)"]}, "cannot evaluate"),
    ({"cpp_code": "float scale_cpu ( float * x , int n ) { return x [ 0 ] ; }"}, "returns"),
])
def test_inexpressible_cases_are_rejected_with_a_reason(change, reason):
    with pytest.raises(B.ConversionError, match=reason):
        B.convert_case(_case(**change), 0)


def test_host_reads_of_buffers_are_rejected():
    wrapper = _case()["cuda_wrapper"].replace("scale<<<(n + 255) / 256, 256>>>", "scale<<<(int)x[0], 256>>>")
    with pytest.raises(B.ConversionError, match="reads buffer x on the host"):
        B.convert_case(_case(cuda_wrapper=wrapper), 0)


def test_nothing_is_written(tmp_path):
    p = tmp_path / "cases.jsonl"
    p.write_text(json.dumps(_case()) + "\n")
    before = sorted(tmp_path.iterdir())
    tasks = B.load_babeltower(p)
    assert len(tasks) == 1 and sorted(tmp_path.iterdir()) == before


@needs_sample
@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_babeltower_eval_report_counts_and_copies_no_data(tmp_path):
    """benchmarks/babeltower_eval.py on the first three cases, CPU part only: counts, reasons, and
    nothing of the cases' code or values in the report."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("babeltower_eval", ROOT / "benchmarks/babeltower_eval.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    lines = SAMPLE.read_text().splitlines()[:3]
    src = tmp_path / "three.jsonl"
    src.write_text("\n".join(lines) + "\n")
    assert mod.main(["--data", str(src), "--out", str(tmp_path / "out"), "--no-gpu"]) == 0
    rep = json.loads((tmp_path / "out" / "babeltower_cpu.json").read_text())
    assert rep["cases"] == 3 and rep["converted"] == 2 and [r["index"] for r in rep["rejected"]] == [0]
    assert rep["reference_agrees"] == 2 and rep["kernel"] is None
    text = json.dumps(rep)
    for rec in map(json.loads, lines):
        assert rec["cuda_code"][:80] not in text and rec["cpp_code"][:80] not in text
    assert mod.main(["--data", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)]) == 2
