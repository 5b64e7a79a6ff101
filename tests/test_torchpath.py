"""torch2cuda in the harness: the sandboxed torch worker (on the CPU here) and ModelNew candidates.

CPU tests drive `cudaperf.torchworker` through the same launcher and protocol the harness
uses (device "cpu"), and check the harness' static gate; the gpu tests evaluate real
load_inline candidates end to end.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cudaperf import check, kernelbench, reference, sandbox, torchpath
from cudaperf.config import get_profile
from cudaperf.inputs import make_inputs
from cudaperf.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tasks():
    ts = load_tasks(ROOT / "data" / "tasks" / "torch2cuda.jsonl.gz")
    relu = next(t for t in ts if t.task_id.startswith("torch2cuda/activations/relu"))
    with_params = next(t for t in ts if t.meta.get("parameters") and t.family == "gemm_epilogue")
    return relu, with_params


def as_modelnew(task) -> str:
    return kernelbench.reference_as_modelnew(task.reference)


def _smallest(task):
    """The largest test below the perf size (the tiniest ones may have an all-zero answer)."""
    small = [t for t in task.tests if t is not task.perf_test]
    return max(small, key=lambda t: task.numel_total(t))


class Session:
    """A torch worker in a scratch dir, as the harness starts it (own uid when root and possible)."""

    def __init__(self, tmp: Path, task, mode: str, source: str | None = None):
        h = SimpleNamespace(cfg=get_profile("smoke").harness)
        self._uid_cm = sandbox.acquire_uid()
        uid = self._uid_cm.__enter__()
        if uid is not None and not torchpath.worker_can_drop_uid():
            # This interpreter is not readable by others (e.g. under /root): the harness would
            # refuse; the candidates here are the test's own, so they may run as this user.
            uid = None
        self.scratch = sandbox.make_scratch(tmp, uid=uid, prefix="tw-")
        self.task = task
        self.w = torchpath.start_worker(h, None, self.scratch, uid)
        torchpath.write_spec(self.scratch, task, mode, 0, source, device="cpu")

    def files(self, test, seed):
        d = self.scratch / f"in-{test.name}-{seed}"
        d.mkdir(exist_ok=True)
        inp = make_inputs(self.task, test, seed)
        for p in self.task.signature:
            if p.is_pointer and p.role in ("in", "inout"):
                np.ascontiguousarray(inp[p.name], p.dtype).tofile(d / f"{p.name}.bin")
        out = self.scratch / "out"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        for p in self.task.signature:
            if p.is_pointer and p.role == "out":
                f = out / f"{p.name}.bin"
                with open(f, "wb") as fh:
                    fh.truncate(self.task.numel(p, test) * p.dtype.itemsize)
                if self.w.uid is not None:
                    os.chown(f, self.w.uid, self.w.uid)
        return d.name, out

    def verdict(self, test, seed, tmp):
        """check -> compare against the harness' float64 reference."""
        din, out = self.files(test, seed)
        rep = self.w.request(f"check {test.name} {din} out", timeout=120)
        if not rep.startswith("ok"):
            return rep
        ref = reference.reference_outputs(self.task, test, seed, cache_dir=tmp / "refcache")
        for p in self.task.signature:
            if p.is_pointer and p.role == "out":
                o = np.fromfile(out / f"{p.name}.bin", dtype=p.dtype)
                c = check.compare(o, ref[p.name], tol=self.task.tol(), dtype=p.dtype)
                if not c.ok:
                    return f"mismatch {c.summary()}"
        return "correct"

    def close(self):
        self.w.close()
        sandbox.cleanup_scratch(self.scratch)
        self._uid_cm.__exit__(None, None, None)


def test_eager_worker_matches_the_reference_and_times(tasks, tmp_path):
    for task in tasks:
        s = Session(tmp_path, task, "eager")
        try:
            assert s.w.request("build spec.json", timeout=120) == "ok"
            assert s.w.request("init", timeout=120).startswith("ok cpu")
            test = _smallest(task)
            assert s.verdict(test, 1, tmp_path) == "correct", task.task_id
            din, _ = s.files(test, 0)
            rep = s.w.request(f"time {test.name} {din} 1 4 0", timeout=120).split()
            assert rep[0] == "ok" and len(rep[1].split(",")) == 4 and rep[2] == "-"
        finally:
            s.close()


def test_modelnew_candidates_right_wrong_and_broken(tasks, tmp_path):
    relu, gemm = tasks
    good = as_modelnew(gemm)
    zeros = kernelbench.zeros_modelnew(gemm.reference)
    renamed = good.replace("self.linear", "self.fc")  # parameters fc.weight/fc.bias, not linear.*
    cases = {"good": (good, "correct"), "zeros": (zeros, "mismatch"),
             "raises": (good.replace("super().__init__()", "super().__init__()\n        raise RuntimeError('boom')"),
                        "err ModelNew(*get_init_inputs()) failed: RuntimeError: boom")}
    assert renamed != good
    cases["renamed"] = (renamed, "err ModelNew has no parameter 'linear.weight'")
    for name, (src, want) in cases.items():
        s = Session(tmp_path, gemm, "modelnew", src)
        try:
            assert s.w.request("build spec.json", timeout=120) == "ok", name
            s.w.request("init", timeout=120)
            got = s.verdict(_smallest(gemm), 0, tmp_path)
            assert got.startswith(want), (name, got)
        finally:
            s.close()
    s = Session(tmp_path, relu, "modelnew", "x = (\n")
    try:
        assert s.w.request("build spec.json", timeout=120).startswith("err building the candidate failed: SyntaxError")
    finally:
        s.close()


