"""Segment-wise tasks (reductions, softmax, normalisations, losses) from one description.

A segment is `len` elements at stride `inner` of a tensor viewed as (outer, len, inner); the
description is a list of steps run per segment:

    ("red", var, "sum"|"max"|"min", term)  # var = reduce(term) over k; term reads xv, yv, k, r
    ("let", var, expr)
    final ("map", expr)        -> out has x's shape, out[o, k, i] = expr
          ("seg", expr)        -> out has one value per segment (r = o*inner + i)
          ("acc", expr, scale) -> out is one scalar: sum over segments of expr*scale

Guarantees: the CUDA variants compute the same description: "naive" (one thread per segment,
serial loops), and either "block_per_row" (inner == 1: one 256-thread block per segment,
strided loads, warp-shuffle + shared-memory reductions) or "tile32x8" (inner > 1: 32 adjacent
segments per block so loads along `inner` coalesce, 8 threads share each segment's loop and
combine in shared memory). "acc" outputs are zeroed with cudaMemsetAsync on the default stream
before the kernel; every access is bounds-checked and offsets are 64-bit.
"""
from __future__ import annotations

from cudaperf.torchtasks._kit import BLOCK, COMBINE, CUDA_REDUCE, HDR, IDENT, cparams, grid1d

Steps = list[tuple]


def _comb(kind: str, a: str, b: str) -> str:
    return COMBINE[kind].format(a=a, b=b)


def _load(two: bool, ptr_off: str) -> str:
    s = f"float xv = xs[{ptr_off}];"
    return s + (f" float yv = ys[{ptr_off}];" if two else "")


def row_sources(*, entry: str, sig: list[dict], outer: str, length: str, inner: str, steps: Steps,
                final: tuple, two: bool = False, extra_args: list[tuple[str, str]] = (), prelude: str = "") -> list[tuple[str, str, str]]:
    """[(variant, strategy, source)]: naive + the optimised variant for this layout.

    extra_args: (C type, name) of read-only arrays the terms index (parameters, targets).
    """
    xp = ["const float *__restrict__ x"] + (["const float *__restrict__ y"] if two else [])
    xa = ["x"] + (["y"] if two else [])
    kpar = ", ".join(xp + [f"const {t} *__restrict__ {n}" for t, n in extra_args] + ["float *__restrict__ out"])
    karg = ", ".join(xa + [n for _, n in extra_args] + ["out"])
    inner_is_one = inner.strip() == "1"
    setup = (f"    long long outer = {outer}; int len = {length}; long long inner = {inner};\n"
             "    if (outer <= 0 || inner <= 0) return;\n")
    if final[0] == "acc":
        setup += "    cudaMemsetAsync(out, 0, sizeof(float), 0);\n"
    if final[0] in ("map", "seg"):
        setup += "    if (len <= 0) return;\n"
    scale = final[2] if final[0] == "acc" else None

    # ---------------- naive
    L = [HDR + prelude, f"__global__ void row_naive(long long nseg, int len, long long inner, {kpar}) {{",
         "    long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
         "    if (r >= nseg) return;",
         "    long long o = r / inner, i = r % inner;",
         "    const float *xs = x + o * len * inner + i;"]
    if two:
        L.append("    const float *ys = y + o * len * inner + i;")
    for st in steps:
        if st[0] == "let":
            L.append(f"    float {st[1]} = {st[2]};")
        else:
            _, var, kind, term = st
            L.append(f"    float {var} = {IDENT[kind]};")
            L.append(f"    for (int k = 0; k < len; k++) {{ {_load(two, '(long long)k * inner')} "
                     f"{var} = {_comb(kind, var, '(' + term + ')')}; }}")
    if final[0] == "map":
        L.append(f"    for (int k = 0; k < len; k++) {{ {_load(two, '(long long)k * inner')} "
                 f"out[o * len * inner + (long long)k * inner + i] = {final[1]}; }}")
    elif final[0] == "seg":
        L.append(f"    out[r] = {final[1]};")
    else:
        L.append(f"    atomicAdd(out, ({final[1]}) * scale);")
    L.append("}")
    naive_kpar = kpar + (", float scale" if scale else "")
    L[1] = f"__global__ void row_naive(long long nseg, int len, long long inner, {naive_kpar}) {{"
    L.append(f'extern "C" void {entry}({cparams(sig)}) {{')
    L.append(setup + "    long long nseg = outer * inner;")
    L.append(f"    row_naive<<<{grid1d('nseg')}, {BLOCK}>>>(nseg, len, inner, {karg}{', ' + scale if scale else ''});")
    L.append("}")
    naive = "\n".join(L) + "\n"

    # ---------------- optimised
    if inner_is_one:
        L = [HDR + prelude, CUDA_REDUCE,
             f"__global__ void row_block(int len, {naive_kpar}) {{",
             "    long long r = blockIdx.x;",
             "    const float *xs = x + r * len;"]
        if two:
            L.append("    const float *ys = y + r * len;")
        for st in steps:
            if st[0] == "let":
                L.append(f"    float {st[1]} = {st[2]};")
            else:
                _, var, kind, term = st
                L.append(f"    float {var};")
                L.append(f"    {{ float acc = {IDENT[kind]};")
                L.append(f"      for (int k = threadIdx.x; k < len; k += blockDim.x) {{ {_load(two, 'k')} "
                         f"acc = {_comb(kind, 'acc', '(' + term + ')')}; }}")
                L.append(f"      {var} = block_{kind}(acc); }}")
        if final[0] == "map":
            L.append(f"    for (int k = threadIdx.x; k < len; k += blockDim.x) {{ {_load(two, 'k')} "
                     f"out[r * len + k] = {final[1]}; }}")
        elif final[0] == "seg":
            L.append(f"    if (threadIdx.x == 0) out[r] = {final[1]};")
        else:
            L.append(f"    if (threadIdx.x == 0) atomicAdd(out, ({final[1]}) * scale);")
        L.append("}")
        L.append(f'extern "C" void {entry}({cparams(sig)}) {{')
        L.append(setup + "    (void)inner;")
        L.append(f"    row_block<<<(unsigned)outer, {BLOCK}>>>(len, {karg}{', ' + scale if scale else ''});")
        L.append("}")
        return [("naive", "one thread per segment, serial loops", naive),
                ("block_per_row", "one block per segment, strided loads, shuffle + shared-memory reductions",
                 "\n".join(L) + "\n")]

    L = [HDR + prelude, f"__global__ void row_tile(long long outer, int len, long long inner, {naive_kpar}) {{",
         "    __shared__ float sh[8][33];",
         "    __shared__ float res[32];",
         "    int tx = threadIdx.x, ty = threadIdx.y;",
         "    long long i = (long long)blockIdx.x * 32 + tx;",
         "    bool live = i < inner;",
         "    for (long long o = blockIdx.y; o < outer; o += gridDim.y) {",
         "        long long r = o * inner + i;",
         "        const float *xs = x + o * len * inner + (live ? i : 0);"]
    if two:
        L.append("        const float *ys = y + o * len * inner + (live ? i : 0);")
    for st in steps:
        if st[0] == "let":
            L.append(f"        float {st[1]} = {st[2]};")
        else:
            _, var, kind, term = st
            L += [f"        float {var};",
                  f"        {{ float acc = {IDENT[kind]};",
                  f"          if (live) for (int k = ty; k < len; k += 8) {{ {_load(two, '(long long)k * inner')} "
                  f"acc = {_comb(kind, 'acc', '(' + term + ')')}; }}",
                  "          sh[ty][tx] = acc;",
                  "          __syncthreads();",
                  f"          if (ty == 0) {{ float a = sh[0][tx]; for (int j = 1; j < 8; j++) a = {_comb(kind, 'a', 'sh[j][tx]')}; res[tx] = a; }}",
                  "          __syncthreads();",
                  f"          {var} = res[tx];",
                  "          __syncthreads(); }"]
    if final[0] == "map":
        L.append(f"        if (live) for (int k = ty; k < len; k += 8) {{ {_load(two, '(long long)k * inner')} "
                 f"out[o * len * inner + (long long)k * inner + i] = {final[1]}; }}")
    elif final[0] == "seg":
        L.append(f"        if (live && ty == 0) out[r] = {final[1]};")
    else:
        L.append(f"        if (live && ty == 0) atomicAdd(out, ({final[1]}) * scale);")
    L += ["    }", "}", f'extern "C" void {entry}({cparams(sig)}) {{', setup,
          "    long long gy = outer < 65535 ? outer : 65535;",
          "    dim3 grid((unsigned)((inner + 31) / 32), (unsigned)gy), block(32, 8);",
          f"    row_tile<<<grid, block>>>(outer, len, inner, {karg}{', ' + scale if scale else ''});", "}"]
    return [("naive", "one thread per segment, serial loops (coalesced along inner)", naive),
            ("tile32x8", "32 segments per block, 8 threads per segment, shared-memory combine",
             "\n".join(L) + "\n")]


