"""KernelBench loader (JSONL, checkout, saved dataset, hub name), conversion, ModelNew checks."""
import json
from pathlib import Path

import pytest

from cudaperf import kernelbench
from cudaperf.kernelbench import Problem, convert_all, load_problems, modelnew_source_ok, problem_to_task

KB = Path("/work/shared/data/kernelbench/kernelbench_l1_l3.jsonl")
need_kb = pytest.mark.skipif(not KB.exists(), reason="KernelBench reference data not present")

RELU = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.relu(x)

batch_size = 16
dim = 16384

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
"""
LINEAR = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.fc = nn.Linear(i, o)
    def forward(self, x, y):
        return torch.relu(self.fc(x)) + y, x.sum()

def get_inputs():
    return [torch.randn(8, 32), torch.randn(8, 16)]

def get_init_inputs():
    return [32, 16]
"""
INTS = RELU.replace("torch.randn(batch_size, dim)", "torch.randint(0, 5, (batch_size, dim))")
PROBS = [Problem(1, 19, "ReLU", RELU), Problem(2, 3, "LinearReluAdd", LINEAR), Problem(1, 7, "Ints", INTS)]


def _write_jsonl(path, probs):
    path.write_text("".join(json.dumps(p.__dict__) + "\n" for p in probs))
    return path


def test_jsonl(tmp_path):
    got = load_problems(_write_jsonl(tmp_path / "kb.jsonl", PROBS))
    assert [(p.level, p.problem_id) for p in got] == [(1, 7), (1, 19), (2, 3)]
    assert load_problems(tmp_path / "kb.jsonl", levels=(2,))[0].name == "LinearReluAdd"
    (tmp_path / "bad.jsonl").write_text('{"level": 1}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_problems(tmp_path / "bad.jsonl")


def test_checkout_layout(tmp_path):
    for p in PROBS:
        d = tmp_path / "KernelBench" / f"level{p.level}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{p.problem_id}_{p.name}.py").write_text(p.code)
    (tmp_path / "KernelBench" / "level1" / "README.py").write_text("# not a problem")
    got = load_problems(tmp_path)
    assert sorted(got, key=lambda p: (p.level, p.problem_id)) == sorted(PROBS, key=lambda p: (p.level, p.problem_id))
    with pytest.raises(ValueError):
        load_problems(tmp_path / "KernelBench" / "level9_missing_dir_is_not_a_name")


def test_saved_dataset_and_hub_name(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    dd = datasets.DatasetDict({f"level_{lv}": datasets.Dataset.from_list([p.__dict__ for p in PROBS if p.level == lv])
                               for lv in (1, 2)})
    dd.save_to_disk(str(tmp_path / "saved"))
    got = load_problems(tmp_path / "saved")
    assert {p.name for p in got} == {"ReLU", "LinearReluAdd", "Ints"}
    # a hub name goes through datasets.load_dataset (no network here: serve the saved copy)
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda name: calls.append(name) or datasets.load_from_disk(str(tmp_path / "saved")))
    assert len(load_problems("ScalingIntelligence/KernelBench")) == 3 and calls == ["ScalingIntelligence/KernelBench"]


def test_conversion_signature_and_refusals():
    t, why = problem_to_task(PROBS[1])
    assert why == "ok"
    sig = [(p.name, p.role, p.shape) for p in t.signature]
    assert sig == [("x", "in", "256"), ("y", "in", "128"), ("p_fc_weight", "in", "512"), ("p_fc_bias", "in", "16"),
                   ("out0", "out", "128"), ("out1", "out", "1")]
    assert t.meta["parameters"] == {"p_fc_weight": "fc.weight", "p_fc_bias": "fc.bias"}
    # the converted task's reference runs on the harness's buffers
    from cudaperf.inputs import make_inputs
    from cudaperf.torchtasks.runtime import reference_outputs

    outs = reference_outputs(t, t.tests[0], make_inputs(t, t.tests[0], 0))
    assert outs["out0"].shape == (128,) and outs["out1"].shape == (1,)
    assert problem_to_task(PROBS[2]) == (None, "integer inputs (value range unknown)")
    assert problem_to_task(Problem(1, 1, "Broken", "import nosuchmodule"))[0] is None
    tasks, rep = convert_all(PROBS)
    assert rep.converted == 2 and rep.total == 3 and rep.reasons == {"integer inputs (value range unknown)": 1}


