"""Running a torch2cuda task's reference module on the harness's buffers (CPU or GPU).

Guarantees: `load_module(task, sizes)` executes the module source in a fresh namespace whose
module-level size names are then rebound to `sizes` (get_inputs / get_init_inputs read them at
call time), so one source serves every test configuration. `reference_outputs` copies the
given flat arrays into the forward inputs and the module parameters (by `meta.parameters`),
runs forward under `torch.no_grad()` and returns each output flattened, in signature order; a
shape mismatch between the task's signature and the module raises `TaskError`. The module
source is trusted task data (generated here or taken from KernelBench), not model output.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf.tasks import Task, TaskError, TestConfig, eval_expr


def load_module(source: str, sizes: dict[str, int] | None = None) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "torch2cuda_reference"}
    exec(compile(source, "<torch2cuda reference>", "exec"), ns)  # trusted task data, see docstring
    for k, v in (sizes or {}).items():
        ns[k] = v
    for need in ("Model", "get_inputs", "get_init_inputs"):
        if need not in ns:
            raise TaskError(f"reference module defines no {need}")
    return ns


def dims_of(task: Task, name: str, test: TestConfig) -> tuple[int, ...]:
    return tuple(int(eval_expr(d, task.env(test))) for d in task.meta["shapes"][name])


def instantiate(task: Task, test: TestConfig, seed: int = 0, device: str = "cpu"):
    """(model, inputs) exactly as the module builds them for this test's sizes."""
    import torch

    ns = load_module(task.reference, test.sizes)
    torch.manual_seed(seed)
    with torch.device(device):
        model = ns["Model"](*ns["get_init_inputs"]())
        inputs = ns["get_inputs"]()
    # KernelBench calls the module in its default (training) mode; so do we
    return model, list(inputs)


def reference_outputs(task: Task, test: TestConfig, arrays: dict[str, np.ndarray],
                      device: str = "cpu", double: bool = False) -> dict[str, np.ndarray]:
    """Outputs of the module for the given input/parameter buffers (flat numpy arrays).

    With `double`, floating parameters, buffers and inputs are promoted to float64 first (the
    harness' reference precision, as for the C track); outputs are then float64."""
    import torch

    model, inputs = instantiate(task, test, device=device)
    if double:
        model = model.double()
        inputs = [x.double() if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs]
    names = task.meta["inputs"]
    if len(names) != len(inputs):
        raise TaskError(f"task {task.task_id}: module has {len(inputs)} inputs, signature {len(names)}")
    args = []
    for n, ref in zip(names, inputs):
        shape = dims_of(task, n, test)
        if tuple(ref.shape) != shape:
            raise TaskError(f"task {task.task_id}: input {n} is {tuple(ref.shape)} in the module, {shape} in the task")
        args.append(torch.as_tensor(np.asarray(arrays[n])).reshape(shape).to(device=device, dtype=ref.dtype))
    params = dict(model.named_parameters())
    with torch.no_grad():
        for cname, mname in task.meta["parameters"].items():
            p = params[mname]
            shape = dims_of(task, cname, test)
            if tuple(p.shape) != shape:
                raise TaskError(f"task {task.task_id}: parameter {mname} is {tuple(p.shape)}, task says {shape}")
            p.copy_(torch.as_tensor(np.asarray(arrays[cname])).reshape(shape))
        res = model(*args)
    res = list(res) if isinstance(res, (tuple, list)) else [res]
    outs = task.meta["outputs"]
    if len(res) != len(outs):
        raise TaskError(f"task {task.task_id}: module returns {len(res)} outputs, signature {len(outs)}")
    got = {}
    for n, r in zip(outs, res):
        want = int(np.prod(dims_of(task, n, test)))
        if r.numel() != want:
            raise TaskError(f"task {task.task_id}: output {n} has {r.numel()} elements, task says {want}")
        got[n] = r.detach().cpu().reshape(-1).numpy()
    return got
