"""Static analysis of CUDA C++ source with tree-sitter-cuda: the engine under `cudaperf.features`.

It parses a translation unit (error-tolerant: error nodes are still searched), evaluates
constants and #defines, tracks simple def-use of integer locals as affine forms in the thread
index (the abstract values `V`), and walks kernels (`_FunctionAnalyzer`: global accesses and their
coalescing class, branches and guards, atomics, barriers, operations, loop weights) and host code
(`_HostAnalyzer`: launch sites, block sizes, host<->device copies). `cudaperf.features` turns these
counts into the eleven features of DESIGN §1; the definitions live in its docstring.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction
from dataclasses import dataclass, field
from typing import Any

LOOP_WEIGHT = 8  # multiplier per enclosing loop (unknown trip count), see cudaperf.features

# ---------------------------------------------------------------------------- types

_TYPE_BYTES = {
    "char": 1, "signed char": 1, "unsigned char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "half": 2, "__half": 2,
    "__nv_bfloat16": 2, "nv_bfloat16": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4, "float": 4,
    "half2": 4, "__half2": 4, "__nv_bfloat162": 4, "char4": 4, "uchar4": 4,
    "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8,
    "uint64_t": 8, "size_t": 8, "double": 8, "float2": 8, "int2": 8, "uint2": 8,
    "float3": 12, "int3": 12, "float4": 16, "int4": 16, "uint4": 16, "double2": 16,
    "longlong2": 16, "double4": 32,
}
_FP_TYPES = {"float", "double", "half", "__half", "__nv_bfloat16", "nv_bfloat16", "half2",
             "__half2", "__nv_bfloat162", "float2", "float3", "float4", "double2", "double4"}
_MATH_FP = {
    "sqrtf", "sqrt", "rsqrtf", "rsqrt", "cbrtf", "expf", "exp", "__expf", "exp2f", "exp10f",
    "expm1f", "logf", "log", "__logf", "log2f", "log10f", "log1pf", "sinf", "cosf", "tanf",
    "__sinf", "__cosf", "__tanf", "sincosf", "tanhf", "tanh", "sinhf", "coshf", "asinf", "acosf",
    "atanf", "atan2f", "powf", "pow", "__powf", "fabsf", "fabs", "fmaxf", "fminf", "fmax", "fmin",
    "erff", "erfcf", "ceilf", "floorf", "roundf", "truncf", "rintf", "fmodf", "hypotf",
    "__fdividef", "__frcp_rn", "__fsqrt_rn", "__fadd_rn", "__fmul_rn", "__fsub_rn", "__fdiv_rn",
    "__dadd_rn", "__dmul_rn", "__hadd", "__hsub", "__hmul", "__hdiv", "__hadd2", "__hmul2",
    "__saturatef", "exp2", "log2", "sin", "cos", "erf", "ceil", "floor",
}
_MATH_FMA = {"fmaf", "fma", "__fmaf_rn", "__fma_rn", "__hfma", "__hfma2", "__fmaf_rz", "__fmaf_rd",
             "__fmaf_ru"}
_MATH_INT = {"min", "max", "abs", "umin", "umax", "llmin", "llmax", "__mul24", "__umul24",
             "__mulhi", "__umulhi", "__popc", "__clz", "__ffs", "__brev"}
_LOAD_INTRINSICS = {"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"}
_STORE_INTRINSICS = {"__stcg", "__stcs", "__stwb", "__stwt"}
_SYNC_CALLS = {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or",
               "__syncwarp", "__barrier_sync", "sync", "barrier_sync"}
_COPY_KINDS_XFER = {"cudaMemcpyHostToDevice", "cudaMemcpyDeviceToHost", "cudaMemcpyDefault"}
_COPY_KINDS_LOCAL = {"cudaMemcpyDeviceToDevice", "cudaMemcpyHostToHost"}
_HOST_ALLOCS = {"malloc", "calloc", "realloc", "cudaMallocHost", "cudaHostAlloc",
                "cudaMallocManaged"}
_RELATIONAL = {"<", "<=", ">", ">="}
_ARITH = {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"}


def _norm_type(text: str) -> str:
    t = re.sub(r"\b(const|volatile|__restrict__|__restrict|restrict|struct|__shared__|static|"
               r"extern|__device__|__constant__|register|signed(?= char))\b", " ", text)
    t = t.replace("*", " ").replace("&", " ").replace("::", " ")
    words = t.split()
    if words and words[0] in ("std", "cuda"):  # std::int32_t -> int32_t
        words = words[1:]
    return " ".join(words)


def _type_bytes(t: str) -> int:
    return _TYPE_BYTES.get(_norm_type(t), 4)


def _type_fp(t: str) -> bool:
    return _norm_type(t) in _FP_TYPES


# ---------------------------------------------------------------------------- parser

_PARSER = None


def _parser():
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_cuda

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))
    return _PARSER


def _txt(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


# ---------------------------------------------------------------------------- abstract values

SYM = "sym"  # affine in threadIdx.x with a non-constant coefficient


@dataclass
class V:
    """Abstract value: coefficient of threadIdx.x (Fraction, SYM, or None = not affine)."""

    coef: Any = Fraction(0)
    tdep: bool = False  # differs between threads of a block
    const: Any = None  # known compile-time number
    size: bool = True  # built only from parameters, constants and block-level built-ins
    fp: bool = False
    data: bool = False  # depends on values loaded from memory (not an index: never a guard)


def _uniform(const=None, fp=False, size=True) -> V:
    return V(Fraction(0), False, const, size, fp)


def _add_coef(a, b):
    if a is None or b is None:
        return None
    if a == SYM or b == SYM:
        return SYM
    return a + b


def _scale_coef(c, k):
    if c is None or c == SYM:
        return c
    try:
        return c * Fraction(k)
    except (TypeError, ValueError):
        return None


def _binop_const(op: str, a, b):
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            if isinstance(a, int) and isinstance(b, int):
                return int(a / b)  # C truncation
            return a / b
        if op == "%":
            return int(math.fmod(a, b))
        if op == "<<":
            return a << b
        if op == ">>":
            return a >> b
        if op == "&":
            return a & b
        if op == "|":
            return a | b
        if op == "^":
            return a ^ b
    except Exception:  # noqa: BLE001 - division by zero, shifts of floats...: unknown value
        return None
    return None


def _combine_binary(op: str, a: V, b: V) -> V:
    fp = a.fp or b.fp
    tdep = a.tdep or b.tdep
    size = a.size and b.size
    const = _binop_const(op, a.const, b.const) if a.const is not None and b.const is not None else None
    za, zb = a.coef == 0, b.coef == 0
    if op in ("+", "-"):
        cb = b.coef if op == "+" else _scale_coef(b.coef, -1)
        coef = _add_coef(a.coef, cb)
    elif op == "*":
        if za and zb:
            coef = Fraction(0)
        elif za or zb:
            k, other = (a, b) if za else (b, a)
            if k.const is not None:
                coef = _scale_coef(other.coef, k.const)
            else:
                coef = SYM if other.coef is not None else None
        else:
            coef = None
    elif op in ("/", ">>"):
        if za and zb:
            coef = Fraction(0)
        elif zb and not b.tdep:
            div = b.const if op == "/" else (2 ** b.const if isinstance(b.const, int) else None)
            if isinstance(div, (int, float)) and div:
                c = a.coef
                if c is None or c == SYM:
                    coef = None if c is None else SYM
                elif abs(c) * 32 <= abs(div):
                    coef = Fraction(0)  # e.g. tid / 32: constant within a warp
                else:
                    coef = _scale_coef(c, Fraction(1) / Fraction(div).limit_denominator())
            else:
                # idx / cols: piecewise constant in the thread index when cols is a size.
                coef = Fraction(0) if a.coef is not None else None
        else:
            coef = None
    elif op in ("%", "&"):
        if za and zb:
            coef = Fraction(0)
        elif zb and not b.tdep:
            m = b.const + 1 if (op == "&" and isinstance(b.const, int)) else b.const
            # tid % 32, tid & 31, idx % cols keep the stride within a warp (wrap aside).
            coef = a.coef if (m is None or (isinstance(m, (int, float)) and m >= 32)) else None
        else:
            coef = None
    else:  # << | ^
        if za and zb:
            coef = Fraction(0)
        elif op == "<<" and zb and isinstance(b.const, int) and not b.tdep:
            coef = _scale_coef(a.coef, 2 ** b.const)
        else:
            coef = None
    if op in ("<<", ">>", "&", "|", "^", "%"):
        fp = False
    return V(coef, tdep or (coef not in (None,) and coef != 0), const, size, fp, a.data or b.data)


def _merge(a: V, b: V) -> V:
    coef = a.coef if a.coef == b.coef else None
    return V(coef, a.tdep or b.tdep, a.const if a.const == b.const else None, a.size and b.size,
             a.fp or b.fp, a.data or b.data)


@dataclass
class Ptr:
    param: str
    offset: V
    elem_bytes: int
    fp: bool


# ---------------------------------------------------------------------------- constant eval


class _ConstEval:
    """Numbers of host/macro expressions: literals, #defines, constant locals, sizes, dim3."""

    def __init__(self, env: dict[str, Any]):
        self.env = env

    def __call__(self, node) -> Any:
        try:
            return self._ev(node)
        except Exception:  # noqa: BLE001 - anything odd in untrusted code is "unknown"
            return None

    def _ev(self, n) -> Any:
        t = n.type
        if t == "number_literal":
            return _parse_number(_txt(n))
        if t in ("identifier", "field_identifier"):
            return self.env.get(_txt(n))
        if t == "parenthesized_expression":
            inner = [c for c in n.named_children]
            return self._ev(inner[0]) if inner else None
        if t == "cast_expression":
            return self._ev(n.child_by_field_name("value"))
        if t == "sizeof_expression":
            ty = n.child_by_field_name("type")
            return _type_bytes(_txt(ty)) if ty is not None else None
        if t == "binary_expression":
            op = _txt(n.child_by_field_name("operator"))
            a, b = self._ev(n.child_by_field_name("left")), self._ev(n.child_by_field_name("right"))
            return _binop_const(op, a, b) if a is not None and b is not None else None
        if t == "unary_expression":
            v = self._ev(n.child_by_field_name("argument"))
            op = _txt(n.child_by_field_name("operator"))
            return -v if (v is not None and op == "-") else (v if op == "+" else None)
        if t == "conditional_expression":
            c = self._ev(n.child_by_field_name("condition"))
            if c is None:
                return None
            return self._ev(n.child_by_field_name("consequence" if c else "alternative"))
        if t in ("argument_list", "initializer_list"):  # dim3(x, y, z) / {x, y, z}
            vals = [self._ev(c) for c in n.named_children]
            return None if (not vals or any(v is None for v in vals)) else math.prod(vals)
        if t == "call_expression":
            fn = _txt(n.child_by_field_name("function"))
            args = n.child_by_field_name("arguments")
            if fn == "dim3" and args is not None:
                return self._ev(args)
            if fn in ("min", "max", "std::min", "std::max") and args is not None:
                vals = [self._ev(c) for c in args.named_children]
                if vals and all(v is not None for v in vals):
                    return (min if fn.endswith("min") else max)(vals)
        return None


