"""symmetric_ops family: symmetric/triangular/diagonal matrix manipulations and per-matrix reductions.

Guarantees: 79 distinct tasks: symmetric and skew parts, A + A^T, in-place triangle fills,
upper/lower triangles with diagonal offset, row/column/two-sided diagonal scaling, packing of
the upper triangle and unpacking to a full symmetric matrix (each for one matrix or a batch,
float and double); diagonal extraction and shift (batched); and per-matrix reductions (trace,
trace of a product, log of the diagonal product, off-diagonal energy, largest asymmetry);
a few int versions. Matrices are row-major n x n, batches contiguous. Variants: naive (thread
per element or per matrix, in the loop order of the C code); transposing ops get a 32x33
shared-memory tile of A^T; other maps get 2-D grids and vector loads; reductions get a warp
or a block per matrix.
"""
from __future__ import annotations

import random

FAMILY = "symmetric_ops"
CATEGORY = "linalg"
_HDR = "#include <cuda_runtime.h>\n#include <math.h>\n"

# name: (transposes, inout, extra, cond (j vs i) or None, value expression over A(i,j)/A(j,i)/d[])
_MAPS = {
    "sym_part": (True, False, None, None, "0.5 * (A(i, j) + A(j, i))"),
    "skew_part": (True, False, None, None, "0.5 * (A(i, j) - A(j, i))"),
    "sym_sum": (True, False, None, None, "A(i, j) + A(j, i)"),
    "fill_upper": (True, True, None, "j > i", "A(j, i)"),
    "fill_lower": (True, True, None, "j < i", "A(j, i)"),
    "triu": (False, False, None, None, "j >= i ? A(i, j) : 0"),
    "triu_strict": (False, False, None, None, "j > i ? A(i, j) : 0"),
    "tril": (False, False, None, None, "j <= i ? A(i, j) : 0"),
    "tril_strict": (False, False, None, None, "j < i ? A(i, j) : 0"),
    "scale_rows": (False, False, "d", None, "d[i] * A(i, j)"),
    "scale_cols": (False, False, "d", None, "A(i, j) * d[j]"),
    "sym_scale": (False, False, "d", None, "d[i] * A(i, j) * d[j]"),
    "unpack_sym": (False, False, None, None, "i <= j ? AP(i, j) : AP(j, i)"),
    "pack_upper": (False, False, None, "j >= i", "A(i, j)"),
}
_RED = {  # name: which elements the reduction reads
    "trace": "diag", "trace_prod": "all", "log_diag": "diag", "offdiag_energy": "all", "max_asym": "all",
}


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper


