"""transpose_layout family: out-of-place axis permutations and layout changes.

Guarantees: 72 distinct tasks after the builder's de-duplication (permute3d (0,2,1),
(1,2,0), (2,0,1) coincide with the batched-transpose and CHW/HWC programs): 2-D transposes (five element types; plain, pitched input rows,
batched), NCHW<->NHWC and CHW<->HWC image layouts, all five non-trivial 3-D axis permutations,
six 4-D permutations (attention-style head swaps, batched transposes, full reversal) and copies
into a pitched column-major buffer whose padding must stay untouched. Every task is generated
from one description (input dims, permutation, optional leading dimensions), so reference and
variants agree by construction. Variants: naive (thread per input element, scattered writes),
output-ordered gather (coalesced writes), and either a 32x33 shared-memory tile over the two
innermost axes (when the innermost axis moves) or 16-byte vector row copies (when it does not).
"""
from __future__ import annotations

import random

FAMILY = "transpose_layout"
CATEGORY = "layout"
_HDR = "#include <cuda_runtime.h>\n"
_SIZE = {"float": 4, "double": 8, "int": 4, "short": 2, "unsigned char": 1}
_INIT = {"float": "uniform(-1, 1)", "double": "uniform(-1, 1)", "int": "randint(-1000000, 1000000)",
         "short": "randint(-30000, 30000)", "unsigned char": "randint(0, 256)"}
_TAG = {"float": "f32", "double": "f64", "int": "i32", "short": "i16", "unsigned char": "u8"}


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper


def _prod(names):
    return " * ".join(names) if names else "1"


def _horner(idx, dims):
    e = idx[0]
    for i, d in zip(idx[1:], dims[1:]):
        e = f"({e}) * {d} + {i}" if "*" in e else f"{e} * {d} + {i}"
    return e


