"""nvcc wrapper: real builds of the dev tasks, ptxas parsing, cache, batching, compiler bombs."""
from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from cudaperf import compile as cc
from cudaperf.devtasks import dev_tasks

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")

# Real `-Xptxas -v` output of CUDA 13.0 (sm_90): a templated kernel in a namespace with a
# local array, a kernel with static shared memory, and a spilling kernel plus a device function.
PTXAS_CUDA13 = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_ZN3v_x2k2ILi300EEEvPf' for 'sm_90'
ptxas info    : Function properties for _ZN3v_x2k2ILi300EEEvPf
    1200 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 1200 bytes cumulative stack size
ptxas info    : Compile time = 59.246 ms
ptxas info    : Compiling entry function '_ZN3v_x2k1EiPf' for 'sm_90'
ptxas info    : Function properties for _ZN3v_x2k1EiPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem
ptxas info    : Compile time = 2.065 ms
ptxas info    : Overriding maximum register limit 256 for '_Z3bigPf' with  32 of maxrregcount option
ptxas info    : Compiling entry function '_Z3bigPf' for 'sm_90'
ptxas info    : Function properties for _Z3bigPf
    7440 bytes stack frame, 7288 bytes spill stores, 16448 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 7440 bytes cumulative stack size
ptxas info    : Compile time = 783.958 ms
ptxas info    : Function properties for _Z6helperPfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""

# The CUDA <= 12 summary line carries constant memory banks as well.
PTXAS_CUDA12 = """\
ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_80'
ptxas info    : Function properties for _Z6kernelPf
    16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 40 registers, 4096 bytes smem, 360 bytes cmem[0], 8 bytes cmem[2]
"""


def test_parse_ptxas_cuda13():
    r = cc.parse_ptxas(PTXAS_CUDA13)
    assert set(r) == {"void v_x::k2<300>(float*)", "v_x::k1(int, float*)", "big(float*)"}  # no helper
    k2 = r["void v_x::k2<300>(float*)"]
    assert (k2["registers"], k2["stack"], k2["smem_static"], k2["spill_stores"]) == (32, 1200, 0, 0)
    k1 = r["v_x::k1(int, float*)"]
    assert (k1["registers"], k1["smem_static"], k1["barriers"], k1["cmem"]) == (10, 256, 1, 0)
    big = r["big(float*)"]
    assert (big["spill_stores"], big["spill_loads"], big["stack"]) == (7288, 16448, 7440)
    raw = cc.parse_ptxas(PTXAS_CUDA13, demangle=False)
    assert "_Z3bigPf" in raw and raw["_Z3bigPf"]["registers"] == 32


def test_parse_ptxas_cuda12_format():
    r = cc.parse_ptxas(PTXAS_CUDA12, demangle=False)
    assert r == {"_Z6kernelPf": {"registers": 40, "smem_static": 4096, "cmem": 368, "stack": 16,
                                 "spill_stores": 4, "spill_loads": 8, "barriers": 0}}
    assert cc.parse_ptxas("") == {}
    assert cc.kernel_base_name("void v_x::k2<300>(float*)") == "k2"
    assert cc.kernel_base_name("saxpy_kernel(int, float, float const*, float*)") == "saxpy_kernel"


def test_every_dev_variant_compiles(tmp_path):
    tasks = dev_tasks()
    srcs = [(t, v) for t in tasks for v in t.variants]
    res = cc.compile_many([v.source for _, v in srcs], jobs=2, cache_dir=tmp_path)
    for (t, v), r in zip(srcs, res):
        assert r.ok, f"{t.task_id}/{v.name}: {r.log[-2000:]}"
        assert not r.cached and r.resources, f"{t.task_id}/{v.name} has no ptxas resources"
        syms = subprocess.run(["nm", "-D", "--defined-only", r.so_path], capture_output=True, text=True).stdout
        assert f" T {t.entry}\n" in syms
        needed = subprocess.run(["readelf", "-d", r.so_path], capture_output=True, text=True).stdout
        assert "libcudart.so" in needed  # -cudart shared: the harness' runtime is shared
        assert all(k["registers"] > 0 for k in r.resources.values())
    by = {(t.task_id, v.name): r for (t, v), r in zip(srcs, res)}
    block = by[("dev/row_sum_f32", "block_per_row")].resources
    assert [k["smem_static"] for k in block.values()] == [1024]  # __shared__ float buf[256]