def _parse_number(s: str) -> Any:
    s = s.replace("'", "").lower()
    is_hex = s.startswith("0x")
    body = s.rstrip("ul") if is_hex else s.rstrip("ulf")
    if is_hex:
        return int(body, 16)
    if any(ch in body for ch in ".e"):
        return float(body)
    if s.endswith("f"):
        return float(body)
    if body.startswith("0") and len(body) > 1 and body.isdigit():
        return int(body, 8)
    return int(body)


def _is_fp_literal(s: str) -> bool:
    s = s.lower()
    return not s.startswith("0x") and ("." in s or "e" in s or s.endswith("f"))


# ---------------------------------------------------------------------------- kernel analysis


@dataclass
class _Counts:
    ops: float = 0.0
    flops: float = 0.0
    atomics: float = 0.0
    syncs: float = 0.0
    div: float = 0.0
    guards: int = 0
    accesses: list = field(default_factory=list)

    def add(self, other: "_Counts", w: float) -> None:
        self.ops += other.ops * w
        self.flops += other.flops * w
        self.atomics += other.atomics * w
        self.syncs += other.syncs * w
        self.div += other.div
        self.guards += other.guards


class _FunctionAnalyzer:
    """Walks one __global__ or __device__ function body, accumulating _Counts."""

    def __init__(self, fn: dict, macros: dict[str, Any], device_summaries: dict[str, _Counts],
                 global_ptrs: bool):
        self.fn = fn
        self.macros = macros
        self.dev = device_summaries
        self.c = _Counts()
        self.env: dict[str, V] = {}
        self.ptrs: dict[str, Ptr] = {}
        self._ptr_memo: dict[int, bool] = {}  # cleared whenever self.ptrs changes
        self.local_fp: dict[str, bool] = {}
        self.shared: dict[str, int] = {}  # static __shared__ bytes per array name
        self.extern_shared = False
        self.params: dict[str, dict] = {p["name"]: p for p in fn["params"]}
        if global_ptrs:  # kernel pointer params point to global memory
            for p in fn["params"]:
                if p["pointer"]:
                    self.ptrs[p["name"]] = Ptr(p["name"], _uniform(0), p["elem_bytes"], p["fp"])
        for p in fn["params"]:
            if not p["pointer"]:
                self.env[p["name"]] = _uniform(fp=p["fp"])
        self.const_eval = _ConstEval(macros)

    # -------------------------------------------------------------- statements
    def run(self) -> _Counts:
        body = self.fn["body"]
        if body is not None:
            self.stmt(body, 1.0)
        return self.c

    def stmt(self, n, w: float) -> None:
        t = n.type
        if t in ("compound_statement", "translation_unit", "ERROR", "labeled_statement",
                 "else_clause", "case_statement"):
            for ch in n.named_children:
                if ch.type in ("comment", "preproc_call", "preproc_def", "preproc_include",
                               "preproc_function_def"):
                    continue
                if ch.type.endswith("_statement") or ch.type in ("declaration", "compound_statement",
                                                                 "ERROR", "else_clause"):
                    self.stmt(ch, w)
                elif ch.type.endswith("expression") or ch.type in ("identifier", "number_literal"):
                    if t != "case_statement":
                        self.ev(ch, w)
            return
        if t == "declaration":
            self.declaration(n, w)
        elif t == "expression_statement":
            for ch in n.named_children:
                self.ev(ch, w)
        elif t == "if_statement":
            cond = n.child_by_field_name("condition")
            cv = self.ev(cond, w) if cond is not None else _uniform()
            self.branch(cond, cv)
            for name in ("consequence", "alternative"):
                ch = n.child_by_field_name(name)
                if ch is not None:
                    self.stmt(ch, w)
        elif t == "for_statement":
            init = n.child_by_field_name("initializer")
            if init is not None:
                if init.type == "declaration":
                    self.declaration(init, w)
                else:
                    self.ev(init, w)
            inner = w * LOOP_WEIGHT
            upd = n.child_by_field_name("update")
            for name in _assigned_names(upd):  # induction variables are not constants
                v = self.env.get(name)
                if v is not None:
                    self.env[name] = V(v.coef, v.tdep, None, False, v.fp, v.data)
            cond = n.child_by_field_name("condition")
            if cond is not None:
                self.branch(cond, self.ev(cond, inner))
            body = n.child_by_field_name("body")
            if body is not None:
                self.stmt(body, inner)
            if upd is not None:
                self.ev(upd, inner)
        elif t in ("while_statement", "do_statement"):
            inner = w * LOOP_WEIGHT
            cond = n.child_by_field_name("condition")
            if cond is not None:
                self.branch(cond, self.ev(cond, inner))
            body = n.child_by_field_name("body")
            if body is not None:
                self.stmt(body, inner)
        elif t == "switch_statement":
            cond = n.child_by_field_name("condition")
            if cond is not None:
                cv = self.ev(cond, w)
                if cv.tdep:
                    self.c.div += 1
            body = n.child_by_field_name("body")
            if body is not None:
                self.stmt(body, w)
        elif t == "return_statement":
            for ch in n.named_children:
                self.ev(ch, w)
        else:
            for ch in n.named_children:
                if ch.type.endswith("_statement") or ch.type == "declaration":
                    self.stmt(ch, w)

    def branch(self, cond, cv: V) -> None:
        if not cv.tdep:
            return
        if cond is not None and self.is_guard(cond):
            self.c.guards += 1
        else:
            self.c.div += 1

    def is_guard(self, n) -> bool:
        """Relational comparisons of thread values with size expressions, joined by && / ||."""
        while n.type in ("condition_clause", "parenthesized_expression") and n.named_child_count:
            n = n.named_children[-1] if n.type == "condition_clause" else n.named_children[0]
        if n.type != "binary_expression":
            return False
        op = _txt(n.child_by_field_name("operator"))
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        if op in ("&&", "||"):
            return all(self.is_guard(x) or not self.peek(x).tdep for x in (left, right))
        if op in _RELATIONAL:
            lv, rv = self.peek(left), self.peek(right)
            return (lv.tdep and not lv.data and rv.size and not rv.tdep) or \
            (rv.tdep and not rv.data and lv.size and not lv.tdep)
        return False

    def peek(self, n) -> V:
        """Evaluate without recording counts (conditions are already counted)."""
        saved = self.c
        self.c = _Counts()
        try:
            return self.ev(n, 0.0)
        finally:
            self.c = saved

    def declaration(self, n, w: float) -> None:
        ty = n.child_by_field_name("type")
        tytxt = _txt(ty)
        quals = " ".join(_txt(c) for c in n.children if c.type in ("type_qualifier",
                                                                    "storage_class_specifier"))
        is_shared = "__shared__" in quals
        for d in n.children_by_field_name("declarator"):
            value = None
            decl = d
            if d.type == "init_declarator":
                decl, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
            is_ptr = decl is not None and decl.type == "pointer_declarator"
            name_node = decl
            while name_node is not None and name_node.type in ("pointer_declarator",
                                                               "array_declarator",
                                                               "reference_declarator"):
                name_node = name_node.child_by_field_name("declarator") or (
                    name_node.named_children[-1] if name_node.named_child_count else None)
            name = _txt(name_node)
            if is_shared and decl is not None and decl.type == "array_declarator":
                self.shared_decl(name, decl, tytxt, "extern" in quals)
                continue
            if decl is not None and decl.type == "array_declarator":
                if value is not None:
                    self.ev(value, w)
                self.env[name] = V(None, True, None, False, _type_fp(tytxt), True)
                continue
            if is_ptr:
                p = self.ptr_of(value, w) if value is not None else None
                self._ptr_memo.clear()
                if p is not None:
                    self.ptrs[name] = p
                else:
                    self.ptrs.pop(name, None)
                    if value is not None:
                        self.ev(value, w)
                continue
            v = self.ev(value, w) if value is not None else V(Fraction(0), False, None, False)
            fp = _type_fp(tytxt) if tytxt not in ("auto", "") else v.fp
            const = v.const if "const" in quals or "constexpr" in quals or v.const is not None else None
            self.env[name] = V(v.coef, v.tdep, const, v.size, fp, v.data)
            self.local_fp[name] = fp

    def shared_decl(self, name: str, decl, tytxt: str, extern: bool) -> None:
        dims = []
        node = decl
        while node is not None and node.type == "array_declarator":
            sz = node.child_by_field_name("size")
            dims.append(self.const_eval(sz) if sz is not None else None)
            node = node.child_by_field_name("declarator")
        if extern or not dims or dims[-1] is None and len(dims) == 1:
            self.extern_shared = True
        elif all(isinstance(x, int) for x in dims):
            self.shared[name] = _type_bytes(tytxt) * math.prod(dims)
        else:
            self.shared[name] = -1  # size not evaluable
        self.env[name] = V(None, True, None, False, _type_fp(tytxt), True)

    # -------------------------------------------------------------- pointers & accesses
    def is_ptr(self, n) -> bool:
        """Whether `n` denotes a global-memory pointer; no side effects, linear in `n`."""
        if n is None:
            return False
        t = n.type
        if t == "identifier":
            return _txt(n) in self.ptrs
        if t == "parenthesized_expression":
            return bool(n.named_child_count) and self.is_ptr(n.named_children[0])
        if t == "cast_expression":
            return self.is_ptr(n.child_by_field_name("value"))
        if t == "call_expression":
            fn, args = n.child_by_field_name("function"), n.child_by_field_name("arguments")
            return (fn is not None and fn.type == "template_function" and args is not None
                    and args.named_child_count == 1
                    and _txt(fn.child_by_field_name("name")).endswith("_cast")
                    and self.is_ptr(args.named_children[0]))
        if t == "binary_expression":
            op = _txt(n.child_by_field_name("operator"))
            if op not in ("+", "-"):
                return False
            key = n.id
            if key not in self._ptr_memo:  # memo: keeps long `a + b + c ...` chains linear
                self._ptr_memo[key] = self.is_ptr(n.child_by_field_name("left")) or (
                    op == "+" and self.is_ptr(n.child_by_field_name("right")))
            return self._ptr_memo[key]
        if t == "pointer_expression" and _txt(n.child_by_field_name("operator")) == "&":
            arg = n.child_by_field_name("argument")
            return arg is not None and arg.type == "subscript_expression" and \
                self.is_ptr(arg.child_by_field_name("argument"))
        return False

    def ptr_of(self, n, w: float) -> Ptr | None:
        if n is None:
            return None
        t = n.type
        if t == "identifier":
            return self.ptrs.get(_txt(n))
        if t == "parenthesized_expression" and n.named_child_count:
            return self.ptr_of(n.named_children[0], w)
        if t == "cast_expression":
            inner = self.ptr_of(n.child_by_field_name("value"), w)
            ty = n.child_by_field_name("type")
            if inner is not None and ty is not None and "*" in _txt(ty):
                return Ptr(inner.param, inner.offset, _type_bytes(_txt(ty)), _type_fp(_txt(ty)))
            return inner
        if t == "call_expression":
            fn = n.child_by_field_name("function")
            args = n.child_by_field_name("arguments")
            if fn is not None and fn.type == "template_function" and args is not None \
                    and args.named_child_count == 1 and _txt(fn.child_by_field_name("name")).endswith("_cast"):
                inner = self.ptr_of(args.named_children[0], w)
                targs = fn.child_by_field_name("arguments")
                ty = _txt(targs)[1:-1] if targs is not None else ""
                if inner is not None and "*" in ty:
                    return Ptr(inner.param, inner.offset, _type_bytes(ty), _type_fp(ty))
                return inner
            return None
        if t == "binary_expression":
            op = _txt(n.child_by_field_name("operator"))
            left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
            if op in ("+", "-"):
                pl = self.ptr_of(left, w) if self.is_ptr(left) else None
                if pl is not None:
                    off = self.ev(right, w)
                    self.count_op(op, off, w)
                    return Ptr(pl.param, _combine_binary(op, pl.offset, off), pl.elem_bytes, pl.fp)
                pr = self.ptr_of(right, w) if op == "+" and self.is_ptr(right) else None
                if pr is not None:
                    off = self.ev(left, w)
                    self.count_op(op, off, w)
                    return Ptr(pr.param, _combine_binary("+", pr.offset, off), pr.elem_bytes, pr.fp)
            return None
        if t == "pointer_expression" and _txt(n.child_by_field_name("operator")) == "&":
            arg = n.child_by_field_name("argument")
            if arg is not None and arg.type == "subscript_expression":
                base = self.ptr_of(arg.child_by_field_name("argument"), w)
                if base is not None:
                    idx = self.index_of(arg, w)
                    return Ptr(base.param, _combine_binary("+", base.offset, idx), base.elem_bytes,
                               base.fp)
        return None

    def index_of(self, sub, w: float) -> V:
        idx = sub.child_by_field_name("indices") or sub.child_by_field_name("index")
        if idx is None:
            return V(None, True)
        kids = idx.named_children if idx.type == "subscript_argument_list" else [idx]
        v = _uniform(0)
        for k in kids:
            v = self.ev(k, w)
        return v

    def record(self, p: Ptr, kind: str, w: float, node) -> None:
        c = p.offset.coef
        if c is None:
            cls = "irregular"
        elif c == SYM:
            cls = "strided"
        elif c == 0:
            cls = "uniform"
        elif abs(c) <= 1:
            cls = "unit"
        else:
            cls = "strided"
        self.c.accesses.append({"param": p.param, "kind": kind, "class": cls, "weight": w,
                                "bytes": p.elem_bytes, "text": _txt(node)[:80]})

    def loaded(self, p: Ptr) -> V:
        # A load from an address that is the same across a warp (coefficient 0, e.g. row_ptr[warp_id])
        # gives every lane the same value: warp-uniform, so `base + lane` built on it is still unit-stride.
        # (It was "not affine" before, and warp-per-row CSR kernels read as uncoalesced: the H200's
        # sectors per request said the opposite.)
        o = p.offset
        return V(Fraction(0) if o.coef == 0 else None, o.tdep, None, False, p.fp, True)

    def count_op(self, op: str, v: V, w: float) -> None:
        if op in _ARITH:
            self.c.ops += w
            if v.fp:
                self.c.flops += w

    # -------------------------------------------------------------- expressions
    def ev(self, n, w: float) -> V:
        if n is None:
            return _uniform()
        t = n.type
        if t == "number_literal":
            s = _txt(n)
            try:
                return _uniform(_parse_number(s), fp=_is_fp_literal(s))
            except ValueError:
                return _uniform(fp=_is_fp_literal(s))
        if t in ("true", "false", "null", "nullptr", "char_literal", "string_literal"):
            return _uniform()
        if t == "identifier":
            name = _txt(n)
            if name in self.env:
                return self.env[name]
            if name in self.macros:
                m = self.macros[name]
                return _uniform(m, fp=isinstance(m, float))
            if name in ("warpSize",):
                return _uniform(32)
            return _uniform(size=True)
        if t == "field_expression":
            arg, fld = n.child_by_field_name("argument"), _txt(n.child_by_field_name("field"))
            base = _txt(arg)
            if base == "threadIdx":
                return V(Fraction(1) if fld == "x" else Fraction(0), True, None, False)
            if base in ("blockIdx", "blockDim", "gridDim"):
                return _uniform(size=True)
            v = self.ev(arg, w)
            return V(v.coef, v.tdep, None, v.size, v.fp, v.data)
        if t in ("parenthesized_expression", "condition_clause"):
            v = _uniform()
            for ch in n.named_children:
                v = self.ev(ch, w)
            return v
        if t == "cast_expression":
            v = self.ev(n.child_by_field_name("value"), w)
            ty = _txt(n.child_by_field_name("type"))
            return V(v.coef, v.tdep, v.const, v.size, _type_fp(ty) if "*" not in ty else v.fp, v.data)
        if t == "sizeof_expression":
            ty = n.child_by_field_name("type")
            return _uniform(_type_bytes(_txt(ty)) if ty is not None else None)
        if t == "binary_expression":
            op = _txt(n.child_by_field_name("operator"))
            if op in ("+", "-") and self.is_ptr(n):
                p = self.ptr_of(n, w)  # pointer arithmetic as a value (passed to a call)
                return V(p.offset.coef, p.offset.tdep, None, False) if p else _uniform()
            a = self.ev(n.child_by_field_name("left"), w)
            b = self.ev(n.child_by_field_name("right"), w)
            if op in _ARITH:
                r = _combine_binary(op, a, b)
                self.count_op(op, r, w)
                return r
            # comparison / logical: a boolean; thread-dependence carries over
            coef = Fraction(0) if (a.coef == 0 and b.coef == 0) else None
            return V(coef, a.tdep or b.tdep, None, a.size and b.size, False, a.data or b.data)
        if t == "unary_expression":
            op = _txt(n.child_by_field_name("operator"))
            v = self.ev(n.child_by_field_name("argument"), w)
            if op == "-":
                self.count_op("-", v, w)
                return V(_scale_coef(v.coef, -1), v.tdep, -v.const if v.const is not None else None,
                         v.size, v.fp, v.data)
            if op == "~":
                self.count_op("^", v, w)
            return V(Fraction(0) if v.coef == 0 else None, v.tdep, None, v.size, False, v.data)
        if t == "update_expression":
            arg = n.child_by_field_name("argument")
            v = self.lvalue(arg, w, compound=True)
            self.count_op("+", v, w)
            return v
        if t == "assignment_expression":
            return self.assignment(n, w)
        if t == "subscript_expression":
            arg = n.child_by_field_name("argument")
            p = self.ptr_of(arg, w) if self.is_ptr(arg) else None
            if p is not None:
                idx = self.index_of(n, w)
                full = Ptr(p.param, _combine_binary("+", p.offset, idx), p.elem_bytes, p.fp)
                self.record(full, "ld", w, n)
                return self.loaded(full)
            base = self.ev(n.child_by_field_name("argument"), w)
            idx = self.index_of(n, w)
            tdep = idx.tdep or base.tdep
            return V(Fraction(0) if not tdep else None, tdep, None, False, base.fp, True)
        if t == "pointer_expression":
            op = _txt(n.child_by_field_name("operator"))
            arg = n.child_by_field_name("argument")
            if op == "*":
                p = self.ptr_of(arg, w)
                if p is not None:
                    self.record(p, "ld", w, n)
                    return self.loaded(p)
                v = self.ev(arg, w)
                return V(None if v.tdep else Fraction(0), v.tdep, None, False, v.fp, True)
            p = self.ptr_of(n, w)
            if p is not None:
                return V(p.offset.coef, p.offset.tdep, None, False)
            return self.ev(arg, w)
        if t == "conditional_expression":
            # Not a branch: both sides are evaluated here, and nvcc turns `c ? a : b` into a select
            # (SEL / FSEL), which no warp diverges on. Counting it made every clamp and ReLU look
            # divergent, where the H200's branch uniformity said 100 %.
            cond = n.child_by_field_name("condition")
            cv = self.ev(cond, w)
            a = self.ev(n.child_by_field_name("consequence"), w)
            b = self.ev(n.child_by_field_name("alternative"), w)
            r = _merge(a, b)
            if cv.tdep:
                r = V(None if r.coef != 0 or r.tdep else r.coef, True, None, False, r.fp)
            return r
        if t == "call_expression":
            return self.call(n, w)
        if t == "comma_expression":
            v = _uniform()
            for ch in n.named_children:
                v = self.ev(ch, w)
            return v
        # anything else (initializer lists, lambdas, ERROR nodes): walk children
        vals = [self.ev(ch, w) for ch in n.named_children
                if not ch.type.endswith(("_statement", "declaration"))]
        for ch in n.named_children:
            if ch.type.endswith("_statement") or ch.type == "declaration":
                self.stmt(ch, w)
        if not vals:
            return _uniform()
        tdep = any(v.tdep for v in vals)
        return V(Fraction(0) if not tdep else None, tdep, None, all(v.size for v in vals),
                 any(v.fp for v in vals), any(v.data for v in vals))

    def lvalue(self, n, w: float, compound: bool, value: V | None = None, op: str = "=") -> V:
        """Store to (or read-modify-write of) an lvalue; returns its new abstract value."""
        t = n.type if n is not None else ""
        if t == "identifier":
            name = _txt(n)
            if name in self.ptrs:
                self._ptr_memo.clear()
                p = self.ptrs[name]
                if value is not None and op in ("+=", "-="):
                    self.ptrs[name] = Ptr(p.param, _combine_binary(op[0], p.offset, value),
                                          p.elem_bytes, p.fp)
                elif value is not None and op == "=":
                    self.ptrs.pop(name)
                return _uniform()
            old = self.env.get(name, _uniform(size=False))
            if value is None:  # ++ / --
                new = V(old.coef, old.tdep, None, False, old.fp)
            elif op == "=":
                new = value
            else:
                new = _combine_binary(op[:-1], old, value) if op[:-1] in _ARITH else old
            fp = self.local_fp.get(name, new.fp)
            # A variable reassigned inside the kernel is no longer a pure size expression.
            self.env[name] = V(new.coef, new.tdep, None, False, fp, new.data)
            return self.env[name]
        if t == "subscript_expression":
            arg = n.child_by_field_name("argument")
            p = self.ptr_of(arg, w) if self.is_ptr(arg) else None
            if p is not None:
                idx = self.index_of(n, w)
                full = Ptr(p.param, _combine_binary("+", p.offset, idx), p.elem_bytes, p.fp)
                if compound:
                    self.record(full, "ld", w, n)
                self.record(full, "st", w, n)
                return self.loaded(full)
            base_node = n.child_by_field_name("argument")
            base = self.ev(base_node, w) if base_node.type != "identifier" else \
                self.env.get(_txt(base_node), _uniform())
            self.index_of(n, w)
            return V(None, True, None, False, base.fp, True)
        if t == "pointer_expression" and _txt(n.child_by_field_name("operator")) == "*":
            p = self.ptr_of(n.child_by_field_name("argument"), w)
            if p is not None:
                if compound:
                    self.record(p, "ld", w, n)
                self.record(p, "st", w, n)
                return self.loaded(p)
            return V(None, True, data=True)
        if t == "field_expression":
            arg = n.child_by_field_name("argument")
            if arg is not None and arg.type == "identifier" and _txt(arg) in self.env:
                old = self.env[_txt(arg)]
                nv = value if value is not None else old
                self.env[_txt(arg)] = V(_merge(old, nv).coef, old.tdep or nv.tdep, None, False,
                                        old.fp, old.data or nv.data)
                return self.env[_txt(arg)]
            return self.lvalue(arg, w, compound, value, op)
        if n is not None:
            return self.ev(n, w)
        return _uniform()

    def assignment(self, n, w: float) -> V:
        op = _txt(n.child_by_field_name("operator"))
        rhs = self.ev(n.child_by_field_name("right"), w)
        left = n.child_by_field_name("left")
        r = self.lvalue(left, w, compound=op != "=", value=rhs, op=op)
        if op != "=":
            self.count_op(op[:-1], V(r.coef, r.tdep, None, False, r.fp or rhs.fp), w)
        return r

    def call(self, n, w: float) -> V:
        fn = n.child_by_field_name("function")
        args_node = n.child_by_field_name("arguments")
        args = list(args_node.named_children) if args_node is not None else []
        if fn is not None and fn.type == "template_function":
            name = _txt(fn.child_by_field_name("name"))
        elif fn is not None and fn.type == "field_expression":
            name = _txt(fn.child_by_field_name("field"))
            self.peek(fn.child_by_field_name("argument"))
        elif fn is not None and fn.type == "qualified_identifier":
            name = _txt(fn).split("::")[-1]
        else:
            name = _txt(fn)
        if any(c.type == "kernel_call_syntax" for c in n.children):
            for a in args:  # dynamic parallelism: the child kernel is not analysed here
                self.ev(a, w)
            return _uniform()
        if name in _SYNC_CALLS:
            self.c.syncs += w
        is_atomic = name.startswith(("atomic", "__atomic")) or name in (
            "fetch_add", "fetch_sub", "fetch_min", "fetch_max", "fetch_and", "fetch_or",
            "compare_exchange_strong", "compare_exchange_weak", "exchange")
        if is_atomic:
            self.c.atomics += w
        vals = []
        for i, a in enumerate(args):
            if (is_atomic or name in _LOAD_INTRINSICS or name in _STORE_INTRINSICS) and i == 0:
                p = self.ptr_of(a, w)
                if p is not None:
                    kind = "atomic" if is_atomic else ("ld" if name in _LOAD_INTRINSICS else "st")
                    self.record(p, kind, w, a)
                    vals.append(self.loaded(p))
                    continue
            vals.append(self.ev(a, w))
        if name in _MATH_FMA:
            self.c.ops += 2 * w
            self.c.flops += 2 * w
        elif name in _MATH_FP:
            self.c.ops += w
            self.c.flops += w
        elif name in _MATH_INT:
            fp = any(v.fp for v in vals)
            self.c.ops += w
            self.c.flops += w if fp else 0
        elif name in self.dev and name != self.fn["name"]:
            self.c.add(self.dev[name], w)
        tdep = any(v.tdep for v in vals) or name.startswith("__shfl") or name in ("__activemask",
                                                                                 "__ballot_sync")
        fp = name in _MATH_FP or name in _MATH_FMA or (name in _LOAD_INTRINSICS and any(v.fp for v in vals)) \
            or (name in _MATH_INT and any(v.fp for v in vals))
        if name in _LOAD_INTRINSICS and vals:
            return vals[0]
        if name in ("min", "max") and len(vals) == 2 and vals[0].coef == vals[1].coef == 0:
            c = None
            if vals[0].const is not None and vals[1].const is not None:
                c = (min if name == "min" else max)(vals[0].const, vals[1].const)
            return V(Fraction(0), tdep, c, all(v.size for v in vals), fp, any(v.data for v in vals))
        coef = Fraction(0) if all(v.coef == 0 for v in vals) and not tdep else None
        data = any(v.data for v in vals) or name.startswith("__shfl") or is_atomic
        return V(coef, tdep, None, False, fp, data)


