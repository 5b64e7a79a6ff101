"""Sandboxed PyTorch worker for the torch2cuda track: ``python -m cudaperf.torchworker``.

It speaks the native runner's protocol (commands on fd 3, one-line replies on fd 4) and is
started by the harness through `gpuworker.Runner` with the sandbox launcher (own session,
rlimits, no network, an unprivileged uid when the harness is root, scrubbed environment,
scratch directory as cwd). It runs one of two things:

* ``modelnew``: a KernelBench-format candidate (``class ModelNew``, kernels built with
  ``torch.utils.cpp_extension.load_inline``) -- untrusted code, which is why it lives here
  and never in the harness process;
* ``eager``: the task's own reference ``Model`` only (trusted), to time PyTorch eager.

Commands (paths relative to the cwd):

  build <spec.json>                     read the spec; modelnew: execute the candidate source
                                        (this compiles its extensions; no CUDA work is asked)
  init                                  create the CUDA context -> ``ok <gpu name> <cc>``
  check <test> <in_dir> <out_dir>       build the model(s) for <test>'s sizes, load parameters and
                                        inputs from ``<in_dir>/<name>.bin``, run forward once, write
                                        every output into the pre-sized ``<out_dir>/<name>.bin``
                                        (through a mapping: the file-size limit never blocks it)
                                        -> ``ok <ms> <modified inputs csv|->``
  time <test> <in_dir> <warmup> <reps> <flush 0|1>
                                        CUDA-event times of the candidate's forward and, interleaved,
                                        the reference Model's (eager) on the same inputs
                                        -> ``ok <cand ms csv> <eager ms csv>`` (eager mode: ``ok <eager csv> -``)
  quit

Parameters are the task's data: each ``meta.parameters`` entry (signature name -> module
parameter name) is copied into the module's parameter of that name, so a ModelNew must keep
the reference's parameter names and shapes (a missing one is an error naming it). Any failure
replies ``err <message>``; the worker never decides correctness (the harness compares).
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np


class WorkerError(Exception):
    pass


class Worker:
    def __init__(self) -> None:
        self.spec: dict[str, Any] = {}
        self.task = None
        self.cand_ns: dict[str, Any] | None = None
        self.device = "cpu"
        self.torch = None
        self._flush = None

    # -- commands
    def build(self, spec_path: str) -> str:
        from cudaperf.tasks import task_from_dict

        self.spec = json.loads(Path(spec_path).read_text())
        self.task = task_from_dict(self.spec["task"])
        if self.spec["mode"] == "modelnew":
            src = Path(self.spec["candidate"]).read_text()
            ns: dict[str, Any] = {"__name__": "candidate"}
            try:
                exec(compile(src, "candidate.py", "exec"), ns)  # noqa: S102 - sandboxed by design
            except BaseException as e:  # a compile error of load_inline lands here too
                raise WorkerError(f"building the candidate failed: {type(e).__name__}: {_tail(str(e))}") from None
            if not isinstance(ns.get("ModelNew"), type):
                raise WorkerError("the candidate defines no class ModelNew")
            self.cand_ns = ns
        elif self.spec["mode"] != "eager":
            raise WorkerError(f"unknown mode {self.spec['mode']!r}")
        return "ok"

    def init(self) -> str:
        import torch

        self.torch = torch
        want = self.spec.get("device", "cuda")
        if want == "cuda":
            if not torch.cuda.is_available():
                raise WorkerError("no CUDA device visible")
            torch.cuda.init()
            self.device = "cuda"
            name = torch.cuda.get_device_name(0).replace(" ", "_")
            cc = "%d.%d" % torch.cuda.get_device_capability(0)
            nbytes = int(self.spec.get("flush_bytes", 0))
            if nbytes:
                self._flush = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda")
            return f"ok {name} {cc}"
        self.device = "cpu"
        return "ok cpu -"

    def _models(self, test):
        """(reference Model, ModelNew or None, forward inputs) for the test's sizes."""
        from cudaperf.torchtasks import runtime

        torch, task = self.torch, self.task
        ref_ns = runtime.load_module(task.reference, test.sizes)
        init_args = ref_ns["get_init_inputs"]()
        torch.manual_seed(0)
        with torch.device(self.device):
            ref = ref_ns["Model"](*init_args)
            cand = None
            if self.cand_ns is not None:
                self.cand_ns.update(test.sizes)
                try:
                    cand = self.cand_ns["ModelNew"](*init_args)
                except BaseException as e:
                    raise WorkerError(f"ModelNew(*get_init_inputs()) failed: {type(e).__name__}: {_tail(str(e))}") from None
        return ref, cand

    def _load(self, test, in_dir: str, models) -> list:
        """Copy parameters into every model and return the forward inputs, from the files."""
        from cudaperf.torchtasks.runtime import dims_of

        torch, task = self.torch, self.task
        sig = {p.name: p for p in task.signature}

        def arr(name):
            p = sig[name]
            a = np.fromfile(Path(in_dir) / f"{name}.bin", dtype=p.dtype)
            return torch.from_numpy(a).reshape(dims_of(task, name, test)).to(self.device)

        with torch.no_grad():
            for m in models:
                params = dict(m.named_parameters())
                for cname, mname in task.meta.get("parameters", {}).items():
                    p = params.get(mname)
                    shape = dims_of(task, cname, test)
                    if p is None or tuple(p.shape) != shape:
                        raise WorkerError(f"{type(m).__name__} has no parameter {mname!r} of shape {shape} "
                                          "(a ModelNew must keep the reference's parameter names)")
                    p.copy_(arr(cname))
        return [arr(n) for n in task.meta["inputs"]]

    def check(self, test_name: str, in_dir: str, out_dir: str) -> str:
        torch, task = self.torch, self.task
        test = task.test(test_name)
        ref, cand = self._models(test)
        model = cand if cand is not None else ref
        inputs = self._load(test, in_dir, [model])
        before = [x.clone() for x in inputs]
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model(*inputs)
        if self.device == "cuda":
            torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        names = task.meta["outputs"]
        if len(outs) != len(names):
            raise WorkerError(f"forward returned {len(outs)} outputs, the task has {len(names)}")
        sig = {p.name: p for p in task.signature}
        for n, o in zip(names, outs):
            if not torch.is_tensor(o):
                raise WorkerError(f"output {n} is a {type(o).__name__}, not a tensor")
            f = Path(out_dir) / f"{n}.bin"
            n_el = os.path.getsize(f) // sig[n].dtype.itemsize
            if o.numel() != n_el:
                raise WorkerError(f"output {n} has {o.numel()} elements, the task says {n_el}")
            write_output(torch, o, f, sig[n].dtype)
        modified = [n for n, a, b in zip(task.meta["inputs"], inputs, before) if not torch.equal(a, b)]
        return f"ok {ms:.6f} {','.join(modified) or '-'}"

    def time(self, test_name: str, in_dir: str, warmup: str, reps: str, flush: str) -> str:
        torch, task = self.torch, self.task
        test = task.test(test_name)
        ref, cand = self._models(test)
        models = [m for m in (cand, ref) if m is not None]
        inputs = self._load(test, in_dir, models)
        times: list[list[float]] = [[] for _ in models]
        with torch.no_grad():
            for i in range(int(warmup) + int(reps)):
                for k, m in enumerate(models):
                    ms = self._timed(lambda m=m: m(*inputs), flush == "1")
                    if i >= int(warmup):
                        times[k].append(ms)
        csv = [",".join(f"{x:.6f}" for x in t) for t in times]
        return f"ok {csv[0]} {csv[1] if len(csv) > 1 else '-'}"

    def _timed(self, fn, flush: bool) -> float:
        torch = self.torch
        if self.device != "cuda":
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        if flush and self._flush is not None:
            self._flush.zero_()  # evict the L2 so every repetition starts cold
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        return a.elapsed_time(b)


