"""Nsight Compute command line and CSV parser (hand-made CSV in ncu's format); GPU run marked."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudaperf.profiled import (MARKER_KERNEL, METRICS, ncu_command, parse_ncu_csv,
                               profiled_features, rank_agreement, split_by_marker)

HDR = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
       '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
       '"Metric Value"')


def _rows(kid, name, block, grid, metrics):
    out = []
    for m, unit, val in metrics:
        out.append(f'"{kid}","513","p","127.0.0.1","{name}","1","7","({block}, 1, 1)",'
                   f'"({grid}, 1, 1)","0","9.0","Command line profiler metrics","{m}","{unit}","{val}"')
    return out


def _kernel(kid, name, *, block=256, grid=16384, sectors=(524288, 524288), requests=(131072, 131072),
            warps_pct="70.20", uniform="100", targets="131,072", dram="33,554,432", ffma="0",
            fadd="0", atom="0", ld="131,072", st="131,072", threads="4,194,304", dur="20,000",
            fp32="0", integer="16,777,216"):
    return _rows(kid, name, block, grid, [
        ("dram__bytes.sum", "byte", dram),
        ("gpu__time_duration.sum", "ns", dur),
        ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "", f"{requests[0]:,}"),
        ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "", f"{requests[1]:,}"),
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector", f"{sectors[0]:,}"),
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "sector", f"{sectors[1]:,}"),
        ("launch__block_size", "", str(block)),
        ("launch__grid_size", "", f"{grid:,}"),
        ("launch__thread_count", "thread", threads),
        ("sm__warps_active.avg.pct_of_peak_sustained_active", "%", warps_pct),
        ("smsp__sass_average_branch_targets_threads_uniform.pct", "%", uniform),
        ("smsp__sass_branch_targets.sum", "", targets),
        ("smsp__sass_inst_executed_op_global_atom.sum", "inst", "0"),
        ("smsp__sass_inst_executed_op_global_red.sum", "inst", atom),
        ("smsp__sass_inst_executed_op_global_ld.sum", "inst", ld),
        ("smsp__sass_inst_executed_op_global_st.sum", "inst", st),
        ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", ffma),
        ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", fadd),
        ("smsp__sass_thread_inst_executed_op_fp32_pred_on.sum", "inst", fp32),
        ("smsp__sass_thread_inst_executed_op_integer_pred_on.sum", "inst", integer),
    ])


def _csv():
    lines = ["==PROF== Connected to process 513 (/tmp/p)", HDR]
    lines += _rows(0, MARKER_KERNEL, 1, 1, [("dram__bytes.sum", "byte", "2,560")])
    lines += _kernel(1, "copy_unit(int, const float *, float *)")
    lines += _rows(2, MARKER_KERNEL, 1, 2, [("dram__bytes.sum", "byte", "2,560")])
    # strided copy: 16 sectors per load request; and a kernel with FMAs, red atomics, divergence
    lines += _kernel(3, "copy_strided(int, const float *, float *)", block=128, grid=32768,
                     sectors=(2097152, 524288), warps_pct="84.79", dur="60,000")
    lines += _kernel(4, "div_atomic(int, const float *, float *)", sectors=(524288, 0),
                     requests=(131072, 0), warps_pct="80.39", uniform="50", targets="393,216",
                     dram="16,781,056", ffma="2,097,152", fadd="1,048,576", atom="131,072",
                     st="0", dur="20,000", fp32="4,194,304")
    lines.append("==PROF== Disconnected from process 513")
    return "\n".join(lines) + "\n"


def test_command_line_has_every_metric_and_profiles_child_processes():
    argv = ncu_command(["python", "drive.py"])
    assert argv[:3] == ["ncu", "--clock-control", "none"]
    assert "--csv" in argv and argv[argv.index("--target-processes") + 1] == "all"
    metrics = argv[argv.index("--metrics") + 1].split(",")
    assert metrics == METRICS
    for m in ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "dram__bytes.sum",
              "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__block_size",
              "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"):
        assert m in metrics
    assert argv[-2:] == ["python", "drive.py"]


def test_parser_reads_kernels_values_and_thousands_separators():
    ks = parse_ncu_csv(_csv())
    assert [k.id for k in ks] == [0, 1, 2, 3, 4]
    assert ks[1].name.startswith("copy_unit") and ks[1].block_size == "(256, 1, 1)"
    assert ks[3].metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 2097152
    assert ks[2].grid_x == 2


def test_split_by_marker_attributes_kernels_to_candidates():
    groups = split_by_marker(parse_ncu_csv(_csv()))
    assert {i: [k.id for k in g] for i, g in groups.items()} == {0: [1], 1: [3, 4]}


def test_profiled_features_arithmetic():
    groups = split_by_marker(parse_ncu_csv(_csv()))
    a, b = profiled_features(groups[0]), profiled_features(groups[1])
    assert a["coal"] == 1.0 and a["sectors_per_request"] == 4.0
    # b: (2097152 + 524288 + 524288) sectors / (131072 * 3) requests = 8 per request
    assert b["sectors_per_request"] == pytest.approx(8.0) and b["coal"] == pytest.approx(0.5)
    assert a["kernels"] == 1 and b["kernels"] == 2
    assert b["tpb"] == pytest.approx(192.0)
    # flops = fadd + 2 ffma = 1048576 + 4194304, per dram byte of both kernels
    assert b["ai"] == pytest.approx((1048576 + 2 * 2097152) / (33554432 + 16781056))
    assert a["ai"] == 0.0
    # duration-weighted achieved occupancy: (84.79 * 60 + 80.39 * 20) / 80 / 100
    assert b["occ"] == pytest.approx((84.79 * 3 + 80.39) / 4 / 100)
    # divergence weighted by branch targets: (0 * 131072 + 50 * 393216) / 524288
    assert b["div"] == pytest.approx(37.5) and a["div"] == 0.0
    assert b["atomics"] == 131072 and a["atomics"] == 0
    assert a["gmem_access"] == pytest.approx(2.0) and b["gmem_access"] == pytest.approx(3.0)
    assert b["ops"] == pytest.approx(4.0 + 1.0 + 4.0)
    assert a["xfer"] is None and a["syncthreads"] is None


def test_zero_uniformity_without_branches_is_not_divergence():
    text = "\n".join([HDR] + _kernel(1, "pred", uniform="0", targets="0"))
    assert profiled_features(parse_ncu_csv(text))["div"] == 0.0


def test_raw_page_with_units_row():
    names = ["dram__bytes.sum", "launch__block_size", "sm__warps_active.avg.pct_of_peak_sustained_active"]
    text = "\n".join([
        '"ID","Kernel Name","Block Size","Grid Size",' + ",".join(f'"{n}"' for n in names),
        '"","","","","Mbyte","","%"',
        '"0","k(float *)","(128, 1, 1)","(8, 1, 1)","1.5","128","50"',
    ])
    ks = parse_ncu_csv(text)
    assert len(ks) == 1 and ks[0].metrics["dram__bytes.sum"] == 1.5e6
    f = profiled_features(ks)
    assert f["tpb"] == 128 and f["occ"] == 0.5


def test_malformed_output_does_not_raise():
    assert parse_ncu_csv("") == []
    assert parse_ncu_csv("==ERROR== no kernels were profiled\n") == []
    broken = HDR + '\n"1","2"\n"x","513","p","h","k","1","7","(1,1,1)","(1,1,1)","0","9.0","s","m","","n/a"\n'
    assert parse_ncu_csv(broken) == []
    assert profiled_features([])["kernels"] == 0.0


def test_rank_agreement():
    st = [{"coal": 1.0, "tpb": 64}, {"coal": 0.5, "tpb": 128}, {"coal": 0.0, "tpb": 256},
          {"coal": None, "tpb": 512}]
    pr = [{"coal": 0.9, "tpb": 512}, {"coal": 0.4, "tpb": 256}, {"coal": 0.1, "tpb": 128},
          {"coal": 0.3, "tpb": 64}]
    r = rank_agreement(st, pr, ["coal", "tpb", "div"])
    assert r["coal"] == {"rho": pytest.approx(1.0), "n": 3}
    assert r["tpb"]["rho"] == pytest.approx(-1.0) and r["tpb"]["n"] == 4
    assert r["div"] == {"rho": None, "n": 0}


# --------------------------------------------------------------------------- on a GPU

_HELPER = r'''
#include <cuda_runtime.h>
extern "C" __global__ void cudaperf_marker() {}
extern "C" void mark(int i) { cudaperf_marker<<<i + 1, 1>>>(); cudaDeviceSynchronize(); }
extern "C" float *alloc(size_t n) { float *p = 0; cudaMalloc(&p, n * 4); cudaMemset(p, 0, n * 4); return p; }
extern "C" void sync() { cudaDeviceSynchronize(); }
'''
_DRIVER = r'''
import ctypes, sys
h = ctypes.CDLL(sys.argv[1]); h.alloc.restype = ctypes.c_void_p
n = 1 << 20
bufs = [ctypes.c_void_p(h.alloc(ctypes.c_size_t(n))) for _ in range(3)]
for i, so in enumerate(sys.argv[2:]):
    f = ctypes.CDLL(so).probe
    h.mark(i)
    if "smem_" in so:
        f(ctypes.c_int(512), *bufs)
    else:
        f(ctypes.c_int(n), *bufs[:2])
    h.sync()
'''

PROBES = Path(__file__).resolve().parents[1] / "cudaperf" / "probes"


def profile_probes(workdir: Path) -> dict[str, dict]:
    """Build every probe as a shared library, profile them all in one ncu run."""
    names = sorted(p.stem for p in PROBES.glob("*.cu"))
    (workdir / "helper.cu").write_text(_HELPER)
    (workdir / "drive.py").write_text(_DRIVER)
    jobs = [["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o",
             str(workdir / "helper.so"), str(workdir / "helper.cu")]]
    jobs += [["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o",
              str(workdir / f"{n}.so"), str(PROBES / f"{n}.cu")] for n in names]
    procs = [subprocess.Popen(j) for j in jobs]
    assert all(p.wait() == 0 for p in procs)
    cmd = ncu_command([sys.executable, str(workdir / "drive.py"), str(workdir / "helper.so")]
                      + [str(workdir / f"{n}.so") for n in names])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    (workdir / "ncu.csv").write_text(r.stdout)
    assert r.returncode == 0, r.stderr[-2000:]
    groups = split_by_marker(parse_ncu_csv(r.stdout))
    return {n: profiled_features(groups.get(i, [])) for i, n in enumerate(names)}


@pytest.mark.gpu
@pytest.mark.skipif(shutil.which("ncu") is None, reason="needs Nsight Compute")
def test_profiled_probes_move_the_right_way(tmp_path):
    f = profile_probes(tmp_path)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "profiled_probes.json").write_text(json.dumps(f, indent=1))
    assert f["coal_coalesced"]["coal"] > f["coal_strided"]["coal"]
    assert f["atomics_used"]["atomics"] > f["atomics_none"]["atomics"]
    assert f["branch_divergent"]["div"] > f["branch_uniform"]["div"]
    assert f["launches_many"]["kernels"] > f["launches_fused"]["kernels"]
    assert f["tpb_64"]["tpb"] < f["tpb_256"]["tpb"] < f["tpb_1024"]["tpb"]
    # tiling replaces per-thread global loads by shared-memory reads (ai is not compared: at this
    # size both matrices fit in L2, so DRAM bytes are the compulsory minimum for both)
    assert f["smem_tiled"]["gmem_access"] < f["smem_none"]["gmem_access"]
