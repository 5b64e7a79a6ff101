"""Import BabelTower / QiMeng-MuPa unit-test cases as c2cuda tasks (external evaluation).

A case (one JSON line) holds ``cpp_code`` (the serial C function), ``cuda_code`` (its CUDA
kernel), ``cuda_wrapper`` (a host function that allocates device buffers, copies, launches and
copies back), ``consistent_cpp_inputs`` (C snippets that declare the inputs and call
``wrapper(fn, args...)``) and ``consistent_outputs`` (the arguments printed after each call).

`convert_case(record, index)` returns a validated `Task` or raises `ConversionError` with the
reason; `load_babeltower(path)` converts every case and records rejections in a
`ConversionReport`. What a converted task holds:

* signature from ``cpp_code``; roles from how the C body uses each pointer (assigned and never
  read -> out, assigned and read -> inout, never assigned or ``const`` -> in); by-value integers
  that size a buffer -> size, every other by-value number -> scalar (fixed ``value`` when all
  cases agree, else per-test ``scalars``);
* shapes from the wrapper's allocations (``cudaMalloc``/``malloc``/``new`` byte counts, with the
  wrapper's local variables substituted), as expressions of the size parameters;
* tests ``case1..caseK``: the given inputs, in the order of the file. Their values are NOT
  produced by `cudaperf.inputs` generators: they are stored in
  ``meta["fixed_inputs"][test][param]`` and served by `fixed_inputs(task, test)`; the printed
  results are in ``meta["expected_outputs"][test][param]`` (6 significant digits, as printed).
  Plus one generated ``large`` test (perf): the largest case's sizes with every size parameter
  that bounds a loop of the C code scaled by the largest power of two that keeps all buffers
  under `LARGE_ELEMS` elements; its inputs are drawn by ``init`` generators spanning the range of
  the given values;
* one variant, ``naive``: the case's own kernel, launched by the wrapper's launch code rewritten
  into our candidate contract (``extern "C"`` entry taking DEVICE pointers: allocation, copies
  and frees removed, device copies renamed to the parameters). Harness verification decides
  whether it is correct; the import does not claim it.

Cases are rejected (never patched) when the contract cannot express them: a size read from a
buffer (``N[0]``), a wrapper that launches no kernel or reads a buffer on the host, given arrays
shorter than the buffers the wrapper allocates, non-numeric initialisers, ...
`reference_outputs_fixed` runs the C reference on a fixed-input test through the same sandboxed
runner as `cudaperf.reference`, and `check_expected` compares its outputs with the printed ones.
The BabelTower data itself is never written by this module.
"""
from __future__ import annotations

import json
import math
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cudaperf.families import c_tokens
from cudaperf.tasks import CTYPES, Task, TaskError, TestConfig, eval_expr, task_from_dict

LARGE_ELEMS = 1 << 20
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}
_TYPE_WORDS = {"const", "unsigned", "signed", "int", "float", "double", "long", "short", "char", "bool",
               "size_t", "int32_t", "int64_t", "uint32_t", "uint64_t", "uint8_t", "int8_t", "static"}
_MEM_CALLS = {"cudaMalloc", "cudaMemcpy", "cudaFree", "malloc", "calloc", "free", "memcpy", "new", "delete",
              "cudaMallocManaged", "cudaMemset"}
_C_CONSTS = {"FLT_MAX": float(np.finfo(np.float32).max), "FLT_MIN": float(np.finfo(np.float32).tiny),
             "DBL_MAX": float(np.finfo(np.float64).max), "DBL_MIN": float(np.finfo(np.float64).tiny),
             "INT_MAX": 2**31 - 1, "INT_MIN": -2**31, "FLT_EPSILON": float(np.finfo(np.float32).eps)}
_HEADERS = "#include <cuda_runtime.h>\n#include <cmath>\n#include <cfloat>\n#include <climits>\n#include <cstring>\n"


class ConversionError(ValueError):
    """A case our task contract cannot express; the message is the reason."""


@dataclass
class ConversionReport:
    cases: int = 0
    converted: list[str] = field(default_factory=list)  # task ids
    rejected: list[dict[str, Any]] = field(default_factory=list)  # index, name, reason
    dropped_cases: list[dict[str, Any]] = field(default_factory=list)  # index, test, reason (task kept)


# --------------------------------------------------------------------------- token helpers

def _toks(src: str) -> list[str]:
    return [t for _, t in c_tokens(src)]