def _assigned_names(n) -> list[str]:
    if n is None:
        return []
    out = []
    stack = [n]
    while stack:
        x = stack.pop()
        if x.type in ("assignment_expression", "update_expression"):
            tgt = x.child_by_field_name("left") or x.child_by_field_name("argument")
            if tgt is not None and tgt.type == "identifier":
                out.append(_txt(tgt))
        stack.extend(x.named_children)
    return out


# ---------------------------------------------------------------------------- translation unit


def _functions(root) -> list[dict]:
    """Every function definition, with its CUDA qualifier and parameters.

    In a broken parse, an ERROR node holding ``__global__`` and a function declarator is taken
    as a kernel whose body is the rest of that node, so a syntax error inside a kernel still
    leaves its accesses and calls to analyse.
    """
    out = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "function_definition":
            toks = {_txt(c) for c in n.children if not c.is_named or c.type in (
                "storage_class_specifier", "type_qualifier", "attribute_specifier")}
            kind = "global" if "__global__" in toks else "device" if "__device__" in toks else "host"
            decl = n.child_by_field_name("declarator")
            while decl is not None and decl.type in ("pointer_declarator", "reference_declarator"):
                decl = decl.child_by_field_name("declarator")
            if decl is not None and decl.type == "function_declarator":
                out.append(_fn_record(n, decl, kind, n.child_by_field_name("body")))
            continue
        if n.type == "ERROR":
            toks = {_txt(c) for c in n.children if not c.is_named}
            decl = next((c for c in n.named_children if c.type == "function_declarator"), None)
            if "__global__" in toks and decl is not None:
                out.append(_fn_record(n, decl, "global", n))
        stack.extend(reversed(n.named_children))
    return out


