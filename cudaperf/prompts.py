"""The one place that owns the policy's text: SFT, GRPO and evaluation all build prompts here.

Guarantees:
- `task_prompt(task)` is a pure function of the task: the same task always gives the same
  messages (system + user), so a policy trained on SFT data sees exactly the prompt GRPO and
  evaluation show it. It states the candidate contract of DESIGN §3 (an ``extern "C"`` entry,
  every pointer a device pointer, no host copies), the serial reference, the signature with
  each parameter's role and shape, and the sizes the candidate is checked and timed at.
- `completion_for(code)` is the assistant answer format (one fenced ```cuda block) and
  `cudaperf.rewards.extract_code(completion_for(c))` gives back ``c`` (stripped, one newline).
- `feedback_message(result)` states only what the `EvalResult` holds: trimmed compiler errors,
  the first failing configuration with its error size, speedup and CV when they were measured,
  flags, and structural hints derived from the static features. It never invents a number: a
  field that is None is not mentioned. Text that came from the candidate (compiler output,
  runner output) is length-capped, so hostile code cannot flood the next prompt.
- `refine_prompt(task, attempt_code, result)` is the multi-turn form: the task prompt, the
  previous attempt as the assistant's turn, and the feedback as the next user turn.
"""
from __future__ import annotations

import math
import re
from typing import Any, Sequence

from cudaperf.result import EvalResult
from cudaperf.rewards import timing_cv
from cudaperf.tasks import Task

Message = dict[str, str]

SYSTEM_PROMPT = (
    "You translate serial programs into fast CUDA. Reply with one complete CUDA C++ translation "
    "unit in a single ```cuda code block.\n"
    "Contract:\n"
    "- Define extern \"C\" void <entry>(...) with exactly the given parameters, in order.\n"
    "- Every pointer argument is a DEVICE pointer; the data is already on the GPU. Launch your own "
    "kernels; choose grid, block, number of kernels and any scratch memory (cudaMalloc/cudaFree).\n"
    "- Do not copy data between host and device, print, read files or keep results between calls.\n"
    "- The outputs must match the serial reference for every size, including sizes that are not a "
    "multiple of the block size and size 1. Then: the faster the better."
)

_ROLE_TEXT = {
    "in": "input",
    "out": "output",
    "inout": "input and output (updated in place)",
    "scalar": "scalar input, by value",
    "size": "size, by value",
}

# Structural hints: (feature, predicate, text). Thresholds are deliberately coarse: they say
# where to look, the speed number says whether it mattered.
_HINTS: list[tuple[str, Any, str]] = [
    ("coal", lambda v: v < 0.8,
     "global memory accesses look poorly coalesced (coal {v:.2f}); let consecutive threads touch "
     "consecutive addresses"),
    ("occ", lambda v: v < 0.5,
     "theoretical occupancy is low ({v:.2f}); use fewer registers or less shared memory per block, "
     "or another block size"),
    ("div", lambda v: v >= 1,
     "{v:g} thread-dependent branch(es) beyond the bounds guard (divergence)"),
    ("xfer", lambda v: v > 0,
     "{v:g} host<->device copies: the data is already on the device, remove them"),
    ("atomics", lambda v: v >= 8,
     "many atomic operations per thread ({v:g}, loop-weighted); reduce in registers or shared "
     "memory first"),
    ("tpb", lambda v: v < 64 or v % 32 != 0,
     "{v:g} threads per block; use a multiple of 32, usually 128-512"),
    ("kernels", lambda v: v >= 8,
     "{v:g} kernel launches per call (loop-weighted); fuse work into fewer kernels"),
]

MAX_COMPILE_ERRORS = 4
MAX_COMPILE_CHARS = 1200
MAX_DETAIL_CHARS = 300


# --------------------------------------------------------------------------- task prompt


def _signature_text(task: Task) -> str:
    args = ", ".join(f"{p.ctype} {p.name}" for p in task.signature)
    return f'extern "C" void {task.entry}({args})'


