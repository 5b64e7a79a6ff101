"""Shared code generation for the elementwise and reduction families (map_unary, clamp_select,
polynomial, bitops, complex_arith, reduce_*, argminmax).

Guarantees: every generated CUDA translation unit defines ``extern "C" void <entry>(...)`` with
exactly the C parameter list of the task (pointers are device pointers), launches its kernels
only when there is work, handles any n >= 1 (tails of vector widths and blocks included), keeps
grids inside hardware limits, and reaches every ``__syncthreads`` from every thread of a block.
Bodies are written once with ``@name`` placeholders (``@x`` = element i of array x, ``@x0`` /
``@x1`` = first / second scalar of element i of a width-2 array such as interleaved complex),
and expanded into the C reference and every CUDA variant, so reference and variants cannot
drift apart.
"""
from __future__ import annotations

import re

HDR = "#include <cuda_runtime.h>\n"

# 16-byte (or 4-byte for bytes) vector type and its lane count, per element type.
VEC_TYPES = {"float": ("float4", 4), "double": ("double2", 2), "int": ("int4", 4),
             "unsigned int": ("uint4", 4), "unsigned char": ("uchar4", 4),
             "long long": ("longlong2", 2), "unsigned long long": ("ulonglong2", 2)}
_LANES = "xyzw"

SM_COUNT = ("    int dev_ = 0, sms_ = 132;\n    cudaGetDevice(&dev_);\n"
            "    cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev_);\n")


def P(name: str, ctype: str, role: str, shape: str | None = None, init: str | None = None,
      value=None) -> dict:
    """One signature entry of the task contract (keys left out where None); shared by all kits."""
    d = {"name": name, "ctype": ctype, "role": role}
    for k, v in (("shape", shape), ("init", init), ("value", value)):
        if v is not None:
            d[k] = v
    return d


def base(ctype: str) -> str:
    return " ".join(ctype.replace("*", " ").replace("const", " ").split())


def decl(p: dict, restrict: bool = False) -> str:
    c = p["ctype"]
    if c.endswith("*"):
        r = "__restrict__ " if restrict else ""
        return f"{c[:-1].rstrip()} *{r}{p['name']}"
    return f"{c} {p['name']}"


def decls(sig: list[dict], restrict: bool = False) -> str:
    return ", ".join(decl(p, restrict) for p in sig)


def args(sig: list[dict]) -> str:
    return ", ".join(p["name"] for p in sig)


def subst(body: str, arrays: dict, access) -> str:
    """Expand placeholders for the known arrays; `arrays` maps name -> width (1 or 2)."""
    names = sorted(arrays, key=len, reverse=True)
    out = body
    for nm in names:
        if arrays[nm] == 2:
            out = re.sub(rf"@{nm}([01])\b", lambda m, nm=nm: access(nm, int(m.group(1))), out)
        else:
            out = re.sub(rf"@{nm}\b", lambda m, nm=nm: access(nm, None), out)
    if "@" in out.replace("@i", ""):
        raise ValueError(f"unexpanded placeholder in {out!r}")
    return out


def indent(text: str, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + ln if ln.strip() else ln for ln in text.strip("\n").split("\n"))


# ----------------------------------------------------------------------------- elementwise


def ewise_reference(entry: str, sig: list[dict], n: str, arrays: dict, body: str,
                    i: str = "i", style: str = "index") -> str:
    """Serial C loop over n elements. style 'index': a[2*i], 'step': loop k by 2 over 2n."""
    if style == "step":
        def acc(nm, c):
            if arrays[nm] == 2:
                return f"{nm}[{i}]" if c == 0 else f"{nm}[{i} + 1]"
            return f"{nm}[{i} / 2]"
        loop = f"for (int {i} = 0; {i} < 2 * {n}; {i} += 2)"
        idx = f"({i} / 2)"
    else:
        def acc(nm, c):
            if arrays[nm] == 2:
                return f"{nm}[2 * {i}]" if c == 0 else f"{nm}[2 * {i} + 1]"
            return f"{nm}[{i}]"
        loop = f"for (int {i} = 0; {i} < {n}; {i}++)"
        idx = i
    b = subst(body, arrays, acc).replace("@i", idx)
    return (f"void {entry}({decls(sig)}) {{\n    {loop} {{\n{indent(b, 8)}\n    }}\n}}\n")