def _fn_record(n, decl, kind: str, body) -> dict:
    name = _txt(decl.child_by_field_name("declarator")).split("::")[-1]
    params = []
    plist = decl.child_by_field_name("parameters")
    for p in (plist.named_children if plist is not None else []):
        if p.type != "parameter_declaration":
            continue
        ty = _txt(p.child_by_field_name("type"))
        d = p.child_by_field_name("declarator")
        pointer = d is not None and d.type in ("pointer_declarator", "array_declarator")
        nd = d
        while nd is not None and nd.type in ("pointer_declarator", "array_declarator",
                                             "reference_declarator"):
            nd = nd.child_by_field_name("declarator") or (
                nd.named_children[-1] if nd.named_child_count else None)
        params.append({"name": _txt(nd), "type": ty, "pointer": pointer,
                       "elem_bytes": _type_bytes(ty), "fp": _type_fp(ty)})
    lb = next((c for c in n.children if c.type == "launch_bounds"), None)
    launch_bounds = None
    if lb is not None and lb.named_child_count:
        try:
            launch_bounds = int(_parse_number(_txt(lb.named_children[0])))
        except (ValueError, TypeError):
            launch_bounds = None
    return {"name": name, "kind": kind, "params": params, "node": n, "body": body,
            "launch_bounds": launch_bounds}