def _param_lines(task: Task) -> list[str]:
    lines = []
    for p in task.signature:
        role = _ROLE_TEXT.get(p.role, p.role)
        if p.is_pointer:
            lines.append(f"- {p.name} ({p.ctype}): {role}, {p.shape} elements, device pointer")
        else:
            lines.append(f"- {p.name} ({p.ctype}): {role}")
    return lines


def _sizes_text(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "fixed shapes"


def task_user_text(task: Task) -> str:
    """The user turn of `task_prompt` (the reference, signature and sizes)."""
    lang = "C" if task.track == "c2cuda" else "PyTorch"
    ref = task.reference.strip()
    checked = [t for t in task.tests if not t.perf]
    perf = task.perf_test
    parts = [
        f"Translate this serial {lang} program into CUDA.",
        f"```{'c' if lang == 'C' else 'python'}\n{ref}\n```",
        f"Entry point: {_signature_text(task)}",
        "Parameters:",
        *_param_lines(task),
    ]
    if checked:
        parts.append("Checked at: " + "; ".join(_sizes_text(t.sizes) for t in checked))
    parts.append(f"Timed at: {_sizes_text(perf.sizes)}")
    return "\n".join(parts)


def task_prompt(task: Task) -> list[Message]:
    """[system, user] messages asking for a CUDA translation of `task`."""
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": task_user_text(task)}]


def completion_for(code: str) -> str:
    """The assistant's answer for a translation unit: one fenced ```cuda block."""
    return f"```cuda\n{code.strip()}\n```"


# --------------------------------------------------------------------------- feedback


def _clip(text: Any, n: int) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= n else s[: n - 3] + "..."


def trim_compile_log(log: str, max_errors: int = MAX_COMPILE_ERRORS,
                     max_chars: int = MAX_COMPILE_CHARS) -> str:
    """The first few compiler errors with their source line and caret, paths reduced to names.

    nvcc prints ``file(line): error: ...`` followed by the offending line and a caret; warnings
    and the trailing summary are dropped, because they crowd out the errors that matter.
    """
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln) for ln in str(log).splitlines()]
    lines = [re.sub(r"(?:/[^\s/():]+)+/([^\s/():]+)", r"\1", ln) for ln in lines]
    blocks: list[str] = []
    i = 0
    while i < len(lines) and len(blocks) < max_errors:
        ln = lines[i]
        if re.search(r"\berror\b", ln, re.IGNORECASE) and "errors detected" not in ln \
                and not ln.startswith("nvcc exit code"):
            block = [ln.rstrip()]
            j = i + 1
            # nvcc's context: the source line and the caret line that follow an error.
            while j < len(lines) and j <= i + 2 and lines[j].strip() and "error" not in lines[j]:
                block.append(lines[j].rstrip())
                j += 1
            blocks.append("\n".join(block))
            i = j
        else:
            i += 1
    if not blocks:  # no recognisable error line (a linker or toolchain failure): show the tail
        tail = "\n".join(ln for ln in lines if ln.strip())[-max_chars:]
        return tail
    text = "\n".join(blocks)
    more = sum(1 for ln in lines if re.search(r"\berror\b", ln) and "errors detected" not in ln
               and not ln.startswith("nvcc exit code")) - len(blocks)
    if more > 0:
        text += f"\n({more} more error(s) not shown)"
    return text if len(text) <= max_chars else text[: max_chars - 4] + "\n..."


def _failure_text(f: dict[str, Any]) -> str:
    reason = f.get("reason", "failure")
    where = []
    if f.get("test"):
        where.append(f"configuration {f['test']!r}")
    if f.get("sizes"):
        where.append(f"({_sizes_text(f['sizes'])})")
    head = " ".join(where) or f"stage {f.get('stage', '?')}"
    if f.get("stage") == "recheck":
        head += " on fresh inputs after timing"
    if reason == "mismatch":
        text = f"{head}: output {f.get('param', '?')} is wrong: {_clip(f.get('summary', ''), 240)}"
        ex = f.get("examples") or []
        if ex:
            pairs = ", ".join(f"[{e.get('index')}] expected {e.get('expected')} got {e.get('got')}"
                              for e in ex[:3])
            text += f"; e.g. {_clip(pairs, 240)}"
        return text
    if reason == "input_modified":
        return f"{head}: the candidate wrote to read-only input(s) {', '.join(f.get('params', []))}"
    if reason == "missing_output":
        return f"{head}: output {f.get('param', '?')} was not produced"
    detail = f.get("detail")
    text = f"{head}: {_clip(reason, 120)}"
    if detail:
        text += f" ({_clip(detail, MAX_DETAIL_CHARS)})"
    return text