def _split_top(toks: list[str], sep: str = ",") -> list[list[str]]:
    out, cur, depth = [], [], 0
    for t in toks:
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
        if t == sep and depth == 0:
            out.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        out.append(cur)
    return out


def _matching(toks: list[str], i: int) -> int:
    """Index of the bracket closing toks[i]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    open_, close, depth = toks[i], pairs[toks[i]], 0
    for j in range(i, len(toks)):
        depth += toks[j] == open_
        depth -= toks[j] == close
        if depth == 0:
            return j
    raise ConversionError(f"unbalanced {open_!r}")


def _function(src: str, want_global: bool | None = None) -> tuple[str, list[list[str]], list[str], str]:
    """(name, parameter token lists, body tokens, return type) of the first function defined."""
    toks = _toks(re.sub(r"^\s*#.*$", "", src, flags=re.M))
    for i, t in enumerate(toks):
        if t == "(" and i > 0 and re.match(r"[A-Za-z_]\w*$", toks[i - 1]):
            j = _matching(toks, i)
            if j + 1 < len(toks) and toks[j + 1] == "{":
                k = _matching(toks, j + 1)
                head = toks[:i - 1]
                if want_global is not None and ("__global__" in head) != want_global:
                    continue
                params = [p for p in _split_top(toks[i + 1:j]) if p and p != ["void"]]
                return toks[i - 1], params, toks[j + 2:k], " ".join(x for x in head if x not in ("__global__", "static", "inline"))
    raise ConversionError("no function definition found")


def _param(ptoks: list[str]) -> tuple[str, str]:
    """(name, ctype) of one parameter declaration."""
    ptoks = [t for t in ptoks if t not in ("__restrict__", "restrict")]
    if len(ptoks) < 2 or not re.match(r"[A-Za-z_]\w*$", ptoks[-1]):
        raise ConversionError(f"unsupported parameter {' '.join(ptoks)!r}")
    if "[" in ptoks or ptoks.count("*") > 1 or "&" in ptoks:
        raise ConversionError(f"unsupported parameter {' '.join(ptoks)!r}")
    name, rest = ptoks[-1], ptoks[:-1]
    ptr = "*" in rest
    base = " ".join(t for t in rest if t not in ("*", "const"))
    if base not in CTYPES:
        raise ConversionError(f"parameter {name}: unsupported type {' '.join(rest)!r}")
    ctype = ("const " if "const" in rest and ptr else "") + base + ("*" if ptr else "")
    return name, ctype


def _c_num(tok: str) -> str:
    """A C numeric literal as Python source."""
    t = tok
    if re.match(r"0[xX]", t):
        return str(int(t.rstrip("uUlL"), 16))
    t = t.rstrip("uUlL")
    if re.search(r"[.eE]", t):
        t = t.rstrip("fF")
        return t + ("0" if t.endswith(".") else "")
    return t


def _eval_c(toks: list[str], env: dict[str, Any]) -> Any:
    """Value of a C constant expression (literals, named constants, + - * / % and parentheses)."""
    parts = []
    for t in toks:
        if re.match(r"\d|\.\d", t):
            parts.append(_c_num(t))
        elif t in _C_CONSTS or t in env:
            parts.append(repr(_C_CONSTS.get(t, env.get(t))))
        elif t in "+-*/%()":
            parts.append(t)
        else:
            raise ConversionError(f"cannot evaluate {' '.join(toks)!r} (token {t!r})")
    try:
        return eval_expr(" ".join(parts) or "None", {})
    except (TaskError, ZeroDivisionError) as e:
        raise ConversionError(f"cannot evaluate {' '.join(toks)!r}: {e}") from None


# --------------------------------------------------------------------------- C code analysis

def _uses(body: list[str], name: str) -> tuple[bool, bool]:
    """(written, read) for pointer `name` in a function body."""
    written = read = False
    for i, t in enumerate(body):
        if t != name:
            continue
        j = i + 1
        if j < len(body) and body[j] == "[":
            j = _matching(body, j) + 1
        elif i > 0 and body[i - 1] == "*" and (i < 2 or body[i - 2] in ("(", ";", "{", "}", ",", "=")):
            pass  # *p
        else:
            read = True
            continue
        nxt = body[j] if j < len(body) else ""
        prev = body[i - 1] if i > 0 else ""
        if nxt in _ASSIGN:
            written = True
            read |= nxt != "="
        elif nxt in ("++", "--") or prev in ("++", "--"):
            written = read = True
        else:
            read = True
    return written, read


def _loop_bound_names(body: list[str]) -> set[str]:
    """Identifiers in the condition of any for loop."""
    out = set()
    for i, t in enumerate(body):
        if t == "for" and i + 1 < len(body) and body[i + 1] == "(":
            head = body[i + 2:_matching(body, i + 1)]
            parts = _split_top(head, ";")
            if len(parts) >= 2:
                out |= {x for x in parts[1] if re.match(r"[A-Za-z_]\w*$", x)}
    return out


def _statements(body: list[str]) -> list[list[str]]:
    """Body tokens split after ';', '{' and '}' (each piece keeps its delimiter)."""
    out, cur, depth = [], [], 0
    for t in body:
        cur.append(t)
        depth += t == "("
        depth -= t == ")"
        if (t == ";" and depth == 0) or t in ("{", "}"):
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def _bytes_to_shape(toks: list[str], itemsize: int) -> list[str]:
    """Element count tokens from a byte-count expression: ``X * sizeof(T)`` -> X, else (..)//k."""
    toks = list(toks)
    while toks[:1] == ["("] and _matching(toks, 0) == len(toks) - 1:
        toks = toks[1:-1]  # ( ( n * n * sizeof(int) ) ) -> n * n * sizeof(int)
    out, i = [], 0
    has_sizeof = False
    while i < len(toks):
        if toks[i] == "sizeof":
            j = _matching(toks, i + 1)
            inner = " ".join(x for x in toks[i + 2:j] if x not in ("const",))
            if inner not in CTYPES:
                raise ConversionError(f"sizeof({inner}) of an unsupported type")
            out.append(str(CTYPES[inner].itemsize))
            has_sizeof = True
            i = j + 1
        else:
            out.append(toks[i])
            i += 1
    if not has_sizeof:
        return out  # already an element count (new T[n])
    top = [t for t, d in zip(out, _depths(out)) if d == 0]
    if top[-1:] == [str(itemsize)] and len(out) >= 2 and out[-2] == "*" and not (set(top) & {"+", "-", "/", "%"}):
        return out[:-2]
    return ["("] + out + [")", "//", str(itemsize)]