def _naive_access(arrays, i="i"):
    def acc(nm, c):
        if arrays[nm] == 2:
            return f"{nm}[2 * {i}]" if c == 0 else f"{nm}[2 * {i} + 1]"
        return f"{nm}[{i}]"
    return acc


def ewise_variants(entry: str, sig: list[dict], n: str, arrays: dict, body: str,
                   vectorize: bool = True, opt_body: str | None = None) -> list[dict]:
    """naive, grid_stride (+__restrict__), vectorized (16-byte loads/stores, in-kernel tail).

    opt_body (same placeholders, same result) replaces the body in the optimised variants,
    e.g. to use hardware intrinsics such as __popc where the naive translation loops.
    """
    roles = {p["name"]: p["role"] for p in sig}
    types = {p["name"]: base(p["ctype"]) for p in sig}
    k = f"{entry}_k"
    nb = subst(body, arrays, _naive_access(arrays)).replace("@i", "i")
    naive = HDR + f"""
__global__ void {k}({decls(sig)}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < {n}) {{
{indent(nb, 8)}
    }}
}}
extern "C" void {entry}({decls(sig)}) {{
    if ({n} <= 0) return;
    {k}<<<({n} + 255) / 256, 256>>>({args(sig)});
}}
"""
    if opt_body is not None:
        body = opt_body
        nb = subst(body, arrays, _naive_access(arrays)).replace("@i", "i")
    gs = HDR + f"""
__global__ void {k}_gs({decls(sig, True)}) {{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t){n}; i += stride) {{
{indent(nb, 8)}
    }}
}}
extern "C" void {entry}({decls(sig)}) {{
    if ({n} <= 0) return;
{SM_COUNT}    int blocks = ({n} + 511) / 512;
    if (blocks > sms_ * 4) blocks = sms_ * 4;
    {k}_gs<<<blocks, 512>>>({args(sig)});
}}
"""
    out = [{"name": "naive", "strategy": "one thread per element, 256 threads per block", "source": naive},
           {"name": "grid_stride", "strategy": "grid-stride loop over a grid sized to the SM count, "
            "512 threads, __restrict__ pointers", "source": gs}]
    if not vectorize:
        return out
    loads, stores, locs = [], [], []
    for nm, w in arrays.items():
        t = types[nm]
        vt, lanes = VEC_TYPES[t]
        S = 4 * w
        nvec = S // lanes
        locs.append(f"{t} {nm}_v[{S}];")
        if roles[nm] in ("in", "inout"):
            loads.append(f"const {vt} *{nm}_p = (const {vt} *){nm} + (size_t)t * {nvec};")
            for j in range(nvec):
                loads.append(f"{{ {vt} q = {nm}_p[{j}]; " + " ".join(
                    f"{nm}_v[{j * lanes + L}] = q.{_LANES[L]};" for L in range(lanes)) + " }")
        if roles[nm] in ("out", "inout"):
            stores.append(f"{vt} *{nm}_s = ({vt} *){nm} + (size_t)t * {nvec};")
            for j in range(nvec):
                stores.append(f"{{ {vt} q; " + " ".join(
                    f"q.{_LANES[L]} = {nm}_v[{j * lanes + L}];" for L in range(lanes))
                    + f" {nm}_s[{j}] = q; }}")

    def vacc(nm, c):
        if arrays[nm] == 2:
            return f"{nm}_v[2 * e]" if c == 0 else f"{nm}_v[2 * e + 1]"
        return f"{nm}_v[e]"
    vb = subst(body, arrays, vacc).replace("@i", "i")
    idx_line = "            int i = 4 * t + e;\n" if re.search(r"@i\b", body) else ""
    vec = HDR + f"""
// Each thread handles 4 consecutive elements with 16-byte vector accesses (cudaMalloc
// pointers are 256-byte aligned and thread t starts at element 4t); the thread with t == n/4
// finishes the n % 4 tail with scalar code.
__global__ void {k}_v4({decls(sig, True)}) {{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = {n} / 4;
    if (t < n4) {{
{indent(chr(10).join(locs + loads), 8)}
#pragma unroll
        for (int e = 0; e < 4; e++) {{
{idx_line}{indent(vb, 12)}
        }}
{indent(chr(10).join(stores), 8)}
    }} else if (t == n4) {{
        for (int i = 4 * n4; i < {n}; i++) {{
{indent(nb, 12)}
        }}
    }}
}}
extern "C" void {entry}({decls(sig)}) {{
    if ({n} <= 0) return;
    int threads = {n} / 4 + 1;
    {k}_v4<<<(threads + 255) / 256, 256>>>({args(sig)});
}}
"""
    out.append({"name": "vectorized", "strategy": "4 elements per thread with 16-byte vector "
                "loads/stores, scalar tail", "source": vec})
    return out