@need_kb
def test_real_kernelbench_file_and_a_converted_sample():
    probs = load_problems(KB)
    assert len(probs) == 250 and {p.level for p in probs} == {1, 2, 3}
    sample = [p for p in probs if (p.level, p.problem_id) in {(1, 19), (1, 1), (2, 1), (1, 100)}]
    tasks, rep = convert_all(sample)
    assert rep.converted == 4
    relu = next(t for t in tasks if t.meta["name"] == "ReLU")
    assert [p.shape for p in relu.signature] == ["1610612736", "1610612736"]  # 4096 x 393216, meta device only
    conv = next(t for t in tasks if t.meta["level"] == 2)
    assert any(p.name.startswith("p_conv") for p in conv.signature)


GOOD = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void relu_k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0 ? x[i] : 0;
}
torch::Tensor relu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    relu_k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline(name="relu_ext", cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
                  cuda_sources=src, functions=["relu_cuda"])

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return ext.relu_cuda(x)
'''


def test_modelnew_good_source_passes():
    r = modelnew_source_ok(GOOD)
    assert r.ok, r.problems
    assert r.info["kernels"] == 1 and r.info["extension_names"] == ["ext"]


@pytest.mark.parametrize("mutate, why", [
    (lambda s: s.replace("import torch\n", "import torch\nimport os\n", 1), "imports os"),
    (lambda s: s.replace("return ext.relu_cuda(x)", "return torch.relu(x)"), "never uses the compiled extension"),
    (lambda s: s.replace("ext = load_inline", "ext = dict").replace('name="relu_ext", ', ""), "no load_inline"),
    (lambda s: s.replace("return ext.relu_cuda(x)", "s = torch.cuda.Stream()\n        return ext.relu_cuda(x)"), "Stream"),
    (lambda s: s.replace("return ext.relu_cuda(x)", "exec('1')\n        return ext.relu_cuda(x)"), "calls exec"),
    (lambda s: s.replace("auto y", 'system("rm -rf /"); auto y'), "system"),
    (lambda s: s.replace("return ext.relu_cuda(x)", "return Model()(x) if False else ext.relu_cuda(x)"), "reference Model"),
    (lambda s: s.replace("return ext.relu_cuda(x)", "return x.__class__.__bases__"), "__bases__"),
    (lambda s: s.replace("class ModelNew", "class Other"), "no top-level class ModelNew"),
    (lambda s: s + "\ndef broken(:\n", "syntax error"),
    (lambda s: s.replace("__global__ void", "void"), "no __global__"),
])
def test_modelnew_adversarial_sources_are_flagged(mutate, why):
    r = modelnew_source_ok(mutate(GOOD))
    assert not r.ok
    assert any(why in p for p in r.problems), r.problems


def test_modelnew_oversized_source():
    assert not modelnew_source_ok(GOOD + "#" * 300_000).ok


def test_selfcheck_summary_counts_references_near_one_and_zeros_rejected():
    rows = [{"task_id": "p1", "candidate": "reference", "status": "correct", "speedup": 0.99, "message": "ok"},
            {"task_id": "p1", "candidate": "zeros", "status": "wrong", "speedup": None, "message": "wrong"},
            {"task_id": "p2", "candidate": "reference", "status": "correct", "speedup": 1.6, "message": "ok"},
            {"task_id": "p2", "candidate": "zeros", "status": "correct", "speedup": 1.0, "message": "fooled"},
            {"task_id": "p3", "candidate": "reference", "status": "wrong", "speedup": None, "message": "mismatch"}]
    s = kernelbench.selfcheck_summary(rows)
    assert (s["problems"], s["reference_correct"], s["reference_total"]) == (3, 2, 3)
    assert s["reference_speedup_within_0.8_1.25"] == 1 and s["reference_speedup_median"] == pytest.approx(1.295)
    assert (s["zeros_rejected"], s["zeros_total"]) == (1, 2)
    assert s["not_correct_reference"] == [("p3", "wrong", "mismatch")]