def _depths(toks: list[str]) -> list[int]:
    d, out = 0, []
    for t in toks:
        if t == ")":
            d -= 1
        out.append(d)
        if t == "(":
            d += 1
    return out


# --------------------------------------------------------------------------- snippets


def _parse_snippet(src: str) -> tuple[dict[str, Any], list[list[str]]]:
    """({name: value or list}, wrapper argument token lists) of one consistent_cpp_inputs snippet."""
    src = re.sub(r"//[^\n]*|/\*.*?\*/", "", src, flags=re.S)
    toks = _toks(src)
    if "wrapper" not in toks:
        raise ConversionError("input snippet has no wrapper(...) call")
    w = toks.index("wrapper")
    env: dict[str, Any] = {}
    for st in _split_top(toks[:w], ";"):
        if not st:
            continue
        k = 0
        while k < len(st) and st[k] in _TYPE_WORDS:
            k += 1
        if k == 0:
            raise ConversionError(f"unsupported statement before the call: {' '.join(st)[:80]!r}")
        for decl in _split_top(st[k:]):
            name = decl[0]
            if not re.match(r"[A-Za-z_]\w*$", name):
                raise ConversionError(f"unsupported declaration {' '.join(decl)[:80]!r}")
            rest = decl[1:]
            if rest[:1] == ["["]:
                j = _matching(rest, 0)
                size = int(_eval_c(rest[1:j], env)) if j > 1 else None
                init = rest[j + 1:]
                vals: list = []
                if init[:2] == ["=", "{"]:
                    vals = [_eval_c(e, env) for e in _split_top(init[2:_matching(init, 1)])]
                elif init:
                    raise ConversionError(f"unsupported initialiser for {name}")
                n = size if size is not None else len(vals)
                if len(vals) > n:
                    raise ConversionError(f"{name}: more initialisers than elements")
                env[name] = vals + [0] * (n - len(vals))  # C zero-fills the rest
            elif rest[:1] == ["="]:
                env[name] = _eval_c(rest[1:], env)
            else:
                env[name] = None  # declared, uninitialised scalar
    end = _matching(toks, w + 1)
    args = _split_top(toks[w + 2:end])
    return env, args[1:]