def tests_1d(perf_n: int, n: str = "n", extra: dict | None = None) -> list[dict]:
    ex = extra or {}
    return [{"name": "one", "sizes": {n: 1, **ex}},
            {"name": "odd", "sizes": {n: 1003, **ex}},
            {"name": "mid", "sizes": {n: 65537, **ex}},
            {"name": "perf", "sizes": {n: perf_n, **ex}, "perf": True}]


def uniq(draws: str, size: str) -> str:
    """Elements (or rows) of a table of `size` that `draws` uniform random indices surely touch,
    for meta.min_bytes (an expression string). Repeated indices are served by the L2 (50 MB on an H200), so a lower
    bound counts each touched element once. The expected number of distinct values among D
    uniform draws from V is V*(1 - (1 - 1/V)^D) >= (1 - 1/e) * min(D, V); counting min(D, V)/2
    stays below it with margin (the perf sizes draw >= 2^15 indices, so the realised count is
    close to its expectation)."""
    return f"(min({draws}, {size})//2)"


def record(family: str, slug: str, entry: str, sig: list[dict], reference: str,
           variants: list[dict], tests: list[dict], knobs: dict, flops: str | None = None,
           tol: dict | None = None, min_bytes: str | None = None) -> dict:
    meta: dict = {"source": "generated", "knobs": knobs}
    if flops:
        meta["flops"] = flops
    if min_bytes:
        meta["min_bytes"] = min_bytes
    rec = {"task_id": f"c2cuda/{family}/{slug}", "track": "c2cuda", "family": family,
           "entry": entry, "signature": sig, "reference": reference, "variants": variants,
           "tests": tests, "meta": meta}
    if tol:
        rec["tolerance"] = tol
    return rec


CT = {"float": "float", "double": "double"}


def fsuf(t: str) -> tuple[str, str]:
    """(math-function suffix, literal suffix) for a floating type."""
    return ("f", "f") if t == "float" else ("", "")


def fmt(expr: str, t: str) -> str:
    """Expand {s} (function suffix: expf/exp) and {c} (literal suffix) for type t."""
    s, c = fsuf(t)
    return expr.replace("{s}", s).replace("{c}", c).replace("{T}", t)


# ----------------------------------------------------------------------------- 1-D with ILP


def unrolled_variant(entry: str, sig: list[dict], n: str, arrays: dict, body: str) -> dict:
    """4 elements per thread, a block-width apart (keeps 4 independent loads in flight)."""
    nb = subst(body, arrays, _naive_access(arrays)).replace("@i", "i")
    src = HDR + f"""
__global__ void {entry}_u4({decls(sig, True)}) {{
    int base = blockIdx.x * blockDim.x * 4 + threadIdx.x;
#pragma unroll
    for (int u = 0; u < 4; u++) {{
        int i = base + u * blockDim.x;
        if (i < {n}) {{
{indent(nb, 12)}
        }}
    }}
}}
extern "C" void {entry}({decls(sig)}) {{
    if ({n} <= 0) return;
    {entry}_u4<<<({n} + 1023) / 1024, 256>>>({args(sig)});
}}
"""
    return {"name": "loop_unrolled", "strategy": "4 elements per thread a block-width apart, "
            "__restrict__ (more independent loads in flight)", "source": src}


