"""Static features: each moves the right way on probe pairs and dev-task variants; hostile input."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cudaperf.devtasks import dev_tasks
from cudaperf.features import FEATURE_NAMES, LOOP_WEIGHT, main, phi_hat, static_features
from cudaperf.occupancy import occupancy

PROBES = Path(__file__).resolve().parents[1] / "cudaperf" / "probes"


def probe(name, **kw):
    return static_features((PROBES / f"{name}.cu").read_text(), **kw)


def task_variants():
    return {t.task_id.split("/")[1]: {v.name: v.source for v in t.variants} for t in dev_tasks()}


def wrap(body, params="int n, const float *x, float *y", launch="k<<<(n + 255) / 256, 256>>>(n, x, y);"):
    return (f"__global__ void k({params}) {{\n{body}\n}}\n"
            f'extern "C" void probe({params}) {{ {launch} }}\n')


def classes(f, kind=None):
    return [a["class"] for k in f.kernel_details.values() for a in k["accesses"]
            if kind is None or a["kind"] == kind]


# ------------------------------------------------------------------ probes: each feature moves


def test_every_probe_parses_and_has_all_features():
    probes = sorted(PROBES.glob("*.cu"))
    assert len(probes) >= 15
    for p in probes:
        f = static_features(p.read_text())
        assert f.parse_ok, p.name
        assert list(f.values()) == FEATURE_NAMES
        assert 'extern "C" void probe(' in p.read_text()
        json.dumps(f.as_dict())  # records must serialise without custom encoders


def test_coal_coalesced_vs_strided():
    assert probe("coal_coalesced").coal == 1.0
    assert probe("coal_strided").coal < probe("coal_coalesced").coal


def test_atomics_with_vs_without():
    assert probe("atomics_used").atomics >= 1 and probe("atomics_none").atomics == 0


def test_smem_tiling_barriers_and_arithmetic_intensity():
    tiled, naive = probe("smem_tiled"), probe("smem_none")
    assert tiled.syncthreads >= 2 * LOOP_WEIGHT and naive.syncthreads == 0
    assert tiled.ai > naive.ai


def test_div_divergent_vs_uniform():
    assert probe("branch_divergent").div >= 1 and probe("branch_uniform").div == 0


def test_tpb_64_256_1024():
    assert [probe(f"tpb_{b}").tpb for b in (64, 256, 1024)] == [64, 256, 1024]


def test_xfer_host_copies_vs_none():
    assert probe("xfer_host_copy").xfer == 2 and probe("xfer_none").xfer == 0


def test_kernels_many_launches_vs_fused():
    many, fused = probe("launches_many"), probe("launches_fused")
    assert (many.kernels, fused.kernels) == (3, 1)
    assert many.gmem_access > fused.gmem_access


def test_occ_follows_registers_from_the_compiler_report():
    # Keys as ptxas prints them: Itanium-mangled for C++ kernels.
    light = probe("smem_tiled", resources={"_Z8mm_tilediPKfS0_Pf": {"registers": 32, "smem_static": 2048}})
    heavy = probe("smem_tiled", resources={"_Z8mm_tilediPKfS0_Pf": {"registers": 128, "smem_static": 2048}})
    assert light.occ == 1.0
    assert heavy.occ == pytest.approx(occupancy("9.0", 256, 128, 2048)["occupancy"]) == 0.25
    assert not any("assumed 32 registers" in n for n in heavy.notes)
    assert any("assumed 32 registers" in n for n in probe("smem_tiled").notes)


def _ptxas_resources(src: str, tmp: Path) -> dict:
    cu = tmp / "c.cu"
    cu.write_text(src)
    r = subprocess.run(["nvcc", "-arch=sm_90", "-c", "-Xptxas", "-v", "-o", str(tmp / "c.o"), str(cu)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    res, cur = {}, None
    for line in r.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            cur = res.setdefault(m.group(1), {"registers": 0, "smem_static": 0})
        m = re.search(r"Used (\d+) registers", line)
        if m and cur is not None:
            cur["registers"] = int(m.group(1))
            sm = re.search(r"(\d+) bytes smem", line)
            cur["smem_static"] = int(sm.group(1)) if sm else 0
    return res


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_real_ptxas_report_matches_kernels(tmp_path):
    src = (PROBES / "smem_tiled.cu").read_text()
    res = _ptxas_resources(src, tmp_path)
    assert res and all(k.startswith("_Z") for k in res)  # mangled: the matcher must demangle
    f = static_features(src, resources=res)
    r = next(iter(res.values()))
    assert f.launches[0]["regs"] == r["registers"] and f.launches[0]["smem"] == r["smem_static"] == 2048
    assert f.occ == pytest.approx(occupancy("9.0", 256, r["registers"], 2048)["occupancy"])


# ------------------------------------------------------------------ dev tasks


def test_warp_per_row_reads_through_a_warp_uniform_loaded_offset_are_coalesced():
    """row_ptr[w] is the same for a warp's lanes, so `beg + lane` is unit-stride: the H200 counted
    about one sector per 4-byte lane for these CSR/graph kernels, which used to read as irregular."""
    body = ("int w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; int lane = threadIdx.x & 31;\n"
            "int beg = rp[w], end = rp[w + 1]; float s = 0.0f;\n"
            "for (int e = beg + lane; e < end; e += 32) s += val[e] * x[col[e]];\n"
            "if (lane == 0) y[w] = s;")
    f = static_features(wrap(body, params="int n, const int *rp, const int *col, const float *val, const float *x, float *y",
                             launch="k<<<(n * 32 + 255) / 256, 256>>>(n, rp, col, val, x, y);"))
    acc = {a["text"]: a["class"] for k in f.kernel_details.values() for a in k["accesses"]}
    assert acc["val[e]"] == "unit" and acc["col[e]"] == "unit", acc
    assert acc["x[col[e]]"] == "irregular" and acc["rp[w]"] == "uniform", acc


def test_transpose_naive_stores_strided_tiled_stores_coalesced():
    tv = task_variants()["transpose_f32"]
    naive, tiled, cw = (static_features(tv[n]) for n in ("naive", "tiled_smem", "coalesced_write"))
    assert classes(naive, "st") == ["strided"] and set(classes(tiled, "st")) == {"unit"}
    assert naive.coal < tiled.coal == 1.0
    assert classes(cw, "ld") == ["strided"] and classes(cw, "st") == ["unit"]
    assert tiled.syncthreads >= 1 and naive.syncthreads == 0
    assert tiled.tpb == 256  # dim3 block(TILE, 8) with #define TILE 32


def test_row_sum_naive_vs_warp_per_row():
    tv = task_variants()["row_sum_f32"]
    naive, warp, block = (static_features(tv[n]) for n in ("naive", "warp_per_row", "block_per_row"))
    assert naive.coal < 0.5 < warp.coal
    assert block.syncthreads > 0 and block.div >= 1  # `if (threadIdx.x < w)` in the tree
    assert naive.div == 0  # `if (r < rows)` is a guard


def test_histogram_atomics_and_saxpy_launches():
    hv = task_variants()["histogram_i32"]
    assert static_features(hv["naive"]).atomics >= 1
    assert static_features(hv["naive"]).kernels == 2
    sv = task_variants()["saxpy_f32"]
    assert static_features(sv["vectorized"]).kernels == 2
    assert static_features(sv["naive"]).gmem_access == 3  # x load, y load, y store


# ------------------------------------------------------------------ definitions, case by case


@pytest.mark.parametrize("index,expected", [
    ("i", "unit"), ("i + 7", "unit"), ("n - 1 - i", "unit"), ("blockIdx.x", "uniform"),
    ("2 * i", "strided"), ("i * n", "strided"), ("(size_t)i * n + 3", "strided"),
    ("(int)x[i]", "irregular"), ("i * i", "irregular"), ("threadIdx.x % 32", "unit"),
    ("(threadIdx.x / 32) * n", "uniform"),
])
def test_index_classification(index, expected):
    body = f"int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[{index}];"
    f = static_features(wrap(body))
    assert classes(f, "ld")[-1] == expected  # the outer access (an inner x[i] comes first)
    assert classes(f, "st") == ["unit"]


def test_def_use_through_locals_pointers_and_casts():
    body = ("int tid = threadIdx.x; int base = blockIdx.x * 256; int j = base + tid;\n"
            "const float *row = x + (size_t)blockIdx.y * n; float *o = y;\n"
            "o[j] = row[j] + *(x + j) + reinterpret_cast<const float4 *>(x)[j].x;")
    f = static_features(wrap(body))
    assert classes(f) == ["unit"] * 4
    acc = f.kernel_details["k"]["accesses"]
    assert sorted(a["bytes"] for a in acc) == [4, 4, 4, 16]


def test_guards_are_not_divergence_but_thread_dependent_branches_are():
    guard = "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return; if (i < n && n > 4) y[i] = 0;"
    assert static_features(wrap(guard)).div == 0
    uniform = "int i = blockIdx.x * blockDim.x + threadIdx.x; if (n > 5) y[i] = 1; else y[i] = 2;"
    assert static_features(wrap(uniform)).div == 0
    lane0 = "if (threadIdx.x == 0) y[blockIdx.x] = 1;"
    assert static_features(wrap(lane0)).div == 1
    data = "int i = threadIdx.x; float v = x[i]; if (v > 0.0f) y[i] = v; if (v > 1.0f) y[i] = 1.0f;"
    assert static_features(wrap(data)).div == 2
    # a conditional expression is a select, not a branch (nvcc emits SEL/FSEL; the H200 agrees)
    select = "int i = threadIdx.x; float v = x[i]; y[i] = v > 1.0f ? 1.0f : v;"
    assert static_features(wrap(select)).div == 0


def test_loop_weighting_of_atomics_syncs_and_launches():
    body = ("for (int a = 0; a < n; a++) { for (int b = 0; b < n; b++) atomicAdd(&y[0], 1.0f); "
            "__syncthreads(); }")
    launch = "for (int r = 0; r < 3; r++) k<<<1, 128>>>(n, x, y);"
    f = static_features(wrap(body, launch=launch))
    assert f.atomics == LOOP_WEIGHT ** 2 * LOOP_WEIGHT  # kernel launched in a host loop
    assert f.syncthreads == LOOP_WEIGHT * LOOP_WEIGHT
    assert f.kernels == LOOP_WEIGHT and f.tpb == 128


def test_ops_count_fma_as_two_and_ignore_comparisons():
    body = "int i = threadIdx.x; if (i < n) y[i] = x[i] * 2.0f + 1.0f;"
    f = static_features(wrap(body, launch="k<<<1, 32>>>(n, x, y);"))
    assert f.ops == 2 and f.ai == pytest.approx(2 / 8)
    body2 = "int i = threadIdx.x; y[i] = fmaf(x[i], 2.0f, 1.0f) + sqrtf(x[i]);"
    assert static_features(wrap(body2)).ops == 4


def test_xfer_kinds_and_tpb_sources():
    src = ("#define BS 128\n__global__ void k(float *y) { y[threadIdx.x] = 0; }\n"
           'extern "C" void probe(int n, float *d, float *e) {\n'
           "  float h[4]; cudaMemcpy(d, e, 4, cudaMemcpyDeviceToDevice);\n"
           "  cudaMemcpy(h, d, 16, cudaMemcpyDefault);\n"
           "  for (int i = 0; i < 2; i++) cudaMemcpyAsync(d, h, 16, cudaMemcpyHostToDevice, 0);\n"
           "  dim3 b(BS / 2, 2, 1); k<<<1, b>>>(d); k<<<1, BS>>>(d); k<<<1, n>>>(d); }\n")
    f = static_features(src)
    assert f.xfer == 1 + LOOP_WEIGHT
    assert f.tpb == 128 and f.kernels == 3  # n unknown: mean over the two known sites
    assert static_features(src, sizes={"n": 512}).tpb == pytest.approx((128 + 128 + 512) / 3)
    none = static_features("__global__ void k(float *y) { y[0] = 1; }\n"
                           'extern "C" void probe(float *y, int t) { k<<<1, t>>>(y); }')
    assert none.tpb is None and any("tpb unknown" in n for n in none.notes)


def test_dynamic_shared_memory_from_sizes_lowers_occupancy():
    hv = task_variants()["histogram_i32"]["smem_privatized"]
    small = static_features(hv, sizes={"n": 1 << 20, "bins": 256})
    big = static_features(hv, sizes={"n": 1 << 20, "bins": 12000})  # 48000 B per block
    assert big.occ < small.occ


# ------------------------------------------------------------------ robustness


@pytest.mark.parametrize("src", [
    "", "}}}}", "(" * 5000, "\x00\xff garbage", "__global__ void", "#define X (\n",
    "__global__ void k(float *x) { x[threadIdx.x] = 1 +* ; }",
    "__global__ void k(float *x) { x[" + "i+" * 3000 + "1] = 0; }",
])
def test_hostile_or_broken_input_never_raises(src):
    f = static_features(src)
    assert isinstance(f.parse_ok, bool) and list(f.values()) == FEATURE_NAMES


def test_syntax_error_returns_partial_features_and_flag():
    src = (PROBES / "atomics_used.cu").read_text().replace("if (i < n) atomicAdd", "if (i < n atomicAdd")
    f = static_features(src)
    assert f.parse_ok is False and any("syntax error" in n for n in f.notes)
    assert f.kernels == 1 and f.tpb == 256  # host code still analysed


# ------------------------------------------------------------------ phi_hat and CLI


def test_phi_hat_normalisation():
    tv = task_variants()["transpose_f32"]
    naive, tiled = static_features(tv["naive"]), static_features(tv["tiled_smem"])
    v0 = phi_hat(naive, naive)
    assert v0.shape == (11,)
    for name in ("ai", "gmem_access", "ops"):
        assert v0[FEATURE_NAMES.index(name)] == 0.0  # relative to itself
    v = phi_hat(tiled, naive)
    assert v[FEATURE_NAMES.index("coal")] == tiled.coal
    assert v[FEATURE_NAMES.index("tpb")] == 0.0  # log2(256 / 256)
    assert v[FEATURE_NAMES.index("syncthreads")] == pytest.approx(np.log1p(tiled.syncthreads))
    assert v[FEATURE_NAMES.index("gmem_access")] > 0
    assert phi_hat({"tpb": 1024})[FEATURE_NAMES.index("tpb")] == 2.0
    assert np.all(np.isfinite(phi_hat({}, None)))


def test_cli_json_table_and_errors(tmp_path, capsys):
    cu = tmp_path / "c.cu"
    cu.write_text(task_variants()["transpose_f32"]["tiled_smem"])
    assert main(["--candidate", str(cu), "--json", "--task", "dev/transpose_f32"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["coal"] == 1.0 and set(d["phi_hat"]) == set(FEATURE_NAMES)
    assert main(["--candidate", str(cu)]) == 0
    out = capsys.readouterr().out
    assert "coal" in out and "syncthreads" in out
    assert main(["--candidate", str(tmp_path / "missing.cu")]) == 2
    assert "not found" in capsys.readouterr().err
    assert main(["--candidate", str(cu), "--task", "dev/nope"]) == 2
