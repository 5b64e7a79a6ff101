"""Row/column normalisations of a matrix: softmax, log-softmax, logsumexp, layernorm, rmsnorm, L2.

Guarantees: every task is a distinct serial C program that normalises each row (contiguous) or
each column (stride `cols`) of a row-major rows x cols matrix, out of place or in place, in
float or double. Each operation is described once as a sequence of segment reductions and
element maps; the reference, the naive CUDA translation (one thread per segment) and the
optimised variants (a warp or a block per row with shuffle/shared-memory reductions; for
columns a 32x8 shared-memory tile and a read-only-cache variant) are all generated from that
description, so they compute the same mathematics. Segments of length 1 and ragged shapes are
handled; float tasks get a reduction-order tolerance.
"""
from __future__ import annotations

import random

from cudaperf.families._d2kit import FLOAT_TOL, P, T, TYPES, V, cargs, cparams, record

FAMILY = "row_softmax"
CATEGORY = "reduction"

NEG = {"float": "-3.402823466e38f", "double": "-1.7976931348623157e308"}


def _ops(ty):
    """op -> (steps, final, extra params); steps: ('red', var, 'max'|'sum', term(X, k)) or
    ('let', var, expr); final: ('map', expr(X, k)) or ('seg', expr)."""
    L = ty.lit
    return {
        "softmax": ([("red", "m", "max", lambda X, k: X), ("red", "s", "sum", lambda X, k: f"{{exp}}({X} - m)"),
                     ("let", "inv", f"{L(1)} / s")],
                    ("map", lambda X, k: f"{{exp}}({X} - m) * inv"), []),
        "softmax_temp": ([("red", "m", "max", lambda X, k: X),
                          ("red", "s", "sum", lambda X, k: f"{{exp}}(({X} - m) * inv_temp)"),
                          ("let", "inv", f"{L(1)} / s")],
                         ("map", lambda X, k: f"{{exp}}(({X} - m) * inv_temp) * inv"), ["inv_temp"]),
        "log_softmax": ([("red", "m", "max", lambda X, k: X), ("red", "s", "sum", lambda X, k: f"{{exp}}({X} - m)"),
                         ("let", "lse", "m + {log}(s)")],
                        ("map", lambda X, k: f"{X} - lse"), []),
        "logsumexp": ([("red", "m", "max", lambda X, k: X), ("red", "s", "sum", lambda X, k: f"{{exp}}({X} - m)")],
                      ("seg", "m + {log}(s)"), []),
        "layernorm_affine": ([("red", "sum1", "sum", lambda X, k: X), ("let", "mean", "sum1 / len"),
                              ("red", "sum2", "sum", lambda X, k: f"({X} - mean) * ({X} - mean)"),
                              ("let", "rstd", f"{L(1)} / {{sqrt}}(sum2 / len + {L(1e-5)})")],
                             ("map", lambda X, k: f"({X} - mean) * rstd * gamma[{k}] + beta[{k}]"),
                             ["gamma", "beta"]),
        "layernorm": ([("red", "sum1", "sum", lambda X, k: X), ("let", "mean", "sum1 / len"),
                       ("red", "sum2", "sum", lambda X, k: f"({X} - mean) * ({X} - mean)"),
                       ("let", "rstd", f"{L(1)} / {{sqrt}}(sum2 / len + {L(1e-5)})")],
                      ("map", lambda X, k: f"({X} - mean) * rstd"), []),
        "rmsnorm_weight": ([("red", "ss", "sum", lambda X, k: f"{X} * {X}"),
                            ("let", "rrms", f"{L(1)} / {{sqrt}}(ss / len + {L(1e-6)})")],
                           ("map", lambda X, k: f"{X} * rrms * weight[{k}]"), ["weight"]),
        "rmsnorm_offset": ([("red", "ss", "sum", lambda X, k: f"{X} * {X}"),
                            ("let", "rrms", f"{L(1)} / {{sqrt}}(ss / len + {L(1e-6)})")],
                           ("map", lambda X, k: f"{X} * rrms * ({L(1)} + weight[{k}])"), ["weight"]),
        "rmsnorm": ([("red", "ss", "sum", lambda X, k: f"{X} * {X}"),
                     ("let", "rrms", f"{L(1)} / {{sqrt}}(ss / len + {L(1e-6)})")],
                    ("map", lambda X, k: f"{X} * rrms"), []),
        "l2_normalize": ([("red", "ss", "sum", lambda X, k: f"{X} * {X}"),
                          ("let", "inv", f"{L(1)} / {{fmax}}({{sqrt}}(ss), {L(1e-12)})")],
                         ("map", lambda X, k: f"{X} * inv"), []),
    }