# ----------------------------------------------------------------------------- row-wise maps


def rows_reference(entry: str, sig: list[dict], R: str, D: str, setup: str, body: str,
                   rv: str = "r", cv: str = "j") -> str:
    s = indent(setup.replace("@r", rv).replace("@j", cv), 8) + "\n" if setup.strip() else ""
    b = indent(body.replace("@r", rv).replace("@j", cv), 12)
    return (f"void {entry}({decls(sig)}) {{\n    for (int {rv} = 0; {rv} < {R}; {rv}++) {{\n{s}"
            f"        for (int {cv} = 0; {cv} < {D}; {cv}++) {{\n{b}\n        }}\n    }}\n}}\n")


def rows_variants(entry: str, sig: list[dict], R: str, D: str, setup: str, body: str) -> list[dict]:
    """Row x column maps with a per-row setup (an index lookup, a row scale):
    naive (thread per element), warp_per_row (setup once per row, lanes over columns),
    block_per_row (grid-stride over rows, threads over columns)."""
    dec, dr, arg = decls(sig), decls(sig, True), args(sig)
    su = lambda s, k: indent(s.replace("@r", "r").replace("@j", "j"), k) + "\n" if s.strip() else ""
    naive = HDR + f"""
__global__ void {entry}_k({dec}) {{
    size_t flat_ = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (flat_ < (size_t)({R}) * ({D})) {{
        int r = (int)(flat_ / ({D})), j = (int)(flat_ % ({D}));
{su(setup, 8)}{su(body, 8)}    }}
}}
extern "C" void {entry}({dec}) {{
    size_t total = (size_t)({R}) * ({D});
    if (total == 0) return;
    {entry}_k<<<(unsigned)((total + 255) / 256), 256>>>({arg});
}}
"""
    warp = HDR + f"""
// One warp per row: the per-row setup (index load, scale) happens once per row instead of once
// per element, and the 32 lanes read consecutive columns (coalesced).
__global__ void {entry}_warp({dr}) {{
    int lane = threadIdx.x & 31;
    int warps = (gridDim.x * blockDim.x) >> 5;
    for (int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < ({R}); r += warps) {{
{su(setup, 8)}        for (int j = lane; j < ({D}); j += 32) {{
{su(body, 12)}        }}
    }}
}}
extern "C" void {entry}({dec}) {{
    if (({R}) <= 0 || ({D}) <= 0) return;
{SM_COUNT}    long long want = ((long long)({R}) * 32 + 255) / 256;
    int blocks = want < (long long)sms_ * 16 ? (int)want : sms_ * 16;
    {entry}_warp<<<blocks, 256>>>({arg});
}}
"""
    block = HDR + f"""
// One block per row (grid-stride over rows); threads stride over the columns.
__global__ void {entry}_blk({dr}) {{
    for (int r = blockIdx.x; r < ({R}); r += gridDim.x) {{
{su(setup, 8)}        for (int j = threadIdx.x; j < ({D}); j += blockDim.x) {{
{su(body, 12)}        }}
    }}
}}
extern "C" void {entry}({dec}) {{
    if (({R}) <= 0 || ({D}) <= 0) return;
{SM_COUNT}    int threads = ({D}) >= 256 ? 256 : ((({D}) + 31) / 32) * 32;
    int blocks = ({R}) < sms_ * 32 ? ({R}) : sms_ * 32;
    {entry}_blk<<<blocks, threads>>>({arg});
}}
"""
    return [{"name": "naive", "strategy": "one thread per output element, row/column by division", "source": naive},
            {"name": "warp_per_row", "strategy": "one warp per row, per-row work hoisted, coalesced lanes", "source": warp},
            {"name": "block_per_row", "strategy": "one block per row with grid-stride over rows", "source": block}]