def test_harness_gates_modelnew_statically_and_without_a_gpu(tasks, tmp_path):
    from cudaperf.harness import Harness

    relu, _ = tasks
    h = Harness(get_profile("smoke", **{"harness.cache_dir": str(tmp_path / "c")}).harness)
    try:
        if h.has_gpu:
            pytest.skip("CPU behaviour")
        r = h.evaluate(relu, "import os\n" + as_modelnew(relu))
        assert r.status == "invalid" and "imports os" in r.message and "suspicious:modelnew_static" in r.flags
        r = h.evaluate(relu, as_modelnew(relu))  # no load_inline: not a custom kernel
        assert r.status == "invalid" and "no load_inline" in r.message
        assert torchpath.is_modelnew(relu, as_modelnew(relu))
        assert not torchpath.is_modelnew(relu, relu.variants[0].source)
    finally:
        h.close()
    h2 = Harness(get_profile("smoke", **{"harness.cache_dir": str(tmp_path / "c2"),
                                         "harness.modelnew_require_kernel": False}).harness)
    try:
        r = h2.evaluate(relu, as_modelnew(relu))
        assert r.status == "invalid" and "only on a GPU machine" in r.message
    finally:
        h2.close()


# ----------------------------------------------------------------------------------- GPU

LOAD_INLINE_RELU = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>
__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor relu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    long n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"
relu_ext = load_inline(name="relu_ext", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["relu_cuda"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_ext.relu_cuda(x.contiguous())
'''


@pytest.mark.gpu
def test_load_inline_modelnew_end_to_end_on_the_gpu(tasks, tmp_path):
    from cudaperf.harness import Harness

    relu, gemm = tasks
    cfg = get_profile("smoke", **{"harness.cache_dir": str(tmp_path / "c")}).harness
    h = Harness(cfg)
    try:
        good = h.evaluate(relu, LOAD_INLINE_RELU)
        assert good.status == "correct", (good.message, good.failures[:2], good.compile_log[-2000:])
        assert good.eager_ms and good.speedup and 0.3 < good.speedup < 3, good.speedup
        zeros = h.evaluate(relu, LOAD_INLINE_RELU.replace("x[i] > 0.f ? x[i] : 0.f", "0.f"))
        assert zeros.status == "wrong", zeros.message
    finally:
        h.close()
    cfg2 = get_profile("smoke", **{"harness.cache_dir": str(tmp_path / "c2"),
                                   "harness.modelnew_require_kernel": False}).harness
    h2 = Harness(cfg2)
    try:
        for t in tasks:  # the reference submitted as its own candidate: correct, speedup ~ 1
            r = h2.evaluate(t, as_modelnew(t))
            assert r.status == "correct" and 0.8 < r.speedup < 1.25, (t.task_id, r.message, r.speedup)
    finally:
        h2.close()


KB = ROOT.parent / "shared" / "data" / "kernelbench" / "kernelbench_l1_l3.jsonl"


@pytest.mark.skipif(not KB.is_file(), reason="KernelBench data not present (../shared/data)")
def test_kernelbench_reference_passes_and_zeros_fail_in_the_worker(tmp_path):
    """The self-check's two candidates on the smallest level-1 problems, in the CPU worker."""
    probs = kernelbench.load_problems(KB, levels=(1,))
    tasks, _ = kernelbench.convert_all(probs)
    small = sorted(tasks, key=lambda t: t.numel_total(t.tests[0]))[:4]
    for t in small:
        test = t.tests[0]
        for make, want in ((kernelbench.reference_as_modelnew, "correct"), (kernelbench.zeros_modelnew, "mismatch")):
            s = Session(tmp_path, t, "modelnew", make(t.reference))
            try:
                assert s.w.request("build spec.json", timeout=120) == "ok", t.task_id
                s.w.request("init", timeout=120)
                got = s.verdict(test, 0, tmp_path)
                assert got.startswith(want), (t.task_id, make.__name__, got)
            finally:
                s.close()


def test_selfcheck_summary_counts():
    import importlib.util

    spec = importlib.util.spec_from_file_location("kbsc", ROOT / "benchmarks" / "kernelbench_selfcheck.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    rows = [{"task_id": "a", "candidate": "reference", "status": "correct", "speedup": 1.02, "message": ""},
            {"task_id": "a", "candidate": "zeros", "status": "wrong", "speedup": None, "message": ""},
            {"task_id": "b", "candidate": "reference", "status": "crashed", "speedup": None, "message": "oom"},
            {"task_id": "b", "candidate": "zeros", "status": "correct", "speedup": 9.0, "message": ""}]
    # the script loads (its imports are right) and reports through cudaperf.kernelbench
    s = m.kernelbench.selfcheck_summary(rows)
    assert s["problems"] == 2 and s["reference_correct"] == 1 and s["reference_speedup_within_0.8_1.25"] == 1
    assert s["zeros_rejected"] == 1 and s["zeros_total"] == 2 and s["not_correct_reference"][0][0] == "b"


def test_selfcheck_rows_resume_across_gpu_files_and_count_each_pair_once(tmp_path):
    from cudaperf import kernelbench

    def row(tid, cand, gpu, status="correct"):
        return json.dumps({"task_id": tid, "candidate": cand, "status": status, "speedup": 1.0, "gpu": gpu,
                           "message": ""})

    h200 = tmp_path / "kernelbench_selfcheck_nvidia-h200.jsonl"
    h200.write_text("\n".join([row("p1", "reference", "H200"), row("p1", "zeros", "H200", "wrong"), ""]) + "\n")
    out = tmp_path / "kernelbench_selfcheck_nvidia-h100.jsonl"  # this run's, already holding p2
    out.write_text(row("p2", "reference", "H100") + "\n")
    copy = tmp_path / "copy.jsonl"  # the committed file the output was copied from
    copy.write_text(out.read_text())
    rows = kernelbench.selfcheck_rows([out, h200, copy, tmp_path / "absent.jsonl"])
    assert [(r["task_id"], r["candidate"], r["gpu"]) for r in rows] == [
        ("p2", "reference", "H100"), ("p1", "reference", "H200"), ("p1", "zeros", "H200")]
    s = kernelbench.selfcheck_summary(rows)
    assert s["problems"] == 2 and s["reference_total"] == 2 and s["zeros_total"] == 1
    assert kernelbench.selfcheck_rows([]) == []


def test_harness_failures_are_dropped_for_a_rerun_and_nothing_else(tmp_path):
    from cudaperf import kernelbench
    from cudaperf.result import INTERNAL_ERROR

    rows = [{"task_id": "p7", "candidate": "reference", "status": "crashed",
             "message": "torch worker memory: resident memory 16400 MiB over the limit"},
            {"task_id": "p7", "candidate": "zeros", "status": "crashed", "message": "x"},  # a verdict: stays
            {"task_id": "p8", "candidate": "reference", "status": "correct", "message": ""},
            {"task_id": "p9", "candidate": "reference", "status": "wrong", "message": "passed 0 of 1"},
            {"task_id": "p10", "candidate": "reference", "status": "timeout", "message": f"{INTERNAL_ERROR}: pool"}]
    out = tmp_path / "kb.jsonl"
    out.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    gone = kernelbench.drop_selfcheck_rows(out, kernelbench.harness_failure)
    assert [r["task_id"] for r in gone] == ["p7", "p10"]
    left = kernelbench.selfcheck_rows([out])
    assert [(r["task_id"], r["candidate"]) for r in left] == [("p7", "zeros"), ("p8", "reference"), ("p9", "reference")]
    assert kernelbench.drop_selfcheck_rows(out, kernelbench.harness_failure) == []
    assert kernelbench.drop_selfcheck_rows(tmp_path / "absent.jsonl", kernelbench.harness_failure) == []


def test_trusted_eager_is_measured_once_for_candidates_arriving_together(tasks, tmp_path, monkeypatch):
    """Two candidates of a KernelBench problem (or a GRPO group of eight) ask for the task's eager
    time at once: one torch worker measures it, the others wait for that number. An unexpected
    error caches nothing, so a later candidate measures it again."""
    import threading
    import time

    from cudaperf.harness import Harness

    relu, _ = tasks
    h = Harness(get_profile("smoke", **{"harness.cache_dir": str(tmp_path / "c")}).harness)
    calls = []
    gate = threading.Event()

    def measure(h_, task, gpu, slot):
        calls.append(slot)
        gate.wait(5)  # every caller has arrived before the first measurement ends
        return 1.25

    monkeypatch.setattr(torchpath, "_measure_eager", measure)
    try:
        got = []
        threads = [threading.Thread(target=lambda s=s: got.append(torchpath.trusted_eager(h, relu, 0, s)))
                   for s in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        gate.set()
        for t in threads:
            t.join(10)
        assert got == [1.25] * 4 and len(calls) == 1
        assert torchpath.trusted_eager(h, relu, 0, 9) == 1.25 and len(calls) == 1  # cached

        def broken(h_, task, gpu, slot):
            calls.append(slot)
            raise ValueError("bug")

        monkeypatch.setattr(torchpath, "_measure_eager", broken)
        with pytest.raises(ValueError):
            torchpath.trusted_eager(h, relu, 1, 0)
        monkeypatch.setattr(torchpath, "_measure_eager", lambda h_, task, gpu, slot: 2.5)
        assert torchpath.trusted_eager(h, relu, 1, 0) == 2.5  # measured again, not a cached failure
    finally:
        h.close()