def _task(slug, entry, T, dims, ivars, perm, tests, ld_in=None, ld_out=None, src="src", dst="dst"):
    r = len(dims)
    odims = [dims[p] for p in perm]
    # stride (as a C expression) of each input axis in the input and in the output
    if ld_in:
        istr = [ld_in, "1"]
    else:
        istr = [_prod(dims[d + 1:]) for d in range(r)]
    ostr_k = [ld_out, "1"] if ld_out else [_prod(odims[k + 1:]) for k in range(r)]
    ostr = [None] * r
    for k, p in enumerate(perm):
        ostr[p] = ostr_k[k]
    in_shape = f"{dims[0]}*{ld_in}" if ld_in else "*".join(dims)
    out_shape = f"{odims[0]}*{ld_out}" if ld_out else "*".join(odims)
    sig = [_p(d, "int", "size") for d in dims]
    sig += [_p(x, "int", "size") for x in (ld_in, ld_out) if x]
    sig += [_p(src, f"const {T}*", "in", in_shape, _INIT[T]),
            _p(dst, f"{T}*", "inout" if ld_out else "out", out_shape, _INIT[T] if ld_out else None)]
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)

    in_off = f"{ivars[0]} * {ld_in} + {ivars[1]}" if ld_in else _horner(ivars, dims)
    oidx = [ivars[p] for p in perm]
    out_off = f"{oidx[0]} * {ld_out} + {oidx[1]}" if ld_out else _horner(oidx, odims)
    loops = "".join(f"{'    ' * (d + 1)}for (int {ivars[d]} = 0; {ivars[d]} < {dims[d]}; {ivars[d]}++)\n"
                    for d in range(r))
    ref = (f"void {entry}({params}) {{\n{loops}{'    ' * (r + 1)}{dst}[{out_off}] = {src}[{in_off}];\n}}\n")

    def offs(names):
        return (" + ".join(f"(size_t){ivars[d]} * {istr[d]}" if istr[d] != "1" else f"(size_t){ivars[d]}" for d in range(r)),
                " + ".join(f"(size_t){ivars[d]} * {ostr[d]}" if ostr[d] != "1" else f"(size_t){ivars[d]}" for d in range(r)))

    def decompose(order, var="t"):
        return " ".join(f"int {ivars[d]} = (int)({var} % {dims[d]}); {var} /= {dims[d]};" for d in reversed(order))

    io, oo = offs(ivars)
    total = " * ".join(f"(size_t){d}" for d in dims)
    naive = _HDR + f'''
__global__ void {entry}_k({params}) {{
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= {total}) return;
    size_t t = idx;
    {decompose(list(range(r)))}
    {dst}[{oo}] = {src}[{io}];
}}
extern "C" void {entry}({params}) {{
    size_t ntot = {total};
    if (ntot == 0) return;
    {entry}_k<<<(unsigned)((ntot + 255) / 256), 256>>>({args});
}}
'''
    gather = _HDR + f'''
__global__ void {entry}_gather({params}) {{
    size_t ntot = {total};
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < ntot; idx += (size_t)gridDim.x * blockDim.x) {{
        size_t t = idx;  // decomposed in OUTPUT axis order: consecutive threads write consecutive addresses
        {decompose(list(perm))}
        {dst}[{oo}] = __ldg(&{src}[{io}]);
    }}
}}
extern "C" void {entry}({params}) {{
    size_t ntot = {total};
    if (ntot == 0) return;
    size_t blocks = (ntot + 255) / 256; if (blocks > 132 * 32) blocks = 132 * 32;
    {entry}_gather<<<(unsigned)blocks, 256>>>({args});
}}
'''
    variants = [{"name": "naive", "strategy": "one thread per input element in input order, scattered writes", "source": naive},
                {"name": "coalesced", "strategy": "grid-stride over output order, coalesced writes, read-only cache for the gathers", "source": gather}]
    A, B = r - 1, perm[-1]
    if A != B:
        rest = [d for d in range(r) if d not in (A, B)]
        rest_n = " * ".join(f"(size_t){dims[d]}" for d in rest) if rest else "(size_t)1"
        rdec = " ".join(f"{{ int q = (int)(t % {dims[d]}); t /= {dims[d]}; ib += (size_t)q * {istr[d]}; ob += (size_t)q * {ostr[d]}; }}"
                        for d in reversed(rest))
        tiled = _HDR + f'''
#define TD 32
// tiles span input axis {dims[A]} (contiguous in {src}) and input axis {dims[B]} (contiguous in {dst})
__global__ void {entry}_tile({params}) {{
    __shared__ {T} tile[TD][TD + 1];
    int a0 = blockIdx.x * TD, b0 = blockIdx.y * TD;
    size_t nrest = {rest_n};
    for (size_t z = blockIdx.z; z < nrest; z += gridDim.z) {{  // same trip count for the whole block
        size_t t = z, ib = 0, ob = 0;
        {rdec}
        for (int y = threadIdx.y; y < TD; y += blockDim.y) {{
            int a = a0 + threadIdx.x, b = b0 + y;
            if (a < {dims[A]} && b < {dims[B]}) tile[y][threadIdx.x] = {src}[ib + (size_t)b * {istr[B]} + a];
        }}
        __syncthreads();
        for (int y = threadIdx.y; y < TD; y += blockDim.y) {{
            int a = a0 + y, b = b0 + threadIdx.x;
            if (a < {dims[A]} && b < {dims[B]}) {dst}[ob + (size_t)a * {ostr[A]} + b] = tile[threadIdx.x][y];
        }}
        __syncthreads();
    }}
}}
extern "C" void {entry}({params}) {{
    if ({total} == 0) return;
    size_t nrest = {rest_n};
    dim3 block(TD, 8), grid(({dims[A]} + TD - 1) / TD, ({dims[B]} + TD - 1) / TD, (unsigned)(nrest < 65535 ? nrest : 65535));
    {entry}_tile<<<grid, block>>>({args});
}}
'''
        variants.append({"name": "tiled_smem", "strategy": "32x33 shared-memory tile over the two axes that are innermost in input and output", "source": tiled})
    else:
        sz = _SIZE[T]
        rows = [d for d in range(r - 1)]
        rows_n = " * ".join(f"(size_t){dims[d]}" for d in rows)
        rdec = " ".join(f"{{ int q = (int)(t % {dims[d]}); t /= {dims[d]}; ib += (size_t)q * {istr[d]}; ob += (size_t)q * {ostr[d]}; }}"
                        for d in reversed(rows))
        vec = _HDR + f'''
// the innermost axis is kept: each row of {dims[A]} elements moves as 16-byte int4 chunks when the
// row length is a multiple of 16 bytes (rows then start 16-byte aligned); otherwise element by element
__global__ void {entry}_v16({params}, int cpr) {{
    size_t nch = {rows_n} * (size_t)cpr;
    for (size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x; c < nch; c += (size_t)gridDim.x * blockDim.x) {{
        size_t t = c / cpr, ib = 0, ob = 0;
        int k = (int)(c % cpr);
        {rdec}
        ((int4 *)({dst} + ob))[k] = __ldg((const int4 *)({src} + ib) + k);
    }}
}}
__global__ void {entry}_row({params}) {{
    size_t ntot = {total};
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < ntot; e += (size_t)gridDim.x * blockDim.x) {{
        size_t t = e / {dims[A]}, ib = 0, ob = 0;
        int k = (int)(e % {dims[A]});
        {rdec}
        {dst}[ob + k] = {src}[ib + k];
    }}
}}
extern "C" void {entry}({params}) {{
    size_t ntot = {total};
    if (ntot == 0) return;
    size_t rowbytes = (size_t){dims[A]} * {sz};
    if (rowbytes % 16 == 0) {{
        int cpr = (int)(rowbytes / 16);
        size_t nch = ntot * {sz} / 16, blocks = (nch + 255) / 256; if (blocks > 132 * 32) blocks = 132 * 32;
        {entry}_v16<<<(unsigned)blocks, 256>>>({args}, cpr);
    }} else {{
        size_t blocks = (ntot + 255) / 256; if (blocks > 132 * 32) blocks = 132 * 32;
        {entry}_row<<<(unsigned)blocks, 256>>>({args});
    }}
}}
'''
        variants.append({"name": "vectorized", "strategy": "rows of the kept innermost axis copied as int4 chunks, scalar fallback", "source": vec})
    rec = {"task_id": f"c2cuda/{FAMILY}/{slug}_{_TAG[T]}", "track": "c2cuda", "entry": entry,
           "signature": sig, "reference": ref, "variants": variants, "tests": tests,
           "meta": {"flops": "0", "source": "generated",
                    "knobs": {"dtype": T, "dims": dims, "perm": list(perm), "ld_in": ld_in, "ld_out": ld_out}}}
    if ld_in or ld_out:
        # Lower bound for the roofline check: each logical element read once and written once.
        # The padding of a pitched buffer is never touched, and a pitched output (inout only so
        # that its padding is kept) need not be read: every element inside it is overwritten.
        rec["meta"]["min_bytes"] = f"{2 * _SIZE[T]}*{dims[0]}*{dims[1]}"
    return rec