# ----------------------------------------------------------------------------- reductions

IDENTITY = {
    ("sum", "float"): "0.0f", ("sum", "double"): "0.0", ("sum", "int"): "0", ("sum", "long long"): "0LL",
    ("max", "float"): "-3.402823466e38f", ("max", "double"): "-1.7976931348623157e308",
    ("max", "int"): "(-2147483647 - 1)", ("min", "float"): "3.402823466e38f",
    ("min", "double"): "1.7976931348623157e308", ("min", "int"): "2147483647",
}
COMBINE = {"sum": "a + b", "max": "(b > a ? b : a)", "min": "(b < a ? b : a)"}


def red_helpers(acc: str, comb: str) -> str:
    ident = IDENTITY[(comb, acc)]
    return f"""
__device__ __forceinline__ {acc} comb_({acc} a, {acc} b) {{ return {COMBINE[comb]}; }}
__device__ __forceinline__ {acc} warp_red_({acc} v) {{
    for (int o = 16; o > 0; o >>= 1) v = comb_(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}}
// Block-wide reduction; every thread of the block must call it (it contains a barrier).
// The result is valid in thread 0. blockDim.x is a multiple of 32, at most 1024.
__device__ {acc} block_red_({acc} v) {{
    __shared__ {acc} sh_[32];
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    v = warp_red_(v);
    if (lane == 0) sh_[w] = v;
    __syncthreads();
    v = (threadIdx.x < (blockDim.x >> 5)) ? sh_[threadIdx.x] : {ident};
    if (w == 0) v = warp_red_(v);
    __syncthreads();
    return v;
}}
"""


def full_reduce_reference(entry, sig, n, acc, comb, term, final, out, i="i"):
    ident = IDENTITY[(comb, acc)]
    t = term.replace("@i", i)
    if comb == "sum":
        step = f"acc += {t};"
    else:
        cmp = ">" if comb == "max" else "<"
        step = f"{acc} v = {t};\n        if (v {cmp} acc) acc = v;"
    return (f"void {entry}({decls(sig)}) {{\n    {acc} acc = {ident};\n    for (int {i} = 0; {i} < {n}; {i}++) {{\n"
            f"        {step}\n    }}\n    {out}[0] = {final};\n}}\n")