LAYOUTS = {  # name -> (dims, torch dim, outer, len, inner)
    "2d_last": (["batch_size", "dim"], 1, "batch_size", "dim", "1"),
    "3d_last": (["batch_size", "dim1", "dim2"], 2, "(long long)batch_size * dim1", "dim2", "1"),
    "3d_mid": (["batch_size", "dim1", "dim2"], 1, "batch_size", "dim1", "(long long)dim2"),
}
SMALL = {
    "2d_last": [{"batch_size": 1, "dim": 2}, {"batch_size": 3, "dim": 1001}, {"batch_size": 5, "dim": 33}],
    "3d_last": [{"batch_size": 1, "dim1": 1, "dim2": 2}, {"batch_size": 2, "dim1": 3, "dim2": 517},
                {"batch_size": 3, "dim1": 5, "dim2": 31}],
    "3d_mid": [{"batch_size": 1, "dim1": 2, "dim2": 1}, {"batch_size": 2, "dim1": 37, "dim2": 45},
               {"batch_size": 3, "dim1": 300, "dim2": 7}],
}
PERF = {
    "2d_last": [(4096, 16384), (16384, 4096), (1024, 32768), (32768, 1024)],
    "3d_last": [(64, 256, 4096), (16, 512, 8192), (256, 128, 2048)],
    "3d_mid": [(64, 1024, 1024), (128, 256, 2048), (16, 4096, 1024)],
}


def post_fn(ops: list[str]) -> str:
    """A __device__ `post(v)` applying element-wise ops (identity when none)."""
    from cudaperf.torchtasks._kit import UNARY
    body = " ".join(f"v = {UNARY[o][1]};" for o in ops)
    return f"__device__ __forceinline__ float post(float v) {{ {body} return v; }}\n"
