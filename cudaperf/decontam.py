"""Decontamination of torch2cuda tasks against KernelBench (levels 1-3).

Guarantees:

* `signature_of(code)` normalises a KernelBench-format module to (operator sequence, input
  shapes, method). The operator sequence comes from `torch.fx.symbolic_trace` of
  `Model(*get_init_inputs())` built on the meta device (no memory is allocated, so level-3
  networks trace on a laptop); where tracing fails (data-dependent control flow) it falls
  back to an AST walk of `forward()` in evaluation order (arguments before the call), with
  `self.<name>` calls resolved through the `nn.<Module>` assigned in `__init__`. Aliases are
  folded (torch.relu / F.relu / nn.ReLU / relu_ -> "relu"; operator.add / x + y -> "add";
  nn.Linear / F.linear -> "linear"), and shape-only ops (size, view, getitem, ...) are dropped,
  so two spellings of one computation compare equal. Shapes are those `get_inputs()` builds.
* `decontaminate(tasks, problems)` drops every task whose operator sequence AND input shapes
  equal those of some problem, and returns a report (names and ids only, no KernelBench code):
  the drops, tasks with the same operator sequence but other shapes, and per task its nearest
  problem by edit distance between operator sequences.

The module code is executed (it is trusted benchmark/task data, not model output).
"""
from __future__ import annotations

import ast
import collections
from dataclasses import dataclass
from typing import Any, Iterable

IGNORE = {"size", "view", "reshape", "getitem", "getattr", "contiguous", "dim", "flatten", "unsqueeze",
          "squeeze", "expand", "expand_as", "to", "float", "type_as", "clone", "detach", "shape",
          "permute", "transpose", "t", "view_as", "unflatten", "chunk", "split", "numel", "cuda", "cpu",
          "range", "len", "super", "tuple", "list", "int", "float_", "device", "dtype", "ones", "zeros",
          "ones_like", "zeros_like", "tril", "triu", "arange", "full", "empty", "randn", "rand", "new_zeros",
          "new_ones", "stack", "cat"}
ALIASES = {
    "iadd": "add", "__add__": "add", "radd": "add", "__radd__": "add", "sub": "sub", "isub": "sub", "__sub__": "sub",
    "rsub": "sub", "__rsub__": "sub", "mul": "mul", "imul": "mul", "__mul__": "mul", "__rmul__": "mul",
    "truediv": "div", "itruediv": "div", "__truediv__": "div", "div": "div", "floordiv": "div",
    "neg": "neg", "pow": "pow", "__pow__": "pow", "matmul": "matmul", "__matmul__": "matmul", "mm": "matmul",
    "bmm": "matmul", "einsum": "matmul", "amax": "max", "amin": "min", "silu": "silu", "swish": "silu",
    "maximum": "max", "minimum": "min", "clip": "clamp", "clamp_min": "clamp", "clamp_max": "clamp",
    "sigmoid": "sigmoid", "hardtanh": "hardtanh", "layernorm": "layer_norm", "batchnorm2d": "batch_norm",
    "batchnorm1d": "batch_norm", "batchnorm3d": "batch_norm", "scaled_dot_product_attention": "sdpa",
    "logsoftmax": "log_softmax", "softmax2d": "softmax", "vector_norm": "norm", "linalg_vector_norm": "norm",
    "mseloss": "mse_loss", "crossentropyloss": "cross_entropy", "leakyrelu": "leaky_relu", "relu6": "relu6",
    "hardsigmoid": "hardsigmoid", "hardswish": "hardswish", "gelu": "gelu", "elu": "elu", "selu": "selu",
    "identity": "", "dropout": "", "dropout2d": "", "sequential": "",
}


def canon(name: str) -> str:
    """One canonical operator name ("" for ops that compute nothing)."""
    n = name.strip().lower().split(".")[-1]
    if n.startswith("__") and n.endswith("__") and n not in ALIASES:
        n = n.strip("_")
    if n.endswith("_") and not n.startswith("_"):
        n = n[:-1]  # in-place variant
    n = ALIASES.get(n, n)
    return "" if n in IGNORE else n


@dataclass
class OpSignature:
    ops: tuple[str, ...]
    shapes: tuple[tuple, ...]
    method: str  # "fx" | "ast"


def _exec(code: str) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "kb_module"}
    exec(compile(code, "<module>", "exec"), ns)  # trusted benchmark data, see module docstring
    return ns


def _fx_ops(model) -> list[str]:
    import torch.fx

    gm = torch.fx.symbolic_trace(model)
    ops = []
    for node in gm.graph.nodes:
        if node.op == "call_module":
            name = type(gm.get_submodule(node.target)).__name__
        elif node.op == "call_function":
            name = getattr(node.target, "__name__", str(node.target))
        elif node.op == "call_method":
            name = str(node.target)
        else:
            continue
        c = canon(name)
        if c:
            ops.append(c)
    return ops


_BINOP = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.MatMult: "matmul",
          ast.Pow: "pow", ast.FloorDiv: "div"}