def _macros(root) -> dict[str, Any]:
    macros: dict[str, Any] = {}
    for n in root.named_children:
        stack = [n]
        while stack:
            x = stack.pop()
            if x.type == "preproc_def":
                val = x.child_by_field_name("value")
                name = _txt(x.child_by_field_name("name"))
                if val is not None and len(_txt(val)) < 200:
                    expr = _parser().parse(("int __v = " + _txt(val).strip() + ";").encode())
                    d = expr.root_node.named_children[0] if expr.root_node.named_child_count else None
                    init = None
                    if d is not None and d.type == "declaration":
                        idecl = d.child_by_field_name("declarator")
                        init = idecl.child_by_field_name("value") if idecl is not None else None
                    v = _ConstEval(macros)(init) if init is not None else None
                    if v is not None:
                        macros[name] = v
            elif x.type.startswith("preproc_if") or x.type in ("preproc_ifdef", "preproc_else",
                                                               "preproc_elif"):
                stack.extend(reversed(x.named_children))
            elif x.type == "declaration" and ("constexpr" in _txt(x)[:40] or
                                              _txt(x).startswith(("const ", "static const"))):
                for d in x.children_by_field_name("declarator"):
                    if d.type == "init_declarator":
                        v = _ConstEval(macros)(d.child_by_field_name("value"))
                        if v is not None:
                            macros[_txt(d.child_by_field_name("declarator"))] = v
    return macros