def test_cache_hit_and_cached_failure(tmp_path):
    src = dev_tasks()[0].variants[0].source
    a = cc.compile_candidate(src, cache_dir=tmp_path)
    t0 = time.monotonic()
    b = cc.compile_candidate(src, cache_dir=tmp_path)
    assert a.ok and b.ok and b.cached and not a.cached and time.monotonic() - t0 < 0.5
    assert b.key == a.key and b.so_path == a.so_path and b.resources == a.resources
    c = cc.compile_candidate(src, cache_dir=tmp_path, flags=("-O2",))
    assert c.key != a.key and not c.cached
    bad = "__global__ void k(float *x) { x[0] = undefined_thing; }\n"
    e1 = cc.compile_candidate(bad, cache_dir=tmp_path)
    e2 = cc.compile_candidate(bad, cache_dir=tmp_path)
    assert not e1.ok and e1.so_path is None and "undefined_thing" in e1.log
    assert e2.cached and not e2.ok and e2.log == e1.log


def test_rejects_oversized_and_empty(tmp_path):
    big = "// " + "x" * (cc.MAX_SOURCE_BYTES + 10) + "\n"
    r = cc.compile_candidate(big, cache_dir=tmp_path)
    assert not r.ok and "limit" in r.log and r.seconds < 0.5
    assert not cc.compile_candidate("   ", cache_dir=tmp_path).ok


@pytest.mark.parametrize("bomb", [
    '#include "/dev/zero"\n',
    "#define A(x) x x x x x x x x x x\n#define B(x) A(A(A(x)))\n#define C(x) B(B(B(x)))\nint v = C(1+) 0;\n",
    '#include "cand.cu"\n',
    '#include "/etc/shadow"\n',
])
def test_compile_bombs_fail_fast(tmp_path, bomb):
    t0 = time.monotonic()
    r = cc.compile_candidate(bomb, cache_dir=tmp_path, timeout_s=20, mem_limit_gb=2)
    assert not r.ok and r.so_path is None and time.monotonic() - t0 < 25
    assert "root:" not in r.log  # nothing of a private file leaks into the log


def test_timeout_is_reported_and_not_cached(tmp_path):
    src = dev_tasks()[1].variants[1].source
    r = cc.compile_candidate(src, cache_dir=tmp_path, timeout_s=0.3)
    assert r.timed_out and not r.ok and "timed out" in r.log
    assert not list((tmp_path / "compile").rglob("*.json"))


def test_compile_batch_all_variants_one_so(tmp_path):
    task = next(t for t in dev_tasks() if t.task_id == "dev/transpose_f32")  # uses #define TILE
    res, syms = cc.compile_batch({v.name: v.source for v in task.variants}, task.entry, cache_dir=tmp_path)
    assert res.ok, res.log[-3000:]
    assert set(syms) == {v.name for v in task.variants}
    assert len(set(syms.values())) == len(syms)
    out = subprocess.run(["nm", "-D", "--defined-only", res.so_path], capture_output=True, text=True).stdout
    exported = {ln.split()[-1] for ln in out.splitlines() if " T " in ln}
    assert set(syms.values()) <= exported
    assert len(res.resources) >= len(task.variants)  # every variant's kernels were built
    src, _ = cc.batch_source({v.name: v.source for v in task.variants}, task.entry)
    assert src.count("#include <cuda_runtime.h>") == 1 and "#undef TILE" in src


def test_detect_arch_and_toolchain():
    assert cc.detect_arch().startswith("sm_")
    tid = cc.toolchain_id()
    assert len(tid) == 16 and tid == cc.toolchain_id()
