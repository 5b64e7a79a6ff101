"""Decontamination: operator-sequence normalisation, edit distance, dropping exact overlaps."""
import json
from pathlib import Path

import pytest

from cudaperf.decontam import ast_ops, canon, decontaminate, edit_distance, signature_of
from cudaperf.kernelbench import Problem
from cudaperf.tasks import task_from_dict
from cudaperf.torchtasks import activations

KB = Path("/work/shared/data/kernelbench/kernelbench_l1_l3.jsonl")
ROOT = Path(__file__).resolve().parents[1]

TAIL = """
batch_size = 64
dim = 1000
def get_inputs():
    return [torch.randn(batch_size, dim)]
def get_init_inputs():
    return []
"""
HDR = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def _mod(body: str, init: str = "pass") -> str:
    return HDR + f"""
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        {init}
    def forward(self, x):
        {body}
""" + TAIL


def test_spellings_of_one_computation_compare_equal():
    a = signature_of(_mod("return torch.relu(x) * 2.0"))
    b = signature_of(_mod("return F.relu(x).mul(2.0)"))
    c = signature_of(_mod("return self.act(x) * 2.0", "self.act = nn.ReLU()"))
    assert a.ops == b.ops == c.ops == ("relu", "mul")
    assert a.shapes == ((64, 1000),)
    # shape-only ops vanish
    assert signature_of(_mod("return torch.sigmoid(x.view(-1)).reshape(x.shape)")).ops == ("sigmoid",)


def test_ast_fallback_follows_evaluation_order():
    code = _mod("if x.sum() > 0:\n            x = x + 1\n        return torch.tanh(self.lin(x))",
                "self.lin = nn.Linear(1000, 10)")
    s = signature_of(code)  # data-dependent branch: fx cannot trace it
    assert s.method == "ast"
    assert s.ops == ("sum", "add", "linear", "tanh")
    assert ast_ops("x = 1") == []


def test_canon_aliases():
    assert canon("relu_") == "relu" and canon("ReLU") == "relu" and canon("iadd") == "add"
    assert canon("Linear") == "linear" and canon("view") == "" and canon("__matmul__") == "matmul"


def test_edit_distance():
    assert edit_distance([], []) == 0
    assert edit_distance(["a", "b"], ["a", "b"]) == 0
    assert edit_distance(["a", "b", "c"], ["a", "c"]) == 1
    assert edit_distance(["a"], ["b", "c"]) == 2
    assert edit_distance("kitten", "sitting") == 3


def _task_with_reference(code: str, tid: str):
    base = activations.generate(__import__("random").Random(0))[0]
    base = dict(base, task_id=tid, reference=code)
    return task_from_dict(base)


def test_exact_overlap_is_dropped_and_near_overlap_reported():
    kb_code = _mod("return torch.relu(x)")
    kb = [Problem(1, 19, "ReLU", kb_code), Problem(1, 23, "Softmax", _mod("return torch.softmax(x, dim=1)"))]
    same = _task_with_reference(_mod("return F.relu(x)"), "t/same")          # same ops, same shapes
    other = _task_with_reference(_mod("return torch.relu(x)").replace("dim = 1000", "dim = 999"), "t/shape")
    far = _task_with_reference(_mod("return torch.tanh(torch.relu(x))"), "t/far")
    kept, rep = decontaminate([same, other, far], kb)
    assert [t.task_id for t in kept] == ["t/shape", "t/far"]
    assert rep["dropped"] == [{"task_id": "t/same", "ops": ["relu"], "level": 1, "problem_id": 19, "name": "ReLU"}]
    assert [r["task_id"] for r in rep["same_ops_different_shapes"]] == ["t/shape"]
    near = {r["task_id"]: r for r in rep["nearest"]}
    assert near["t/far"]["distance"] == 1 and near["t/far"]["name"] == "ReLU"
    assert "code" not in json.dumps(rep)  # names and ids only


@pytest.mark.skipif(not KB.exists(), reason="KernelBench reference data not present")
def test_kernelbench_level1_copies_are_caught():
    from cudaperf.kernelbench import load_problems

    probs = [p for p in load_problems(KB, levels=(1,)) if p.problem_id in (19, 23, 100)]
    tasks = [_task_with_reference(p.code, f"copy/{p.problem_id}") for p in probs]
    kept, rep = decontaminate(tasks, probs)
    assert kept == [] and len(rep["dropped"]) == 3


def test_committed_report_matches_rule():
    path = ROOT / "data" / "tasks" / "torch2cuda_decontam.json"
    if not path.exists():
        pytest.skip("dataset not built yet")
    rep = json.loads(path.read_text())
    assert rep["n_kernelbench"] == 250 and rep["n_tasks_kept"] >= 1000
    assert rep["n_tasks_kept"] == rep["n_tasks_in"] - len(rep["dropped"])
    for r in rep["nearest"]:
        assert set(r) == {"task_id", "distance", "ops", "level", "problem_id", "name"}