ENTRY = {"softmax": "softmax", "softmax_temp": "softmax_temperature", "log_softmax": "log_softmax",
         "logsumexp": "logsumexp", "layernorm_affine": "layer_norm", "layernorm": "normalize_mean_var",
         "rmsnorm_weight": "rms_norm", "rmsnorm": "rms_normalize", "rmsnorm_offset": "rms_norm_unit_offset", "l2_normalize": "l2_normalize"}


def _fmt(s: str, fns: dict) -> str:
    for k, v in fns.items():
        s = s.replace("{" + k + "}", v)
    return s


REF_FNS = {"exp": "exp", "log": "log", "sqrt": "sqrt", "fmax": "fmax"}


def _dev_fns(ty):
    return {k: ty.fn(k) for k in REF_FNS}


def _serial_body(op, ty, src, dst, idx, ind, fns, seg_out):
    """Serial code normalising one segment; idx(k) gives the element index of position k."""
    steps, final, _ = _ops(ty)[op]
    tn = ty.name
    X = lambda k: f"{src}[{idx(k)}]"
    L = []
    for st in steps:
        if st[0] == "let":
            L.append(f"{ind}{tn} {st[1]} = {_fmt(st[2], fns)};")
        elif st[2] == "max":
            L.append(f"{ind}{tn} {st[1]} = {X('0')};")
            L.append(f"{ind}for (int k = 1; k < len; k++) if ({X('k')} > {st[1]}) {st[1]} = {X('k')};")
        else:
            L.append(f"{ind}{tn} {st[1]} = {ty.zero};")
            L.append(f"{ind}for (int k = 0; k < len; k++) {st[1]} += {_fmt(st[3](X('k'), 'k'), fns)};")
    if final[0] == "map":
        L.append(f"{ind}for (int k = 0; k < len; k++) {dst}[{idx('k')}] = {_fmt(final[1](X('k'), 'k'), fns)};")
    else:
        L.append(f"{ind}{seg_out} = {_fmt(final[1], fns)};")
    return L


def _layout(axis):
    """(segment count, segment length, index(seg, k)) as C expressions."""
    if axis == "row":
        return "rows", "cols", lambda s, k: f"{s} * cols + {k}"
    return "cols", "rows", lambda s, k: f"{k} * cols + {s}"


def _reference(entry, sig, op, axis, inplace, ty):
    src = "x"
    dst = "x" if inplace else "y"
    nseg, nlen, ix = _layout(axis)
    s = "r" if axis == "row" else "c"
    L = [f"void {entry}({cparams(sig)}) {{", f"    const int len = {nlen};",
         f"    for (int {s} = 0; {s} < {nseg}; {s}++) {{"]
    L += _serial_body(op, ty, src, dst, lambda k: ix(s, k), "        ", REF_FNS, f"out[{s}]")
    L += ["    }", "}"]
    return "\n".join(L)


def _par_body(op, ty, src, dst, idx, fns, seg_out, start, step, reduce, seg_guard, store_if=""):
    """Parallel version: each thread strides k from `start` by `step`; `reduce(var, op)` emits
    the combine that leaves the full reduction in every thread of the group."""
    steps, final, _ = _ops(ty)[op]
    tn = ty.name
    X = lambda k: f"{src}[{idx(k)}]"
    L = []
    for st in steps:
        if st[0] == "let":
            L.append(f"    {tn} {st[1]} = {_fmt(st[2], fns)};")
            continue
        init = NEG[tn] if st[2] == "max" else ty.zero
        L.append(f"    {tn} {st[1]} = {init};")
        upd = (f"{st[1]} = {ty.fn('fmax')}({st[1]}, {X('k')})" if st[2] == "max"
               else f"{st[1]} += {_fmt(st[3](X('k'), 'k'), fns)}")
        L.append(f"    for (int k = {start}; k < len; k += {step}) {upd};")
        L += reduce(st[1], st[2])
    if final[0] == "map":
        L.append(f"    for (int k = {start}; k < len; k += {step}) {store_if}{dst}[{idx('k')}] = "
                 f"{_fmt(final[1](X('k'), 'k'), fns)};")
    else:
        L.append(f"    if ({seg_guard}) {seg_out} = {_fmt(final[1], fns)};")
    return "\n".join(L)