def full_reduce_variants(entry, sig, n, acc, comb, term, final, out) -> list[dict]:
    """naive (reduce0: one element per thread, interleaved shared-memory tree, per-block
    partials, final single-block pass), warp_shuffle (grid-stride + shuffles), loop_unrolled
    (4 independent accumulators per thread). Deterministic: no float atomics."""
    ident = IDENTITY[(comb, acc)]
    dec, dr, arg = decls(sig), decls(sig, True), args(sig)
    T = lambda e: term.replace("@i", f"({e})")
    common = HDR + red_helpers(acc, comb) + f"""
#define PCAP_ (1 << 18)
static __device__ {acc} partials_[PCAP_];
__global__ void {entry}_final({dec}, const {acc} *partial, int np) {{
    {acc} v = {ident};
    for (int k = threadIdx.x; k < np; k += blockDim.x) v = comb_(v, partial[k]);
    v = block_red_(v);
    if (threadIdx.x == 0) {{
        {acc} acc = v;
        {out}[0] = {final};
    }}
}}
"""
    naive = common + f"""
__global__ void {entry}_k({dec}, {acc} *partial) {{
    __shared__ {acc} s[256];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = (i < {n}) ? ({acc})({T("i")}) : {ident};
    __syncthreads();
    for (unsigned st = 1; st < blockDim.x; st *= 2) {{
        if (tid % (2 * st) == 0) s[tid] = comb_(s[tid], s[tid + st]);
        __syncthreads();
    }}
    if (tid == 0) partial[blockIdx.x] = s[0];
}}
extern "C" void {entry}({dec}) {{
    if ({n} <= 0) return;
    int nb = ({n} + 255) / 256;
    {acc} *partial = 0;
    bool own = nb > PCAP_;
    if (own) cudaMalloc((void **)&partial, sizeof({acc}) * (size_t)nb);
    else cudaGetSymbolAddress((void **)&partial, partials_);
    {entry}_k<<<nb, 256>>>({arg}, partial);
    {entry}_final<<<1, 1024>>>({arg}, partial, nb);
    if (own) cudaFree(partial);
}}
"""
    host = lambda kern: f"""
extern "C" void {entry}({dec}) {{
    if ({n} <= 0) return;
{SM_COUNT}    int nb = ({n} + 255) / 256;
    if (nb > sms_ * 4) nb = sms_ * 4;
    if (nb > 4096) nb = 4096;
    {acc} *partial = 0;
    cudaGetSymbolAddress((void **)&partial, partials_);
    {kern}<<<nb, 256>>>({arg}, partial);
    {entry}_final<<<1, 1024>>>({arg}, partial, nb);
}}
"""
    ws = common + f"""
__global__ void {entry}_ws({dr}, {acc} *partial) {{
    {acc} v = {ident};
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t){n}; i += stride)
        v = comb_(v, ({acc})({T("i")}));
    v = block_red_(v);
    if (threadIdx.x == 0) partial[blockIdx.x] = v;
}}
""" + host(f"{entry}_ws")
    u4 = common + f"""
__global__ void {entry}_u4({dr}, {acc} *partial) {{
    {acc} v0 = {ident}, v1 = {ident}, v2 = {ident}, v3 = {ident};
    size_t stride = (size_t)blockDim.x * gridDim.x, N = (size_t){n};
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < N; i += 4 * stride) {{
        v0 = comb_(v0, ({acc})({T("i")}));
        v1 = comb_(v1, ({acc})({T("i + stride")}));
        v2 = comb_(v2, ({acc})({T("i + 2 * stride")}));
        v3 = comb_(v3, ({acc})({T("i + 3 * stride")}));
    }}
    for (; i < N; i += stride) v0 = comb_(v0, ({acc})({T("i")}));
    {acc} v = comb_(comb_(v0, v1), comb_(v2, v3));
    v = block_red_(v);
    if (threadIdx.x == 0) partial[blockIdx.x] = v;
}}
""" + host(f"{entry}_u4")
    return [{"name": "naive", "strategy": "one element per thread, interleaved shared-memory tree "
             "(tid % 2s), per-block partials, one final block", "source": naive},
            {"name": "warp_shuffle", "strategy": "grid-stride accumulation on an SM-sized grid, warp "
             "shuffles then one shared-memory step, final block", "source": ws},
            {"name": "loop_unrolled", "strategy": "grid-stride with 4 independent accumulators per "
             "thread (4 loads in flight), warp-shuffle block reduction", "source": u4}]


def _red_step(comb: str, acc_name: str, term: str, acc_t: str) -> str:
    if comb == "sum":
        return f"{acc_name} += {term};"
    cmp = ">" if comb == "max" else "<"
    return f"{{\n    {acc_t} v = {term};\n    if (v {cmp} {acc_name}) {acc_name} = v;\n}}"


def row_reduce_reference(entry, sig, R, C, acc, comb, term, final, out, style="local", rv="r", cv="j"):
    """out[r] = final(reduce over j of term(r, j)); style 'local' (accumulator variable) or
    'inplace' (accumulate straight into out[r], as much scientific C does)."""
    ident = IDENTITY[(comb, acc)]
    t = term.replace("@r", rv).replace("@j", cv)
    if style == "local":
        body = (f"        {acc} acc = {ident};\n        for (int {cv} = 0; {cv} < {C}; {cv}++) {{\n"
                f"{indent(_red_step(comb, 'acc', t, acc), 12)}\n        }}\n        {out}[{rv}] = {final};\n")
    else:
        o = f"{out}[{rv}]"
        body = (f"        {o} = {ident};\n        for (int {cv} = 0; {cv} < {C}; {cv}++) {{\n"
                f"{indent(_red_step(comb, o, t, acc), 12)}\n        }}\n")
        if final != "acc":
            body += f"        {o} = {final.replace('acc', o)};\n"
    return f"void {entry}({decls(sig)}) {{\n    for (int {rv} = 0; {rv} < {R}; {rv}++) {{\n{body}    }}\n}}\n"