def _parse_printed(text: str) -> list[Any]:
    m = re.search(r"Arguments after function call:\s*\((.*)\)\s*$", text.strip(), flags=re.S)
    if not m:
        raise ConversionError("unrecognised expected-output text")
    items, cur, depth = [], "", 0
    for ch in m.group(1):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    items.append(cur.strip())

    def num(s: str) -> float:
        s = s.strip().lower().replace("-nan", "nan")
        return float(s)

    out: list[Any] = []
    for it in items:
        if it.startswith("["):
            body = it.strip("[] ")
            out.append([num(x) for x in body.split(",")] if body else [])
        else:
            try:
                out.append(num(it))
            except ValueError:
                out.append(it)
    return out


# --------------------------------------------------------------------------- conversion


def convert_case(rec: dict[str, Any], index: int, *, large_elems: int = LARGE_ELEMS,
                 dropped: list[dict[str, Any]] | None = None) -> Task:
    """One BabelTower case as a validated Task (see the module docstring); ConversionError if not."""
    entry, ptoks, body, ret = _function(rec["cpp_code"])
    if ret.split()[-1:] != ["void"]:
        raise ConversionError(f"C function returns {ret!r}, not void")
    params = [_param(p) for p in ptoks]
    names = [n for n, _ in params]
    ptr = {n: c.endswith("*") for n, c in params}
    ctype = dict(params)

    # ---- wrapper: map device copies to parameters, find shapes, rewrite into our contract
    wname, wptoks, wbody, _ = _function(rec["cuda_wrapper"])
    wparams = [_param(p) for p in wptoks]
    if len(wparams) != len(params) or any(wc.endswith("*") != ptr[n] for (n, _), (_, wc) in zip(params, wparams)):
        raise ConversionError("wrapper parameters do not match the C function's")
    rename = {wn: n for (wn, _), n in zip(wparams, names)}
    wbody = [rename.get(t, t) for t in wbody]
    if "<<<" not in wbody:
        raise ConversionError("wrapper launches no kernel")
    local_of: dict[str, str] = {}     # device/host copy -> parameter
    alloc: dict[str, list[str]] = {}  # pointer -> element count tokens (before substitution)
    locals_: dict[str, list[str]] = {}
    kept: list[list[str]] = []
    for st in _statements(wbody):
        words = set(st)
        if words & _MEM_CALLS:
            if "cudaMemcpy" in st or "memcpy" in st:
                c = st.index("cudaMemcpy" if "cudaMemcpy" in st else "memcpy")
                args = _split_top(st[c + 2:_matching(st, c + 1)])
                a, b = (args[0][-1:] or [""])[0], (args[1][-1:] or [""])[0]
                if a in names and ptr[a] and b not in names:
                    local_of[b] = a
                elif b in names and ptr[b] and a not in names:
                    local_of[a] = b
            if "cudaMalloc" in st:
                c = st.index("cudaMalloc")
                args = _split_top(st[c + 2:_matching(st, c + 1)])
                alloc[args[0][-1]] = ("bytes", args[1])
            elif "malloc" in st or "calloc" in st:
                c = st.index("malloc" if "malloc" in st else "calloc")
                args = _split_top(st[c + 2:_matching(st, c + 1)])
                nm = next((x for x in st[:st.index("=")] if re.match(r"[A-Za-z_]\w*$", x) and x not in _TYPE_WORDS), None)
                if nm:
                    alloc[nm] = ("bytes", args[-1] if "malloc" in st else args[0] + ["*"] + args[1])
            elif "new" in st and "[" in st:
                nm = next((x for x in st[:st.index("=")] if re.match(r"[A-Za-z_]\w*$", x) and x not in _TYPE_WORDS), None)
                j = st.index("new")
                b = st.index("[", j)
                if nm:
                    alloc[nm] = ("elems", st[b + 1:_matching(st, b)])
            continue
        k = 0
        while k < len(st) and st[k] in _TYPE_WORDS:
            k += 1
        if 0 < k < len(st) and st[k] == "*":
            continue  # declaration of a device/host pointer copy: replaced by the parameter
        if 0 < k and len(st) > k + 1 and st[k + 1] == "=" and st[-1] == ";":
            locals_[st[k]] = st[k + 2:-1]
        kept.append(st)

    def substitute(tks: list[str], depth: int = 0) -> list[str]:
        if depth > 8:
            raise ConversionError("wrapper locals nest too deeply")
        out = []
        for t in tks:
            if t in locals_:
                out += ["("] + substitute(locals_[t], depth + 1) + [")"]
            else:
                out.append(t)
        return out

    shapes: dict[str, str] = {}
    for loc, prm in local_of.items():
        if loc in alloc and prm not in shapes:
            kind, tks = alloc[loc]
            tks = substitute(tks)
            el = _bytes_to_shape(tks, CTYPES[ctype[prm].replace("const ", "").rstrip("*")].itemsize) \
                if kind == "bytes" else tks
            if "[" in el:
                raise ConversionError(f"shape of {prm} depends on buffer contents ({' '.join(el)})")
            bad = [x for x in el if re.match(r"[A-Za-z_]", x) and not (x in names and not ptr[x])]
            if bad:
                raise ConversionError(f"shape of {prm} uses {bad}, not by-value parameters")
            shapes[prm] = " ".join("//" if x == "/" else x for x in el)
    for n in names:
        if ptr[n] and n not in shapes:
            raise ConversionError(f"no allocation of a device copy of {n} in the wrapper")
    size_params = {x for s in shapes.values() for x in s.split() if x in names}

    # ---- roles
    roles = {}
    for n in names:
        if ptr[n]:
            w, r = _uses(body, n)
            roles[n] = "in" if (not w or ctype[n].startswith("const")) else ("inout" if r else "out")
        else:
            roles[n] = "size" if n in size_params else "scalar"
        if roles[n] == "size" and CTYPES[ctype[n]].kind not in "iu":
            raise ConversionError(f"size parameter {n} is not an integer")
    if not any(roles[n] in ("out", "inout") for n in names):
        raise ConversionError("the C function writes no buffer")

    # ---- entry: the wrapper's launch code with device copies renamed to the parameters
    kname = _function(rec["cuda_code"], want_global=True)[0]
    kernel_src = rec["cuda_code"]
    new_kname = kname
    if kname == entry:
        new_kname = f"{kname}_kernel"
        kernel_src = " ".join(new_kname if t == kname else t for t in _toks(kernel_src))
    ebody = []
    for st in kept:
        st = [local_of.get(t, new_kname if t == kname else t) for t in st]
        for i, t in enumerate(st):
            if t in names and ptr[t] and i + 1 < len(st) and st[i + 1] == "[" and "<<<" not in st:
                raise ConversionError(f"wrapper reads buffer {t} on the host")
            if t in names and ptr[t] and "<<<" in st and i + 1 < len(st) and st[i + 1] == "[" \
                    and st.index("<<<") < i < st.index(">>>"):
                raise ConversionError(f"launch configuration reads buffer {t} on the host")
        leftover = [t for t in st if t in alloc and t not in local_of]
        if leftover:
            raise ConversionError(f"wrapper uses unmapped buffer {leftover[0]}")
        ebody.append(st)
    sig_text = ", ".join(f"{ctype[n]} {n}" for n in names)
    body_text = "\n    ".join(" ".join(st) for st in ebody)
    naive = (_HEADERS + "\n" + kernel_src + "\n\n" + f'extern "C" void {entry}({sig_text}) {{\n    {body_text}\n}}\n')

    # ---- cases
    outputs_txt = rec.get("consistent_outputs") or []
    snippets = rec.get("consistent_cpp_inputs") or []
    if not snippets or len(snippets) != len(outputs_txt):
        raise ConversionError("inputs and printed outputs do not pair up")
    sig = [{"name": n, "ctype": ctype[n], "role": roles[n], **({"shape": shapes[n]} if ptr[n] else {})} for n in names]
    probe = task_from_dict({"task_id": "probe", "track": "c2cuda", "family": "babeltower", "entry": entry,
                            "signature": sig, "reference": rec["cpp_code"],
                            "tests": [{"name": "p", "sizes": {s: 1 for s in size_params}}]})
    cases, reasons = [], []
    for ci, (snip, otxt) in enumerate(zip(snippets, outputs_txt)):
        try:
            cases.append(_case(snip, otxt, names, ptr, roles, probe))
        except (ConversionError, TaskError) as e:
            reasons.append(f"case {ci + 1}: {e}")
            if dropped is not None:
                dropped.append({"index": index, "test": f"case{ci + 1}", "reason": str(e)})
            cases.append(None)
    if not any(cases):
        raise ConversionError("no usable case: " + "; ".join(reasons))

    tests, fixed, expected = [], {}, {}
    scalar_vals: dict[str, set] = {n: set() for n in names if roles[n] == "scalar"}
    for ci, c in enumerate(cases):
        if c is None:
            continue
        for n in scalar_vals:
            scalar_vals[n].add(c["scalars"][n])
    for ci, c in enumerate(cases):
        if c is None:
            continue
        tname = f"case{ci + 1}"
        tests.append({"name": tname, "sizes": c["sizes"],
                      "scalars": {n: c["scalars"][n] for n in scalar_vals if len(scalar_vals[n]) > 1}})
        fixed[tname] = c["arrays"]
        expected[tname] = c["expected"]
    for p in sig:
        if p["role"] == "scalar" and len(scalar_vals[p["name"]]) == 1:
            p["value"] = next(iter(scalar_vals[p["name"]]))
        if p["role"] in ("in", "inout"):
            p["init"] = _init_from(p["ctype"], [v for f in fixed.values() for v in f[p["name"]]])

    # ---- generated larger test
    usable = [c for c in cases if c is not None]
    base = max(usable, key=lambda c: probe.numel_total(TestConfig("b", c["sizes"])))
    grow = (_loop_bound_names(body) & size_params) or size_params
    k = 1
    while k < (1 << 20):
        sizes = {s: v * (2 * k) if s in grow else v for s, v in base["sizes"].items()}
        if probe.numel_total(TestConfig("l", sizes)) > large_elems:
            break
        k *= 2
    if k == 1:
        raise ConversionError("cannot generate a larger test within the element budget")
    large = {s: v * k if s in grow else v for s, v in base["sizes"].items()}
    tests.append({"name": "large", "sizes": large, "perf": True,
                  "scalars": {n: base["scalars"][n] for n in scalar_vals if len(scalar_vals[n]) > 1}})

    rec_out = {
        "task_id": f"babeltower/{index:04d}_{entry}", "track": "c2cuda", "family": "babeltower", "entry": entry,
        "signature": sig, "reference": rec["cpp_code"],
        "variants": [{"name": "naive", "source": naive, "strategy": "the case's own kernel and launch"}],
        "tests": tests, "split": "test",
        "meta": {"source": "babeltower", "case_index": index, "kernel": kname, "wrapper": wname,
                 "fixed_inputs": fixed, "expected_outputs": expected, "category": "external",
                 "large_scale": k, "large_scaled": sorted(grow)},
    }
    return task_from_dict(rec_out)


