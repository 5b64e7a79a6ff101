"""Contract tests over every C->CUDA family module (cudaperf.families.family_modules()).

Per family: enough tasks, every record valid, unique ids and distinct programs, deterministic
generation, the candidate contract in every variant (naive first, >= 3 variants, extern "C"
entry), the test contract (>= 3 tests with an edge case and a perf size whose buffers fit in
1.5 GB), and real toolchains: the C references of two tasks compile with gcc, and the naive
plus one optimised variant of one task compile with nvcc when nvcc is installed.
"""
from __future__ import annotations

import functools
import hashlib
import re
import shutil
import subprocess

import pytest

from cudaperf.families import family_modules, generate_family

FAMILIES = sorted(family_modules())
MIN_TASKS = 70
PERF_BYTES_MAX = 1.5e9
EDGE_ELEMS = 4096
C_PRELUDE = ("#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <stdlib.h>\n"
             "#include <string.h>\n#include <float.h>\n#include <limits.h>\n")


@functools.lru_cache(maxsize=None)
def tasks_of(family: str):
    return generate_family(family_modules()[family], seed=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_family_size_ids_and_distinct_programs(family):
    tasks = tasks_of(family)
    assert len(tasks) >= MIN_TASKS, f"{family}: {len(tasks)} tasks < {MIN_TASKS}"
    ids = [t.task_id for t in tasks]
    assert len(set(ids)) == len(ids), f"{family}: duplicate task ids"
    assert all(i.startswith(f"c2cuda/{family}/") for i in ids)
    refs = [t.reference for t in tasks]
    assert len(set(refs)) == len(refs), f"{family}: two tasks share the same reference program"
    mod = family_modules()[family]
    assert isinstance(getattr(mod, "CATEGORY", None), str) and mod.CATEGORY


@pytest.mark.parametrize("family", FAMILIES)
def test_family_generation_is_deterministic(family):
    a = [t.to_json() for t in tasks_of(family)]
    b = [t.to_json() for t in generate_family(family_modules()[family], seed=0)]
    assert a == b


@pytest.mark.parametrize("family", FAMILIES)
def test_variants_follow_candidate_contract(family):
    for t in tasks_of(family):
        names = [v.name for v in t.variants]
        assert len(names) >= 3, f"{t.task_id}: {names}"
        assert names[0] == "naive", f"{t.task_id}: naive must come first, got {names}"
        assert t.track == "c2cuda" and t.entry.isidentifier()
        assert re.search(rf"\b{re.escape(t.entry)}\s*\(", t.reference), f"{t.task_id}: reference lacks entry"
        for v in t.variants:
            assert 'extern "C"' in v.source, f"{t.task_id}/{v.name}: no extern \"C\""
            assert re.search(rf'extern "C"\s+void\s+{re.escape(t.entry)}\s*\(', v.source), \
                f"{t.task_id}/{v.name}: entry {t.entry} not defined"
            assert "cudaMemcpy(" not in v.source, f"{t.task_id}/{v.name}: host<->device copy"


@pytest.mark.parametrize("family", FAMILIES)
def test_tests_have_edge_odd_and_perf_that_fit(family):
    for t in tasks_of(family):
        assert len(t.tests) >= 3, t.task_id
        perf = [c for c in t.tests if c.perf]
        assert perf, f"{t.task_id}: no perf test"
        small = [c for c in t.tests if not c.perf]
        # edge case: size 1 or the smallest valid problem (a stencil needs its radius), i.e. tiny
        assert any(min(c.sizes.values(), default=1) <= 8 or t.numel_total(c) <= EDGE_ELEMS for c in small), \
            f"{t.task_id}: no edge-size test"
        for c in perf:
            nbytes = sum(t.numel(p, c) * p.dtype.itemsize for p in t.signature if p.is_pointer)
            assert nbytes <= PERF_BYTES_MAX, f"{t.task_id}: perf buffers {nbytes / 1e9:.2f} GB"
        # the perf size must dominate: it is where timing happens
        assert max(t.numel_total(c) for c in t.tests) == max(t.numel_total(c) for c in perf), t.task_id


def _pick(tasks, k):
    """A stable, family-dependent choice of k tasks (first, plus hashed others)."""
    out = [tasks[0]]
    for i in range(1, k):
        h = int(hashlib.sha256(f"{tasks[0].family}:{i}".encode()).hexdigest(), 16)
        out.append(tasks[h % len(tasks)])
    return out


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
@pytest.mark.parametrize("family", FAMILIES)
def test_references_compile_with_gcc(family, tmp_path):
    for i, t in enumerate(_pick(tasks_of(family), 2)):
        src = tmp_path / f"ref{i}.c"
        src.write_text(C_PRELUDE + t.reference)
        r = subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-Werror=implicit-function-declaration",
                            str(src), "-o", str(tmp_path / f"ref{i}.so"), "-lm"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"{t.task_id}: gcc failed\n{r.stderr[:2000]}"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("family", FAMILIES)
def test_variants_compile_with_nvcc(family, tmp_path):
    t = _pick(tasks_of(family), 2)[1]
    for v in (t.variants[0], t.variants[-1]):
        src = tmp_path / f"{v.name}.cu"
        src.write_text(v.source)
        r = subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", "-arch=sm_90",
                            "-O3", str(src), "-o", str(tmp_path / f"{v.name}.so")],
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, f"{t.task_id}/{v.name}: nvcc failed\n{r.stderr[:2000]}"