class _HostAnalyzer:
    """Launch sites, copies and allocations in host functions."""

    def __init__(self, macros: dict[str, Any], sizes: dict[str, Any], kernel_names: set[str]):
        self.env = dict(macros)
        self.env.update(sizes)
        self.kernel_names = kernel_names
        self.launches: list[dict] = []
        self.xfer = 0.0
        self.copies: list[dict] = []
        self.host_allocs = 0.0
        self.notes: list[str] = []
        self.ce = _ConstEval(self.env)

    def walk(self, n, w: float) -> None:
        t = n.type
        if t in ("for_statement", "while_statement", "do_statement"):
            for ch in n.named_children:
                body_like = ch.type.endswith("_statement") or ch.type == "compound_statement"
                self.walk(ch, w * LOOP_WEIGHT if body_like or ch.type.endswith("expression") or
                          ch.type == "condition_clause" else w)
            return
        if t == "declaration":
            for d in n.children_by_field_name("declarator"):
                if d.type == "function_declarator":
                    # `dim3 block(TS, TS)` parses as a function declaration (C++'s vexing
                    # parse): its "parameter types" are the macro names.
                    nm = d.child_by_field_name("declarator")
                    plist = d.child_by_field_name("parameters")
                    vals = []
                    for p in (plist.named_children if plist is not None else []):
                        s = _txt(p).strip()
                        try:
                            vals.append(self.env.get(s) if not s[:1].isdigit() else _parse_number(s))
                        except ValueError:
                            vals.append(None)
                    ok = vals and all(isinstance(v, (int, float)) for v in vals)
                    if nm is not None:
                        self.env[_txt(nm)] = math.prod(vals) if ok else None
                elif d.type == "init_declarator":
                    self.walk(d.child_by_field_name("value"), w) if d.child_by_field_name("value") else None
                    nm = d.child_by_field_name("declarator")
                    if nm is not None and nm.type == "identifier":
                        self.env[_txt(nm)] = self.ce(d.child_by_field_name("value"))
            return
        if t == "assignment_expression":
            left = n.child_by_field_name("left")
            if left is not None and left.type == "identifier" and _txt(left) in self.env:
                self.env[_txt(left)] = None  # reassigned: no longer a known constant
        if t == "call_expression":
            self.call(n, w)
        for ch in n.named_children:
            self.walk(ch, w)

    def call(self, n, w: float) -> None:
        fn = n.child_by_field_name("function")
        args_node = n.child_by_field_name("arguments")
        args = list(args_node.named_children) if args_node is not None else []
        kcs = next((c for c in n.children if c.type == "kernel_call_syntax"), None)
        name = _txt(fn.child_by_field_name("name") if fn is not None and fn.type == "template_function"
                    else fn).split("::")[-1]
        if kcs is not None:
            cfg = list(kcs.named_children)
            self.launch(name, cfg[1] if len(cfg) > 1 else None, cfg[2] if len(cfg) > 2 else None, w)
            return
        if name in ("cudaLaunchKernel", "cudaLaunchCooperativeKernel") and len(args) >= 3:
            kname = re.sub(r"[^\w]", " ", _txt(args[0])).split()
            kname = next((k for k in kname if k in self.kernel_names), kname[-1] if kname else "?")
            self.launch(kname, args[2], args[4] if len(args) > 4 else None, w)
            return
        if name.startswith("cudaMemcpy"):
            if "Symbol" in name:
                self.copy(name, "symbol", w)
                return
            kinds = {_txt(a) for a in args} & (_COPY_KINDS_XFER | _COPY_KINDS_LOCAL)
            kind = next(iter(kinds), None)
            if kind is None:
                self.notes.append(f"{name}: copy kind not a literal; counted as a host<->device copy")
                self.copy(name, "unknown", w)
            elif kind in _COPY_KINDS_XFER:
                self.copy(name, kind, w)
            return
        if name in _HOST_ALLOCS:
            self.host_allocs += w

    def copy(self, name: str, kind: str, w: float) -> None:
        self.xfer += w
        self.copies.append({"call": name, "kind": kind, "weight": w})

    def launch(self, kernel: str, block, smem, w: float) -> None:
        tpb = self.ce(block) if block is not None else None
        dyn = self.ce(smem) if smem is not None else 0
        self.launches.append({"kernel": kernel, "weight": w,
                              "tpb": int(tpb) if isinstance(tpb, (int, float)) and tpb > 0 else None,
                              "block_expr": _txt(block)[:60],
                              "dynamic_smem": int(dyn) if isinstance(dyn, (int, float)) else None,
                              "smem_expr": _txt(smem)[:60] if smem is not None else ""})