def _case(snip: str, otxt: str, names, ptr, roles, probe: Task) -> dict[str, Any]:
    env, args = _parse_snippet(snip)
    if len(args) != len(names):
        raise ConversionError(f"wrapper call passes {len(args)} arguments for {len(names)} parameters")
    vals = {}
    for n, a in zip(names, args):
        if len(a) == 1 and a[0] in env:
            vals[n] = env[a[0]]
        else:
            vals[n] = _eval_c(a, env)
        if ptr[n] != isinstance(vals[n], list):
            raise ConversionError(f"argument for {n} is {'not ' if ptr[n] else ''}an array")
    sizes = {n: int(vals[n]) for n in names if roles[n] == "size"}
    scalars = {n: vals[n] for n in names if roles[n] == "scalar"}
    if any(v is None for v in scalars.values()):
        raise ConversionError("a scalar argument is uninitialised")
    test = TestConfig("c", sizes)
    printed = _parse_printed(otxt)
    if len(printed) != len(names):
        raise ConversionError(f"printed {len(printed)} arguments for {len(names)} parameters")
    arrays, expected = {}, {}
    for p in probe.signature:
        if not p.is_pointer:
            continue
        n = probe.numel(p, test)
        if len(vals[p.name]) < n:
            raise ConversionError(f"given {p.name} has {len(vals[p.name])} elements, the wrapper allocates {n}")
        if p.role in ("in", "inout"):
            arrays[p.name] = [v for v in vals[p.name][:n]]
        if p.role in ("out", "inout"):
            got = printed[names.index(p.name)]
            if not isinstance(got, list) or len(got) < n:
                raise ConversionError(f"printed output {p.name} has fewer than {n} elements")
            expected[p.name] = got[:n]
    return {"sizes": sizes, "scalars": scalars, "arrays": arrays, "expected": expected}