def structural_hints(features: dict[str, Any] | None) -> list[str]:
    """Hints from the static features phi(y) (cudaperf.features); unknown or missing values give none."""
    if not features or not isinstance(features, dict):
        return []
    out = []
    for name, bad, text in _HINTS:
        v = features.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and bad(v):
            out.append(text.format(v=v))
    return out


def _spill_hint(resources: dict[str, Any] | None) -> str | None:
    spills = [k for k, r in (resources or {}).items()
              if isinstance(r, dict) and (r.get("spill_stores") or r.get("spill_loads"))]
    if spills:
        return f"register spills in {', '.join(_clip(s, 60) for s in spills[:3])}"
    return None


def feedback_message(result: EvalResult) -> str:
    """What the harness found about the last attempt, as the next user turn's text."""
    r = result
    lines: list[str] = []
    if r.status == "invalid":
        lines.append(f"The attempt was rejected before compiling: {_clip(r.message or 'invalid', 200)}.")
    elif not r.compiled:
        lines.append("The attempt did not compile. nvcc reported:")
        lines.append(trim_compile_log(r.compile_log) or "(no compiler output)")
    elif r.status == "compiled":
        lines.append("The attempt compiled. Correctness and speed were not measured (no GPU).")
    elif r.status == "crashed" and not r.failures:
        lines.append(f"The attempt crashed: {_clip(r.message or 'no detail', 240)}.")
    elif not r.correct:
        verb = "crashed" if r.status == "crashed" else "is wrong"
        if r.pass_rate is not None and r.pass_rate < 1:
            lines.append(f"The attempt compiled but {verb}: it passed {r.pass_rate:.0%} of the "
                         "test configurations.")
        else:
            lines.append(f"The attempt compiled but {verb}.")
        for f in r.failures[:2]:
            lines.append("- " + _failure_text(f))
    else:
        lines.append("The attempt is correct on every test configuration.")
        if r.speedup is not None:
            s = f"Speedup over the naive CUDA version: {r.speedup:.2f}x"
            cv = timing_cv(r)  # what R_cv reads by default
            if cv is not None:
                s += f" (timing variation {100 * cv:.1f}%)"
            lines.append(s + ".")
        if r.runtime_ms is not None:
            lines.append(f"Runtime at the timed size: {r.runtime_ms:.4g} ms.")
    hacks = [f for f in r.flags if f.startswith("hack:")]
    if hacks:
        lines.append("Flagged: " + ", ".join(h.split(":", 1)[1] for h in hacks)
                     + " (no speed reward for flagged code).")
    hints = structural_hints(r.features) if r.compiled else []
    spill = _spill_hint(r.resources) if r.compiled else None
    if spill:
        hints.append(spill)
    if hints:
        lines.append("Structure: " + "; ".join(hints) + ".")
    return "\n".join(lines)


REVISE = ("Revise the code: fix what failed, otherwise make it faster. Reply with the complete "
          "translation unit in one ```cuda block.")


def refine_prompt(task: Task, attempt_code: str, result: EvalResult,
                  history: Sequence[tuple[str, EvalResult]] = ()) -> list[Message]:
    """Multi-turn prompt: task, earlier (attempt, feedback) turns, the last attempt and its feedback."""
    msgs = task_prompt(task)
    for code, res in [*history, (attempt_code, result)]:
        msgs.append({"role": "assistant", "content": completion_for(code)})
        msgs.append({"role": "user", "content": feedback_message(res) + "\n" + REVISE})
    return msgs


__all__ = ["REVISE", "SYSTEM_PROMPT", "completion_for", "feedback_message", "refine_prompt",
           "structural_hints", "task_prompt", "task_user_text", "trim_compile_log"]