def _variants(entry, sig, op, axis, inplace, ty):
    tn = ty.name
    ps, args = cparams(sig), cargs(sig)
    src, dst = "x", ("x" if inplace else "y")
    nseg, nlen, ix = _layout(axis)
    fns = _dev_fns(ty)
    comb = lambda a, b, o: f"{ty.fn('fmax')}({a}, {b})" if o == "max" else f"{a} + {b}"
    body = "\n".join(_serial_body(op, ty, src, dst, lambda k: ix("(size_t)seg", k), "    ", fns, "out[seg]"))
    naive = f"""
__global__ void {entry}_k({ps}) {{
    int seg = blockIdx.x * blockDim.x + threadIdx.x;
    if (seg >= {nseg}) return;
    const int len = {nlen};
{body}
}}
extern "C" void {entry}({ps}) {{
    if (rows <= 0 || cols <= 0) return;
    {entry}_k<<<({nseg} + 255) / 256, 256>>>({args});
}}
"""
    naive_v = V("naive", f"one thread per {axis}, serial passes as in the C code", naive)
    if axis == "row":
        def warp_red(v, o):
            return [f"    for (int off = 16; off > 0; off >>= 1) {v} = {comb(v, f'__shfl_xor_sync(0xffffffffu, {v}, off)', o)};"]
        wb = _par_body(op, ty, src, dst, lambda k: ix("(size_t)seg", k), fns, "out[seg]", "lane", "32",
                       warp_red, "lane == 0")
        warp = f"""
__global__ void {entry}_warp({ps}) {{
    long long gw = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (gw >= rows) return;  // whole warps leave together: rows are warp-uniform
    int seg = (int)gw;
    const int len = {nlen};
{wb}
}}
extern "C" void {entry}({ps}) {{
    if (rows <= 0 || cols <= 0) return;
    long long threads = (long long)rows * 32;
    {entry}_warp<<<(unsigned)((threads + 255) / 256), 256>>>({args});
}}
"""
        def block_red(v, o):
            return [f"    {v} = block_all_{o}({v}, red);"]
        bb = _par_body(op, ty, src, dst, lambda k: ix("(size_t)seg", k), fns, "out[seg]", "threadIdx.x",
                       "blockDim.x", block_red, "threadIdx.x == 0")
        helpers = ""
        for o in ("max", "sum"):
            helpers += f"""
__device__ {tn} block_all_{o}({tn} v, {tn} *red) {{
    for (int off = 16; off > 0; off >>= 1) v = {comb('v', '__shfl_xor_sync(0xffffffffu, v, off)', o)};
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();  // red[] may still be read by the previous reduction
    if (lane == 0) red[w] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? red[lane] : {NEG[tn] if o == 'max' else ty.zero};
    for (int off = 16; off > 0; off >>= 1) v = {comb('v', '__shfl_xor_sync(0xffffffffu, v, off)', o)};
    return v;
}}
"""
        block = f"""
{helpers}
__global__ void __launch_bounds__(256) {entry}_block({ps}) {{
    __shared__ {tn} red[32];
    int seg = blockIdx.x;
    const int len = {nlen};
{bb}
}}
extern "C" void {entry}({ps}) {{
    if (rows <= 0 || cols <= 0) return;
    {entry}_block<<<rows, 256>>>({args});
}}
"""
        return [naive_v,
                V("warp_shuffle", "one warp per row, lane-strided coalesced loads, butterfly "
                  "__shfl_xor_sync reductions", warp),
                V("block_reduce", "one 256-thread block per row, warp shuffles plus a shared-memory "
                  "stage for the block-wide max/sum", block)]
    # column axis: 32 columns x 8 row groups per block, partial results combined in smem
    def tile_red(v, o):
        return [f"    part[threadIdx.y][threadIdx.x] = {v};", "    __syncthreads();",
                f"    {v} = part[0][threadIdx.x];",
                f"    for (int q = 1; q < 8; q++) {v} = {comb(v, 'part[q][threadIdx.x]', o)};",
                "    __syncthreads();"]
    tb = _par_body(op, ty, src, dst, lambda k: ix("(size_t)seg", k), fns, "out[seg]", "ty0", "8",
                   tile_red, "threadIdx.y == 0 && live", store_if="if (live) ")
    # loads of columns past the edge are redirected to column 0 (valid memory, result unused);
    # no thread returns early because every thread takes part in the tile barriers
    tiled = f"""
__global__ void {entry}_tile({ps}) {{
    __shared__ {tn} part[8][33];
    int col = blockIdx.x * 32 + threadIdx.x;
    bool live = col < cols;
    int seg = live ? col : 0;
    int ty0 = threadIdx.y;
    const int len = {nlen};
{tb}
}}
extern "C" void {entry}({ps}) {{
    if (rows <= 0 || cols <= 0) return;
    dim3 block(32, 8), grid((cols + 31) / 32);
    {entry}_tile<<<grid, block>>>({args});
}}
"""
    ldg_body = body if inplace else _fix_ldg(body, src)
    ldg = f"""
__global__ void __launch_bounds__(64) {entry}_ldg({ps.replace(f'const {tn} *x', f'const {tn} *__restrict__ x')}) {{
    int seg = blockIdx.x * blockDim.x + threadIdx.x;
    if (seg >= {nseg}) return;
    const int len = {nlen};
{ldg_body}
}}
extern "C" void {entry}({ps}) {{
    if (rows <= 0 || cols <= 0) return;
    {entry}_ldg<<<({nseg} + 63) / 64, 64>>>({args});
}}
"""
    return [naive_v,
            V("tiled_smem", "32 columns x 8 row-groups per block, partial reductions combined "
              "through a padded shared-memory tile, coalesced row-wise loads", tiled),
            V("ldg_restrict", "one thread per column (coalesced across the warp), 64-thread blocks "
              "for more resident blocks, read-only cache loads" if not inplace else
              "one thread per column, 64-thread blocks for more resident blocks", ldg)]