def _init_from(ctype: str, values: list) -> str:
    """A generator spanning the given values (extremes such as FLT_MAX left out of the range;
    a single float value v widens to uniform(v-1, v+1))."""
    base = ctype.replace("const ", "").rstrip("*").strip()
    dt = CTYPES[base]
    finite = [float(v) for v in values if math.isfinite(float(v)) and abs(float(v)) <= 1e6]
    if dt.kind in "iu":
        ints = [int(v) for v in finite] or [0, 99]
        return f"randint({min(ints)}, {max(ints) + 1})"
    if not finite:
        return "uniform(-1, 1)"
    lo, hi = min(finite), max(finite)
    # a single given value (all zeros, say) would make a useless large test: widen it
    return f"uniform({lo!r}, {hi!r})" if hi > lo else f"uniform({lo - 1.0!r}, {lo + 1.0!r})"


def load_babeltower(path: str | Path, *, report: ConversionReport | None = None,
                    large_elems: int = LARGE_ELEMS) -> list[Task]:
    """Every convertible case of a unit-case JSONL file as a Task (rejections go to `report`)."""
    report = report if report is not None else ConversionReport()
    tasks = []
    with open(path) as fh:
        for i, line in enumerate(fh):
            if not line.strip():
                continue
            report.cases += 1
            rec = json.loads(line)
            name = re.search(r"void\s+(\w+)", rec.get("cpp_code", "")) if isinstance(rec, dict) else None
            try:
                t = convert_case(rec, i, large_elems=large_elems, dropped=report.dropped_cases)
            except (ConversionError, TaskError, KeyError, ValueError) as e:
                report.rejected.append({"index": i, "name": name.group(1) if name else "?", "reason": str(e)})
                continue
            tasks.append(t)
            report.converted.append(t.task_id)
    return tasks