def _scale(T):
    # keeps ~400 MB moved for 4/8-byte types and the serial reference (scattered stores) <= ~3 s
    return {8: 0.375, 4: 0.75, 2: 1, 1: 1.5}[_SIZE[T]]


def _tests(dims, edge, ragged, perf, T, extra=None):
    s = _scale(T)
    perf = dict(zip(dims, perf))
    big = max(dims, key=lambda d: perf[d])
    perf[big] = int(perf[big] * s)
    t = [{"name": "one", "sizes": dict(zip(dims, edge))},
         {"name": "ragged", "sizes": dict(zip(dims, ragged))},
         {"name": "perf", "sizes": perf, "perf": True}]
    if extra:
        for x, e in zip(t, extra):
            x["sizes"].update(e)
    return t


def generate(rng: random.Random) -> list[dict]:
    out = []
    for T in ("float", "double", "int", "short", "unsigned char"):
        tg = _TAG[T]
        out.append(_task("transpose2d", f"transpose_{tg}", T, ["rows", "cols"], ["r", "c"], (1, 0),
                         _tests(["rows", "cols"], (1, 1), (33, 65), (8192, 8192), T), src="in", dst="out"))
        t = _tests(["rows", "cols"], (1, 1), (37, 45), (8192, 8000), T)
        for x, pad in zip(t, (0, 6, 192)):  # the row stride must cover every column
            x["sizes"]["ld"] = x["sizes"]["cols"] + pad
        out.append(_task("transpose2d_pitched", f"transpose_pitched_{tg}", T, ["rows", "cols"], ["i", "j"], (1, 0), t,
                         ld_in="ld", src="mat", dst="mat_t"))
        out.append(_task("batched_transpose", f"batch_transpose_{tg}", T, ["nb", "m", "n"], ["b", "i", "j"], (0, 2, 1),
                         _tests(["nb", "m", "n"], (1, 1, 1), (3, 17, 41), (64, 1024, 1024), T), src="batch_in", dst="batch_out"))
    for T in ("float", "double", "int", "unsigned char"):
        tg = _TAG[T]
        nd = ["N", "C", "H", "W"]
        out.append(_task("nchw_to_nhwc", f"nchw_to_nhwc_{tg}", T, nd, ["n", "c", "h", "w"], (0, 2, 3, 1),
                         _tests(nd, (1, 1, 1, 1), (2, 3, 17, 33), (32, 32, 256, 256), T), src="input", dst="output"))
        nd2 = ["N", "H", "W", "C"]
        out.append(_task("nhwc_to_nchw", f"nhwc_to_nchw_{tg}", T, nd2, ["n", "h", "w", "c"], (0, 3, 1, 2),
                         _tests(nd2, (1, 1, 1, 1), (2, 19, 13, 5), (32, 256, 256, 32), T), src="input", dst="output"))
        out.append(_task("chw_to_hwc", f"chw_to_hwc_{tg}", T, ["channels", "height", "width"], ["ch", "y", "x"], (1, 2, 0),
                         _tests(["channels", "height", "width"], (1, 1, 1), (3, 31, 47), (3, 4096, 5461), T), src="planar", dst="interleaved"))
        out.append(_task("hwc_to_chw", f"hwc_to_chw_{tg}", T, ["height", "width", "channels"], ["y", "x", "ch"], (2, 0, 1),
                         _tests(["height", "width", "channels"], (1, 1, 1), (29, 51, 4), (4096, 4096, 4), T), src="interleaved", dst="planar"))
        # copy of a row-major matrix into a pitched column-major buffer (padding rows untouched)
        t = _tests(["rows", "cols"], (1, 1), (45, 23), (8000, 8192), T)
        for x, pad in zip(t, (0, 5, 64)):  # the column stride must cover every row
            x["sizes"]["ldc"] = x["sizes"]["rows"] + pad
        out.append(_task("to_colmajor_pitched", f"to_colmajor_{tg}", T, ["rows", "cols"], ["i", "j"], (1, 0), t,
                         ld_out="ldc", src="rm", dst="cm"))
    names3 = ["nx", "ny", "nz"]
    for T in ("float", "double", "int", "short", "unsigned char"):
        tg = _TAG[T]
        for perm in ((0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)):
            p = "".join(map(str, perm))
            out.append(_task(f"permute3d_{p}", f"permute3_{p}_{tg}", T, names3, ["x", "y", "z"], perm,
                             _tests(names3, (1, 1, 1), (5, 37, 45), (256, 512, 512), T), src="field", dst="perm"))
    names4 = ["d0", "d1", "d2", "d3"]
    for T in ("float", "double", "int", "short"):
        tg = _TAG[T]
        for perm in ((0, 2, 1, 3), (1, 0, 2, 3), (0, 1, 3, 2), (3, 2, 1, 0), (2, 0, 3, 1), (1, 3, 0, 2)):
            p = "".join(map(str, perm))
            out.append(_task(f"permute4d_{p}", f"permute4_{p}_{tg}", T, names4, ["a", "b", "c", "d"], perm,
                             _tests(names4, (1, 1, 1, 1), (2, 3, 37, 19), (64, 128, 64, 128), T), src="in4", dst="out4"))
    rng.shuffle(out)
    return out