def ast_ops(code: str) -> list[str]:
    """Operator sequence from the source of Model.forward (fallback when fx cannot trace)."""
    tree = ast.parse(code)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if cls is None:
        return []
    submods: dict[str, str] = {}
    fwd = None
    for f in cls.body:
        if isinstance(f, ast.FunctionDef) and f.name == "__init__":
            for st in ast.walk(f):
                if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call):
                    for tgt in st.targets:
                        if isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) and tgt.value.id == "self":
                            fn = st.value.func
                            submods[tgt.attr] = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
        if isinstance(f, ast.FunctionDef) and f.name == "forward":
            fwd = f
    if fwd is None:
        return []
    ops: list[str] = []

    class V(ast.NodeVisitor):
        def visit_Call(self, node):
            for a in node.args:
                self.visit(a)
            for k in node.keywords:
                self.visit(k.value)
            fn = node.func
            if isinstance(fn, ast.Attribute):
                self.visit(fn.value)
                if isinstance(fn.value, ast.Name) and fn.value.id == "self":
                    name = submods.get(fn.attr, fn.attr)
                else:
                    name = fn.attr
            elif isinstance(fn, ast.Name):
                name = fn.id
            else:
                self.visit(fn)
                return
            c = canon(name)
            if c:
                ops.append(c)

        def visit_BinOp(self, node):
            self.visit(node.left)
            self.visit(node.right)
            ops.append(_BINOP.get(type(node.op), type(node.op).__name__.lower()))

        def visit_AugAssign(self, node):
            self.visit(node.value)
            ops.append(_BINOP.get(type(node.op), type(node.op).__name__.lower()))

        def visit_UnaryOp(self, node):
            self.visit(node.operand)
            if isinstance(node.op, ast.USub):
                ops.append("neg")

    for st in fwd.body:
        V().visit(st)
    return ops


def signature_of(code: str, sizes: dict[str, int] | None = None) -> OpSignature:
    import torch

    try:
        ns = _exec(code)
    except Exception:  # noqa: BLE001 - e.g. a dependency missing here: ops only, shapes unknown
        return OpSignature(tuple(ast_ops(code)), (), "ast_noexec")
    for k, v in (sizes or {}).items():
        ns[k] = v
    with torch.device("meta"):
        inputs = ns["get_inputs"]()
        shapes = tuple(tuple(int(s) for s in x.shape) if isinstance(x, torch.Tensor) else ("scalar", repr(x))
                       for x in inputs)
        try:
            model = ns["Model"](*ns["get_init_inputs"]())
            return OpSignature(tuple(_fx_ops(model)), shapes, "fx")
        except Exception:  # noqa: BLE001 - any tracing failure -> static fallback
            return OpSignature(tuple(ast_ops(code)), shapes, "ast")


def edit_distance(a: Iterable[str], b: Iterable[str]) -> int:
    a, b = list(a), list(b)
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def kernelbench_signatures(problems) -> tuple[list[tuple[Any, OpSignature]], list[dict]]:
    """[(problem, signature)] and the problems that could not be analysed (with the reason)."""
    sigs, failed = [], []
    for p in problems:
        try:
            sigs.append((p, signature_of(p.code)))
        except Exception as e:  # noqa: BLE001 - recorded, reported
            failed.append({"level": p.level, "problem_id": p.problem_id, "name": p.name,
                           "error": f"{type(e).__name__}: {str(e)[:120]}"})
    return sigs, failed


def decontaminate(tasks: list, problems, *, nearest_rows: int = 60) -> tuple[list, dict[str, Any]]:
    """(kept tasks, report); see the module docstring."""
    kb, failed = kernelbench_signatures(problems)
    by_ops: dict[tuple, list] = collections.defaultdict(list)
    for p, s in kb:
        by_ops[s.ops].append((p, s))
    kept, dropped, same_ops, nearest = [], [], [], []
    methods = collections.Counter()
    for t in tasks:
        s = signature_of(t.reference)
        methods[s.method] += 1
        pid = lambda p: {"level": p.level, "problem_id": p.problem_id, "name": p.name}
        exact = [p for p, ps in by_ops.get(s.ops, []) if ps.shapes == s.shapes]
        if exact:
            dropped.append({"task_id": t.task_id, "ops": list(s.ops), **pid(exact[0])})
            continue
        kept.append(t)
        if s.ops in by_ops:
            p = by_ops[s.ops][0][0]
            same_ops.append({"task_id": t.task_id, "ops": list(s.ops), **pid(p)})
        best = min(((edit_distance(s.ops, ps.ops), p) for p, ps in kb), key=lambda x: x[0], default=None)
        if best is not None:
            nearest.append({"task_id": t.task_id, "distance": best[0], "ops": list(s.ops), **pid(best[1])})
    nearest.sort(key=lambda r: (r["distance"], r["task_id"]))
    hist = collections.Counter(r["distance"] for r in nearest)
    report = {
        "n_tasks_in": len(tasks), "n_tasks_kept": len(kept), "n_kernelbench": len(kb) + len(failed),
        "kernelbench_analysed": len(kb), "kernelbench_failed": failed,
        "kernelbench_methods": dict(collections.Counter(s.method for _, s in kb)),
        "task_methods": dict(methods),
        "rule": "drop a task when its operator sequence and its input shapes equal a KernelBench problem's",
        "dropped": dropped, "same_ops_different_shapes": same_ops,
        "nearest_distance_histogram": {str(k): v for k, v in sorted(hist.items())},
        "nearest": nearest[:nearest_rows],
    }
    return kept, report