def _fix_ldg(body, src):
    """Route reads of the input through __ldg (only for out-of-place tasks)."""
    out, i = [], 0
    key = f"{src}["
    while True:
        j = body.find(key, i)
        if j < 0:
            out.append(body[i:])
            break
        if j > 0 and (body[j - 1].isalnum() or body[j - 1] == "_"):
            out.append(body[i:j + len(key)])
            i = j + len(key)
            continue
        depth, k = 1, j + len(key)
        while depth:
            depth += {"[": 1, "]": -1}.get(body[k], 0)
            k += 1
        out.append(body[i:j] + f"__ldg(&{body[j:k]})")
        i = k
    return "".join(out)


def generate(rng: random.Random) -> list[dict]:
    out = []
    ops = list(_ops(TYPES["float"]))
    combos = [(op, ax, ip, tn) for op in ops for ax in ("row", "col") for ip in (False, True)
              for tn in ("float", "double") if not (ip and op == "logsumexp")]
    for op, axis, inplace, tn in combos:
        ty = TYPES[tn]
        _, final, extra = _ops(ty)[op]
        entry = f"{ENTRY[op]}_{'rows' if axis == 'row' else 'cols'}{'_inplace' if inplace else ''}_{ty.tag}"
        nlen = "cols" if axis == "row" else "rows"
        nseg = "rows" if axis == "row" else "cols"
        sig = [P("rows", "int", "size"), P("cols", "int", "size")]
        if inplace:
            sig.append(P("x", f"{tn}*", "inout", "rows*cols", "uniform(-4, 4)"))
        else:
            sig.append(P("x", f"const {tn}*", "in", "rows*cols", "uniform(-4, 4)"))
        for e in extra:
            if e == "inv_temp":
                sig.append(P(e, tn, "scalar", init="uniform(0.5, 2)"))
            else:
                sig.append(P(e, f"const {tn}*", "in", nlen,
                             "uniform(0.5, 1.5)" if e != "beta" else "uniform(-0.5, 0.5)"))
        if final[0] == "seg":
            sig.append(P("out", f"{tn}*", "out", nseg))
        elif not inplace:
            sig.append(P("y", f"{tn}*", "out", "rows*cols"))
        ref = _reference(entry, sig, op, axis, inplace, ty)
        big = (8192, 4096) if tn == "float" else (4096, 4096)
        tests = [T("one", {"rows": 1, "cols": 1}), T("odd", {"rows": 37, "cols": 1001}),
                 T("tall", {"rows": 1003, "cols": 7}), T("perf", {"rows": big[0], "cols": big[1]}, perf=True)]
        out.append(record(FAMILY, f"{op}_{axis}_{'inplace' if inplace else 'outofplace'}_{ty.tag}",
                          entry, sig, ref, _variants(entry, sig, op, axis, inplace, ty), tests,
                          {"op": op, "axis": axis, "inplace": inplace, "dtype": tn},
                          flops="5*rows*cols",
                          tolerance=FLOAT_TOL if tn == "float" else None))
    return out