def row_reduce_variants(entry, sig, R, C, acc, comb, term, final, out) -> list[dict]:
    """naive (thread per row), warp_per_row (shuffles), block_per_row (block reduction)."""
    ident = IDENTITY[(comb, acc)]
    dec, dr, arg = decls(sig), decls(sig, True), args(sig)
    t = term.replace("@r", "r").replace("@j", "j")
    h = HDR + red_helpers(acc, comb)
    naive = HDR + f"""
__global__ void {entry}_k({dec}) {{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < {R}) {{
        {acc} acc = {ident};
        for (int j = 0; j < {C}; j++) {{
{indent(_red_step(comb, 'acc', t, acc), 12)}
        }}
        {out}[r] = {final};
    }}
}}
extern "C" void {entry}({dec}) {{
    if ({R} <= 0) return;
    {entry}_k<<<({R} + 255) / 256, 256>>>({arg});
}}
"""
    warp = h + f"""
__global__ void {entry}_warp({dr}) {{
    int lane = threadIdx.x & 31;
    int warps = (gridDim.x * blockDim.x) >> 5;
    for (int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < {R}; r += warps) {{
        {acc} v = {ident};
        for (int j = lane; j < {C}; j += 32) v = comb_(v, ({acc})({t}));
        v = warp_red_(v);
        if (lane == 0) {{
            {acc} acc = v;
            {out}[r] = {final};
        }}
    }}
}}
extern "C" void {entry}({dec}) {{
    if ({R} <= 0) return;
{SM_COUNT}    long long want = ((long long){R} * 32 + 255) / 256;
    int blocks = want < (long long)sms_ * 16 ? (int)want : sms_ * 16;
    {entry}_warp<<<blocks, 256>>>({arg});
}}
"""
    block = h + f"""
// Block per row; the row loop bound depends only on blockIdx, so every thread of a block
// reaches the barriers inside block_red_.
__global__ void {entry}_blk({dr}) {{
    for (int r = blockIdx.x; r < {R}; r += gridDim.x) {{
        {acc} v = {ident};
        for (int j = threadIdx.x; j < {C}; j += blockDim.x) v = comb_(v, ({acc})({t}));
        v = block_red_(v);
        if (threadIdx.x == 0) {{
            {acc} acc = v;
            {out}[r] = {final};
        }}
    }}
}}
extern "C" void {entry}({dec}) {{
    if ({R} <= 0) return;
{SM_COUNT}    int blocks = {R} < sms_ * 16 ? {R} : sms_ * 16;
    {entry}_blk<<<blocks, 256>>>({arg});
}}
"""
    return [{"name": "naive", "strategy": "one thread per row, serial loop over the row", "source": naive},
            {"name": "warp_per_row", "strategy": "one warp per row, coalesced lanes, warp shuffle", "source": warp},
            {"name": "block_per_row", "strategy": "one block per row (grid-stride), shuffle + shared "
             "memory block reduction", "source": block}]