# --------------------------------------------------------------------------- fixed inputs


def fixed_inputs(task: Task, test: TestConfig | str) -> dict[str, np.ndarray | np.generic]:
    """The given inputs of a fixed-input test, in `cudaperf.inputs.make_inputs`' format (which
    serves them too, so the harness and the reference runner use them without special cases)."""
    from cudaperf.inputs import fixed_inputs as _fixed

    test = next(t for t in task.tests if t.name == test) if isinstance(test, str) else test
    out = _fixed(task, test)
    if out is None:
        raise KeyError(f"task {task.task_id}: test {test.name!r} has no fixed inputs")
    return out


def reference_outputs_fixed(task: Task, test: TestConfig | str, *, cache_dir: str | Path,
                            timeout_s: float = 60) -> dict[str, np.ndarray]:
    """The C reference on a fixed-input test: the ordinary sandboxed reference run (any seed
    gives the given values)."""
    from cudaperf.reference import reference_outputs

    test = next(t for t in task.tests if t.name == test) if isinstance(test, str) else test
    fixed_inputs(task, test)  # a clear KeyError for a generated test
    return reference_outputs(task, test, 0, cache_dir=cache_dir, timeout_s=timeout_s)


def check_expected(task: Task, test: TestConfig | str, outputs: dict[str, np.ndarray],
                   rtol: float = 2e-5) -> list[str]:
    """Mismatches between `outputs` and the printed expected outputs (empty: they agree). The
    printed values carry 6 significant digits, hence the default relative tolerance."""
    name = test if isinstance(test, str) else test.name
    bad = []
    for pname, want in task.meta["expected_outputs"][name].items():
        w = np.asarray(want, dtype=np.float64)
        g = np.asarray(outputs[pname], dtype=np.float64).reshape(-1)
        if g.shape != w.shape:
            bad.append(f"{pname}: {g.size} values, expected {w.size}")
            continue
        scale = max(1e-30, float(np.nanmax(np.abs(w[np.isfinite(w)]), initial=0.0)))
        ok = np.isclose(g, w, rtol=rtol, atol=rtol * 1e-3 * scale, equal_nan=True) | \
            ((np.isinf(g) | (np.abs(g) > 3.4e38)) & np.isinf(w) & (np.sign(g) == np.sign(w)))
        if not ok.all():
            i = int(np.argmin(ok))
            bad.append(f"{pname}[{i}] = {g[i]!r}, expected {w[i]!r}")
    return bad


__all__ = ["ConversionError", "ConversionReport", "LARGE_ELEMS", "check_expected", "convert_case", "fixed_inputs",
           "load_babeltower", "reference_outputs_fixed"]