# Bytes of one output window copied to the host and mapped at a time. A whole-output copy made a
# KernelBench level-1 matmul's 4 GiB output cost 16 GiB of resident memory (a float64 copy, its
# cast and the mapped file), over the worker's watchdog limit (H100, session 28): windows keep it
# to a few hundred MiB whatever the output's size.
WRITE_WINDOW_BYTES = 256 << 20


def write_output(torch, out, path: Path, dtype: np.dtype) -> None:
    """Write tensor `out` (any device, shape and dtype) into the pre-sized file `path` as `dtype`,
    window by window through a mapping (a mapping, not write(): the file-size limit of the sandbox
    would stop a write past it even inside a pre-sized file). Each window is cast on the tensor's
    device, copied to the host, mapped, flushed and unmapped before the next."""
    dtype = np.dtype(dtype)
    tdtype = torch.from_numpy(np.empty(0, dtype=dtype)).dtype
    flat = out.detach().reshape(-1)
    step = max(1, WRITE_WINDOW_BYTES // dtype.itemsize)
    for start in range(0, flat.numel(), step):
        part = flat[start:start + step].to(dtype=tdtype).cpu().numpy()
        mm = np.memmap(path, dtype=dtype, mode="r+", offset=start * dtype.itemsize, shape=(part.size,))
        mm[:] = part
        mm.flush()
        del mm


def _tail(s: str, n: int = 1500) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else "..." + s[-n:]


def serve(cmd_fd: int = 3, rep_fd: int = 4) -> int:
    w = Worker()
    inp = os.fdopen(cmd_fd, "r")
    out = os.fdopen(rep_fd, "w", buffering=1)
    for line in inp:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "quit":
            out.write("ok\n")
            break
        try:
            fn = {"build": w.build, "init": w.init, "check": w.check, "time": w.time}.get(parts[0])
            if fn is None:
                raise WorkerError(f"unknown command {parts[0]!r}")
            reply = fn(*parts[1:])
        except WorkerError as e:
            reply = f"err {e}"
        except BaseException as e:  # the candidate's exception, a CUDA error, ...
            print(traceback.format_exc()[-4000:], file=sys.stderr)
            reply = f"err {type(e).__name__}: {_tail(str(e), 500)}"
        out.write(reply.replace("\n", " ") + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(serve())