def col_reduce_variants(entry, sig, R, C, acc, comb, term, final, out) -> list[dict]:
    """out[c] = final(reduce over r of term(r, c)): naive (thread per column), tiled_smem
    (32 x 8 threads per 32 columns, shared-memory combine), two_pass (rows split over
    gridDim.y into scratch partials, then a thread per column)."""
    ident = IDENTITY[(comb, acc)]
    dec, dr, arg = decls(sig), decls(sig, True), args(sig)
    tc = lambda r, c: term.replace("@r", r).replace("@j", c)
    cmb = f"__device__ __forceinline__ {acc} comb_({acc} a, {acc} b) {{ return {COMBINE[comb]}; }}\n"
    naive = HDR + f"""
__global__ void {entry}_k({dec}) {{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < {C}) {{
        {acc} acc = {ident};
        for (int r = 0; r < {R}; r++) {{
{indent(_red_step(comb, 'acc', tc('r', 'c'), acc), 12)}
        }}
        {out}[c] = {final};
    }}
}}
extern "C" void {entry}({dec}) {{
    if ({C} <= 0) return;
    {entry}_k<<<({C} + 255) / 256, 256>>>({arg});
}}
"""
    tiled = HDR + cmb + f"""
// 32 columns per block, 8 row lanes: each thread walks rows ty, ty+8, ...; the 8 partial
// results of a column meet in shared memory. Out-of-range columns still reach the barrier.
__global__ void {entry}_tile({dr}) {{
    __shared__ {acc} part[8][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    {acc} v = {ident};
    if (c < {C})
        for (int r = threadIdx.y; r < {R}; r += 8) v = comb_(v, ({acc})({tc('r', 'c')}));
    part[threadIdx.y][threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.y == 0 && c < {C}) {{
        {acc} acc = part[0][threadIdx.x];
        for (int k = 1; k < 8; k++) acc = comb_(acc, part[k][threadIdx.x]);
        {out}[c] = {final};
    }}
}}
extern "C" void {entry}({dec}) {{
    if ({C} <= 0) return;
    dim3 block(32, 8);
    {entry}_tile<<<({C} + 31) / 32, block>>>({arg});
}}
"""
    two = HDR + cmb + f"""
// Rows are split into S chunks over gridDim.y so that narrow matrices still fill the GPU;
// each (column tile, chunk) block writes one partial per column, then a thread per column
// combines the S partials in order.
__global__ void {entry}_part({dr}, int chunk, {acc} *partial) {{
    __shared__ {acc} part[8][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    int r0 = blockIdx.y * chunk;
    int r1 = r0 + chunk < {R} ? r0 + chunk : {R};
    {acc} v = {ident};
    if (c < {C})
        for (int r = r0 + threadIdx.y; r < r1; r += 8) v = comb_(v, ({acc})({tc('r', 'c')}));
    part[threadIdx.y][threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.y == 0 && c < {C}) {{
        {acc} s = part[0][threadIdx.x];
        for (int k = 1; k < 8; k++) s = comb_(s, part[k][threadIdx.x]);
        partial[(size_t)blockIdx.y * {C} + c] = s;
    }}
}}
__global__ void {entry}_fin({dr}, int S, const {acc} *partial) {{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < {C}) {{
        {acc} acc = partial[c];
        for (int s = 1; s < S; s++) acc = comb_(acc, partial[(size_t)s * {C} + c]);
        {out}[c] = {final};
    }}
}}
extern "C" void {entry}({dec}) {{
    if ({C} <= 0 || {R} <= 0) return;
{SM_COUNT}    int gx = ({C} + 31) / 32;
    int S = (sms_ * 8 + gx - 1) / gx;
    int maxS = ({R} + 63) / 64;
    if (S > maxS) S = maxS;
    if (S < 1) S = 1;
    if (S > 65535) S = 65535;
    int chunk = ({R} + S - 1) / S;
    S = ({R} + chunk - 1) / chunk;
    {acc} *partial = 0;
    cudaMalloc((void **)&partial, sizeof({acc}) * (size_t)S * {C});
    {entry}_part<<<dim3(gx, S), dim3(32, 8)>>>({arg}, chunk, partial);
    {entry}_fin<<<({C} + 255) / 256, 256>>>({arg}, S, partial);
    cudaFree(partial);
}}
"""
    return [{"name": "naive", "strategy": "one thread per column looping over rows (coalesced across threads)", "source": naive},
            {"name": "tiled_smem", "strategy": "32x8 block per 32 columns, 8-way row split combined in shared memory", "source": tiled},
            {"name": "two_pass", "strategy": "rows split across gridDim.y into scratch partials, "
             "then one thread per column; fills the GPU for narrow matrices", "source": two}]