def _sizes(T, batched, n_small):
    sz = {"float": 4, "double": 8, "int": 4}[T]
    if batched:
        return {"one": {"batch": 1, "n": 1}, "ragged": {"batch": 3, "n": 37},
                "perf": {"batch": (1 << 28) // (sz * n_small * n_small), "n": n_small}}
    return {"one": {"n": 1}, "ragged": {"n": 37}, "odd": {"n": 1001}, "perf": {"n": 8192 if sz == 4 else 6144}}


def _map_task(op, T, batched):
    trans, inout, extra, cond, val = _MAPS[op]
    pre = {"float": "s", "double": "d", "int": "i"}[T]
    entry = f"{pre}{op}{'_batched' if batched else ''}"
    half = "0.5f" if T == "float" else "0.5"
    val = val.replace("0.5", half)
    bdim = "batch" if batched else None
    nn = "n*n"
    packed_in = op == "unpack_sym"
    packed_out = op == "pack_upper"
    sig = ([_p("batch", "int", "size")] if batched else []) + [_p("n", "int", "size")]
    init = "randint(-1000, 1000)" if T == "int" else "uniform(-1, 1)"
    bmul = "batch*" if batched else ""
    if packed_in:
        sig.append(_p("ap", f"const {T}*", "in", f"{bmul}(n*(n+1)//2)", init))
    elif not inout:
        sig.append(_p("a", f"const {T}*", "in", f"{bmul}{nn}", init))
    if extra:
        sig.append(_p("d", f"const {T}*", "in", f"{bmul}n", "uniform(0.5, 2)"))
    if inout:
        sig.append(_p("a", f"{T}*", "inout", f"{bmul}{nn}", init))
    elif packed_out:
        sig.append(_p("ap", f"{T}*", "out", f"{bmul}(n*(n+1)//2)"))
    else:
        sig.append(_p("out", f"{T}*", "out", f"{bmul}{nn}"))
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)
    dname = "d"

    def expr(i, j, b, cast=""):
        base = f"{cast}{b} * n * n + " if batched else ""
        pbase = f"{cast}{b} * (n * (n + 1) / 2) + " if batched else ""
        dbase = f"{cast}{b} * n + " if batched else ""
        e = val
        e = e.replace("A(i, j)", f"a[{base}{cast}{i} * n + {j}]").replace("A(j, i)", f"a[{base}{cast}{j} * n + {i}]")
        e = e.replace("AP(i, j)", f"ap[{pbase}{i} + {cast}{j} * ({j} + 1) / 2]").replace("AP(j, i)", f"ap[{pbase}{j} + {cast}{i} * ({i} + 1) / 2]")
        e = e.replace("d[i]", f"{dname}[{dbase}{i}]").replace("d[j]", f"{dname}[{dbase}{j}]")
        e = e.replace("j >= i", f"{j} >= {i}").replace("j > i", f"{j} > {i}").replace("j <= i", f"{j} <= {i}").replace("j < i", f"{j} < {i}")
        return e

    def dst(i, j, b, cast=""):
        if packed_out:
            return f"ap[{f'{cast}{b} * (n * (n + 1) / 2) + ' if batched else ''}{i} + {cast}{j} * ({j} + 1) / 2]"
        arr = "a" if inout else "out"
        return f"{arr}[{f'{cast}{b} * n * n + ' if batched else ''}{cast}{i} * n + {j}]"

    jlo, jhi = {"j > i": ("i + 1", "n"), "j < i": ("0", "i"), "j >= i": ("i", "n"), None: ("0", "n")}[cond]
    loops = ("    for (int b = 0; b < batch; b++)\n" if batched else "")
    ind = "    " * (2 if batched else 1)
    ref = (f"void {entry}({params}) {{\n{loops}"
           f"{ind}for (int i = 0; i < n; i++)\n{ind}    for (int j = {jlo}; j < {jhi}; j++)\n"
           f"{ind}        {dst('i', 'j', 'b')} = {expr('i', 'j', 'b')};\n}}\n")
    total = "(size_t)batch * n * n" if batched else "(size_t)n * n"
    guard = f"if (!({cond.replace('j', 'j').replace('i', 'i')})) return;" if cond else ""
    naive = _HDR + f'''
__global__ void {entry}_k({params}) {{
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= {total}) return;
    int j = (int)(idx % n), i = (int)(idx / n % n);
    {"size_t b = idx / ((size_t)n * n);" if batched else ""}
    {guard}
    {dst("i", "j", "b", "(size_t)")} = {expr("i", "j", "b", "(size_t)")};
}}
extern "C" void {entry}({params}) {{
    size_t total = {total};
    if (total == 0) return;
    {entry}_k<<<(unsigned)((total + 255) / 256), 256>>>({args});
}}
'''
    zloop_open = ("for (int b = blockIdx.z; b < batch; b += gridDim.z) {" if batched else "{ const int b = 0; (void)b;")
    zdim = "(unsigned)(batch < 65535 ? batch : 65535)" if batched else "1"
    two_d = _HDR + f'''
// 2-D grid over (column, row), no index division; {"the batch runs over blockIdx.z" if batched else "one matrix"}
__global__ void {entry}_2d({params}) {{
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;
    {guard}
    {zloop_open}
        {dst("i", "j", "b", "(size_t)")} = {expr("i", "j", "b", "(size_t)")};
    }}
}}
extern "C" void {entry}({params}) {{
    if (n <= 0{" || batch <= 0" if batched else ""}) return;
    dim3 block(32, 8), grid((n + 31) / 32, (n + 7) / 8, {zdim});
    {entry}_2d<<<grid, block>>>({args});
}}
'''
    variants = [{"name": "naive", "strategy": "one thread per (matrix, row, column) in loop order", "source": naive},
                {"name": "coalesced", "strategy": "2-D grid over columns and rows, no integer division", "source": two_d}]
    if trans:
        # tile[y][x] = A(j0 + y, i0 + x): read coalesced along i; A(j, i) for output (i, j) is tile[j - j0][i - i0]
        tval = val.replace("A(j, i)", "tile[threadIdx.x][y]")
        tval = tval.replace("A(i, j)", f"a[{'(size_t)b * n * n + ' if batched else ''}(size_t)i * n + j]")
        tcond = f"if ({cond}) " if cond else ""
        tiled = _HDR + f'''
#define TD 32
__global__ void {entry}_tile({params}) {{
    __shared__ {T} tile[TD][TD + 1];
    int i0 = blockIdx.y * TD, j0 = blockIdx.x * TD;
    {zloop_open}
        for (int y = threadIdx.y; y < TD; y += blockDim.y) {{
            int r = j0 + y, c = i0 + threadIdx.x;
            if (r < n && c < n) tile[y][threadIdx.x] = a[{'(size_t)b * n * n + ' if batched else ''}(size_t)r * n + c];
        }}
        __syncthreads();
        for (int y = threadIdx.y; y < TD; y += blockDim.y) {{
            int i = i0 + y, j = j0 + threadIdx.x;
            if (i < n && j < n) {{ {tcond}{dst("i", "j", "b", "(size_t)")} = {tval}; }}
        }}
        __syncthreads();
    }}
}}
extern "C" void {entry}({params}) {{
    if (n <= 0{" || batch <= 0" if batched else ""}) return;
    dim3 block(TD, 8), grid((n + TD - 1) / TD, (n + TD - 1) / TD, {zdim});
    {entry}_tile<<<grid, block>>>({args});
}}
'''
        variants.append({"name": "tiled_smem", "strategy": "A^T read through a 32x33 shared-memory tile, coalesced both ways", "source": tiled})
    elif packed_out:
        pk = _HDR + f'''
// one thread per packed element: (i, j) recovered from the column-packed index, coalesced writes
__global__ void {entry}_pk({params}) {{
    size_t np = (size_t)n * (n + 1) / 2, total = {"(size_t)batch * np" if batched else "np"};
    for (size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (size_t)gridDim.x * blockDim.x) {{
        size_t b = t / np, k = t % np;
        int j = (int)((sqrt(8.0 * (double)k + 1.0) - 1.0) / 2.0);
        while ((size_t)j * (j + 1) / 2 > k) j--;
        while ((size_t)(j + 1) * (j + 2) / 2 <= k) j++;
        int i = (int)(k - (size_t)j * (j + 1) / 2);
        ap[t] = a[b * n * n + (size_t)i * n + j];
    }}
}}
extern "C" void {entry}({params}) {{
    size_t total = {"(size_t)batch * " if batched else ""}((size_t)n * (n + 1) / 2);
    if (total == 0) return;
    size_t blocks = (total + 255) / 256; if (blocks > 132 * 32) blocks = 132 * 32;
    {entry}_pk<<<(unsigned)blocks, 256>>>({args});
}}
'''
        variants.append({"name": "grid_stride", "strategy": "thread per packed output element, index inverted with a square root", "source": pk})
    else:
        V, W = {"float": ("float4", 4), "double": ("double2", 2), "int": ("int4", 4)}[T]
        lanes = "\n".join(
            f"        {{ size_t o = base + {e}; int j = (int)(o % n), i = (int)(o / n % n); size_t b = o / ((size_t)n * n); (void)b; "
            f"v.{c} = {expr('i', 'j', 'b', '(size_t)')}; }}" for e, c in enumerate("xyzw"[:W]))
        vec = _HDR + f'''
// {W}-wide vector stores over the flat output (cudaMalloc aligns to 256 bytes), scalar tail
__global__ void {entry}_vec({params}, size_t nvec) {{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nvec) return;
    size_t base = t * {W};
    {V} v;
{lanes}
    (({V} *){"a" if inout else "out"})[t] = v;
}}
__global__ void {entry}_tail({params}, size_t start) {{
    size_t o = start + (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= {total}) return;
    int j = (int)(o % n), i = (int)(o / n % n);
    size_t b = o / ((size_t)n * n); (void)b;
    {dst("i", "j", "b", "(size_t)")} = {expr("i", "j", "b", "(size_t)")};
}}
extern "C" void {entry}({params}) {{
    size_t total = {total};
    if (total == 0) return;
    size_t nvec = total / {W};
    if (nvec) {entry}_vec<<<(unsigned)((nvec + 255) / 256), 256>>>({args}, nvec);
    if (total > nvec * {W}) {entry}_tail<<<1, 32>>>({args}, nvec * {W});
}}
'''
        variants.append({"name": "vectorized", "strategy": f"{V} stores over the flat output, per-lane (row, column)", "source": vec})
    tests = _sizes(T, batched, 64)
    mb = None
    sz = {"float": 4, "double": 8, "int": 4}[T]
    if cond in ("j > i", "j < i"):  # reads one strict triangle, writes the other
        mb = f"{sz}*{'batch*' if batched else ''}n*(n-1)"
    if packed_out:  # reads the upper triangle, writes it packed
        mb = f"{sz}*{'batch*' if batched else ''}n*(n+1)"
    if op in ("triu", "tril", "triu_strict", "tril_strict"):
        # writes the whole output but reads only the kept triangle (the other is written as
        # zeros without looking at A): n*n + n*(n+-1)/2 elements, not 2*n*n (triu_double ran at
        # 0.84x the whole-buffer count)
        kept = "n*(n-1)//2" if op.endswith("strict") else "n*(n+1)//2"
        mb = f"{sz}*{'batch*' if batched else ''}(n*n+{kept})"
    rec = {"task_id": f"c2cuda/{FAMILY}/{op}{'_batched' if batched else ''}_{T}", "track": "c2cuda", "entry": entry,
           "signature": sig, "reference": ref, "variants": variants,
           "tests": [{"name": k, "sizes": v, **({"perf": True} if k == "perf" else {})} for k, v in tests.items()],
           "meta": {"flops": "0", "source": "generated", "knobs": {"op": op, "dtype": T, "batched": batched}}}
    if mb:
        rec["meta"]["min_bytes"] = mb
    return rec


def _diag_task(op, T):
    pre = {"float": "s", "double": "d", "int": "i"}[T]
    entry = f"{pre}{op}_batched"
    init = "randint(-1000, 1000)" if T == "int" else "uniform(-1, 1)"
    sz = {"float": 4, "double": 8, "int": 4}[T]
    if op == "diag_extract":
        sig = [_p("batch", "int", "size"), _p("n", "int", "size"), _p("a", f"const {T}*", "in", "batch*n*n", init),
               _p("diag", f"{T}*", "out", "batch*n")]
        stmt = "diag[(size_t)b * n + i] = a[((size_t)b * n + i) * n + i];"
        rstmt = "diag[b * n + i] = a[(b * n + i) * n + i];"
        mb = f"{2 * sz}*batch*n"
    else:
        sig = [_p("batch", "int", "size"), _p("n", "int", "size"), _p("sigma", f"const {T}*", "in", "batch", init),
               _p("a", f"{T}*", "inout", "batch*n*n", init)]
        stmt = "a[((size_t)b * n + i) * n + i] += sigma[b];"
        rstmt = "a[(b * n + i) * n + i] += sigma[b];"
        mb = f"{2 * sz}*batch*n+{sz}*batch"
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)
    ref = (f"void {entry}({params}) {{\n    for (int b = 0; b < batch; b++)\n        for (int i = 0; i < n; i++)\n"
           f"            {rstmt}\n}}\n")
    naive = _HDR + f'''
__global__ void {entry}_k({params}) {{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)batch * n) return;
    size_t b = t / n; int i = (int)(t % n);
    {stmt}
}}
extern "C" void {entry}({params}) {{
    size_t total = (size_t)batch * n;
    if (total == 0) return;
    {entry}_k<<<(unsigned)((total + 255) / 256), 256>>>({args});
}}
'''
    two = _HDR + f'''
// 2-D grid: x over the diagonal, y over matrices (grid-stride), no index division
__global__ void {entry}_2d({params}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int b = blockIdx.y; b < batch; b += gridDim.y) {{ {stmt} }}
}}
extern "C" void {entry}({params}) {{
    if (batch <= 0 || n <= 0) return;
    dim3 grid((n + 63) / 64, batch < 65535 ? batch : 65535);
    {entry}_2d<<<grid, 64>>>({args});
}}
'''
    gs = _HDR + f'''
__global__ void __launch_bounds__(512) {entry}_gs({params}) {{
    size_t total = (size_t)batch * n;
    for (size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (size_t)gridDim.x * blockDim.x) {{
        size_t b = t / n; int i = (int)(t % n);
        {stmt}
    }}
}}
extern "C" void {entry}({params}) {{
    size_t total = (size_t)batch * n;
    if (total == 0) return;
    size_t blocks = (total + 511) / 512; if (blocks > 132 * 8) blocks = 132 * 8;
    {entry}_gs<<<(unsigned)blocks, 512>>>({args});
}}
'''
    return {"task_id": f"c2cuda/{FAMILY}/{op}_batched_{T}", "track": "c2cuda", "entry": entry, "signature": sig,
            "reference": ref,
            "variants": [{"name": "naive", "strategy": "one thread per diagonal element", "source": naive},
                         {"name": "coalesced", "strategy": "2-D grid: diagonal index x, matrix y", "source": two},
                         {"name": "grid_stride", "strategy": "grid-stride over all diagonal elements, 512-thread blocks", "source": gs}],
            "tests": [{"name": "one", "sizes": {"batch": 1, "n": 1}}, {"name": "ragged", "sizes": {"batch": 7, "n": 37}},
                      {"name": "perf", "sizes": {"batch": (1 << 30) // (sz * 256), "n": 16}, "perf": True}],
            "meta": {"flops": "0", "min_bytes": mb, "source": "generated", "knobs": {"op": op, "dtype": T, "batched": True}}}


def _red_task(op, T):
    pre = {"float": "s", "double": "d", "int": "i"}[T]
    entry = f"{pre}batched_{op}"
    sz = {"float": 4, "double": 8, "int": 4}[T]
    zero = {"float": "0.0f", "double": "0.0", "int": "0"}[T]
    init = "randint(-100, 100)" if T == "int" else ("uniform(0.5, 2)" if op == "log_diag" else "uniform(-1, 1)")
    sig = [_p("batch", "int", "size"), _p("n", "int", "size"), _p("a", f"const {T}*", "in", "batch*n*n", init)]
    if op == "trace_prod":
        sig.append(_p("b_mat", f"const {T}*", "in", "batch*n*n", init))
    sig.append(_p("res", f"{T}*", "out", "batch"))
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)
    diag = op in ("trace", "log_diag")
    is_max = op == "max_asym"
    # per-element term for element e of matrix at base (i = e / n, j = e % n), or for diagonal index i
    term = {"trace": "m[i * n + i]", "log_diag": "log(m[i * n + i])",
            "trace_prod": "m[i * n + j] * q[j * n + i]",
            "offdiag_energy": "(i != j ? m[i * n + j] * m[i * n + j] : 0)",
            "max_asym": "fabs(m[i * n + j] - m[j * n + i])"}[op]
    comb = (lambda acc, t: f"{acc} = fmax({acc}, {t});") if is_max else (lambda acc, t: f"{acc} += {t};")
    decl_q = f"const {T} *q = b_mat + (size_t)b * n * n;" if op == "trace_prod" else ""
    if diag:
        rloops = f"        for (int i = 0; i < n; i++)\n            {comb('s', term)}\n"
    else:
        rloops = (f"        for (int i = 0; i < n; i++)\n            for (int j = 0; j < n; j++)\n"
                  f"                {comb('s', term)}\n")
    ref = (f"void {entry}({params}) {{\n    for (int b = 0; b < batch; b++) {{\n"
           f"        const {T} *m = a + b * n * n;\n"
           + (f"        const {T} *q = b_mat + b * n * n;\n" if op == "trace_prod" else "")
           + f"        {T} s = {zero};\n" + rloops + "        res[b] = s;\n    }\n}\n")
    cnt = "n" if diag else "n * n"
    elem = ("int i = e;" if diag else "int i = e / n, j = e % n;")
    naive = _HDR + f'''
__global__ void {entry}_k({params}) {{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    const {T} *m = a + (size_t)b * n * n;
    {decl_q}
    {T} s = {zero};
    for (int e = 0; e < {cnt}; e++) {{ {elem} {comb("s", term)} }}
    res[b] = s;
}}
extern "C" void {entry}({params}) {{
    if (batch <= 0) return;
    {entry}_k<<<(batch + 255) / 256, 256>>>({args});
}}
'''
    shfl = (lambda v: f"{v} = fmax({v}, __shfl_down_sync(0xffffffffu, {v}, off));") if is_max else (
        lambda v: f"{v} += __shfl_down_sync(0xffffffffu, {v}, off);")
    warp = _HDR + f'''
__global__ void {entry}_warp({params}) {{
    long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (w >= batch) return;  // uniform per warp
    size_t b = (size_t)w;
    const {T} *m = a + b * n * n;
    {decl_q}
    {T} s = {zero};
    for (int e = lane; e < {cnt}; e += 32) {{ {elem} {comb("s", term)} }}
    for (int off = 16; off > 0; off >>= 1) {shfl("s")}
    if (lane == 0) res[b] = s;
}}
extern "C" void {entry}({params}) {{
    if (batch <= 0) return;
    long long threads = (long long)batch * 32;
    {entry}_warp<<<(unsigned)((threads + 255) / 256), 256>>>({args});
}}
'''
    blk = _HDR + f'''
// one 128-thread block per matrix: warp shuffles, then 4 partials combined by thread 0
__global__ void {entry}_blk({params}) {{
    __shared__ {T} part[4];
    size_t b = blockIdx.x;
    const {T} *m = a + b * n * n;
    {decl_q}
    {T} s = {zero};
    for (int e = threadIdx.x; e < {cnt}; e += blockDim.x) {{ {elem} {comb("s", term)} }}
    for (int off = 16; off > 0; off >>= 1) {shfl("s")}
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {{
        {T} t = part[0];
        for (int w = 1; w < 4; w++) {comb("t", "part[w]")}
        res[b] = t;
    }}
}}
extern "C" void {entry}({params}) {{
    if (batch <= 0) return;
    {entry}_blk<<<batch, 128>>>({args});
}}
'''
    if diag:
        perf = {"batch": (1 << 30) // (sz * 256), "n": 16}  # only n of n*n elements are read
        mb = f"{2 * sz}*batch*n"
    else:
        perf = {"batch": (1 << 28) // (sz * 1024 * (2 if op == "trace_prod" else 1)), "n": 32}
        mb = None
    rec = {"task_id": f"c2cuda/{FAMILY}/batched_{op}_{T}", "track": "c2cuda", "entry": entry, "signature": sig,
           "reference": ref,
           "variants": [{"name": "naive", "strategy": "one thread per matrix", "source": naive},
                        {"name": "warp_shuffle", "strategy": "one warp per matrix, shuffle reduction", "source": warp},
                        {"name": "block_reduce", "strategy": "one 128-thread block per matrix", "source": blk}],
           "tests": [{"name": "one", "sizes": {"batch": 1, "n": 1}}, {"name": "ragged", "sizes": {"batch": 37, "n": 45}},
                     {"name": "big_matrix", "sizes": {"batch": 3, "n": 301}},
                     {"name": "perf", "sizes": perf, "perf": True}],
           "meta": {"flops": "0", "source": "generated", "knobs": {"op": op, "dtype": T}}}
    if mb:
        rec["meta"]["min_bytes"] = mb
    if T == "float" and not is_max:
        rec["tolerance"] = {"rtol": 1e-3, "atol": 1e-4, "l2": 5e-4}
    return rec


def generate(rng: random.Random) -> list[dict]:
    out = [_map_task(op, T, b) for op in _MAPS for T in ("float", "double") for b in (False, True)]
    out += [_map_task(op, "int", b) for op, b in (("sym_sum", True), ("fill_upper", False), ("triu", True))]
    out += [_diag_task(op, T) for op in ("diag_extract", "diag_shift") for T in ("float", "double")]
    out += [_diag_task("diag_extract", "int")]
    out += [_red_task(op, T) for op in _RED for T in ("float", "double")]
    out += [_red_task("trace", "int")]
    rng.shuffle(out)
    return out
