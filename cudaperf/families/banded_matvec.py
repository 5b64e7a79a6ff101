"""banded_matvec family: matrix-vector products with tridiagonal, pentadiagonal and banded matrices.

Guarantees: 80 distinct tasks: nine storages (three tridiagonal arrays, packed tridiagonal rows,
symmetric tridiagonal, five diagonals in one array, a 7-diagonal DIA matrix of a 3-D
7-point stencil with a static offset table, and LAPACK column-major band storage with
(kl, ku) = (1,2), (3,3), (8,8), (16,4)) x operation (y = Ax, alpha/beta update, residual b - Ax,
accumulate) x element type (float, double), plus periodic (cyclic) tridiagonal/pentadiagonal
products. Rows near the ends skip the missing neighbours (or wrap, for cyclic storage). Every
storage is described once by the band's reach and one row formula over an x accessor, so all
variants read x the same way: naive (thread per row), x staged through shared memory with a
halo of the band's reach, and grid-stride with read-only loads.
"""
from __future__ import annotations

import itertools
import random

FAMILY = "banded_matvec"
CATEGORY = "linalg"
_HDR = "#include <cuda_runtime.h>\n"
_GB = {"gb_1_2": (1, 2), "gb_3_3": (3, 3), "gb_8_8": (8, 8), "gb_16_4": (16, 4)}
_DIA_OFF = (-64, -8, -1, 0, 1, 8, 64)


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper


def _storage(st, T, cyclic):
    """(arrays [(name, shape)], lower reach, upper reach, row(X, ind, cast) -> C lines computing sum)."""
    z = "0.0f" if T == "float" else "0.0"

    def wrap(e):
        return f"(({e}) % n + n) % n" if cyclic else e

    if st == "tri3":
        arrs = [("dl", "n"), ("d", "n"), ("du", "n")]

        def row(X, c=""):
            if cyclic:
                return (f"int im = i == 0 ? n - 1 : i - 1, ip = i == n - 1 ? 0 : i + 1;\n"
                        f"sum = dl[i] * {X('i - 1', 'im')} + d[i] * {X('i', 'i')} + du[i] * {X('i + 1', 'ip')};\n")
            return (f"sum = d[i] * {X('i', 'i')};\n"
                    f"if (i > 0) sum += dl[i] * {X('i - 1', 'i - 1')};\n"
                    f"if (i < n - 1) sum += du[i] * {X('i + 1', 'i + 1')};\n")
        return arrs, 1, 1, row
    if st == "tri_packed":
        arrs = [("tri", "3*n")]

        def row(X, c=""):
            return (f"sum = tri[{c}3 * i + 1] * {X('i', 'i')};\n"
                    f"if (i > 0) sum += tri[{c}3 * i] * {X('i - 1', 'i - 1')};\n"
                    f"if (i + 1 < n) sum += tri[{c}3 * i + 2] * {X('i + 1', 'i + 1')};\n")
        return arrs, 1, 1, row
    if st == "sym_tri":
        arrs = [("diag", "n"), ("off", "n")]

        def row(X, c=""):
            return (f"sum = diag[i] * {X('i', 'i')};\n"
                    f"if (i > 0) sum += off[i - 1] * {X('i - 1', 'i - 1')};\n"
                    f"if (i < n - 1) sum += off[i] * {X('i + 1', 'i + 1')};\n")
        return arrs, 1, 1, row
    if st == "penta":
        arrs = [("band", "5*n")]

        def row(X, c=""):
            s = f"sum = {z};\n"
            for k in range(5):
                o = k - 2
                j = f"i + {o}" if o > 0 else (f"i - {-o}" if o < 0 else "i")
                if cyclic:
                    s += f"sum += band[{k} * {c}n + i] * {X(j, wrap(j))};\n"
                else:
                    cond = "" if o == 0 else (f"if ({j} >= 0) " if o < 0 else f"if ({j} < n) ")
                    s += f"{cond}sum += band[{k} * {c}n + i] * {X(j, j)};\n"
            return s
        return arrs, 2, 2, row
    if st == "dia7":
        arrs = [("dia", "7*n")]

        def row(X, c=""):
            return (f"sum = {z};\n"
                    f"for (int k = 0; k < 7; k++) {{\n"
                    f"    int j = i + dia_off[k];\n"
                    f"    if (j >= 0 && j < n) sum += dia[k * {c}n + i] * {X('j', 'j')};\n}}\n")
        return arrs, 64, 64, row
    kl, ku = _GB[st]
    ld = kl + ku + 1
    arrs = [("ab", f"{ld}*n")]

    def row(X, c=""):
        return (f"sum = {z};\n"
                f"int jlo = i - {kl} > 0 ? i - {kl} : 0, jhi = i + {ku} < n - 1 ? i + {ku} : n - 1;\n"
                f"for (int j = jlo; j <= jhi; j++)\n"
                f"    sum += ab[{ku} + i - j + {c}j * {ld}] * {X('j', 'j')};\n")
    return arrs, kl, ku, row


def _task(st, op, T, cyclic=False):
    arrs, L, U, row = _storage(st, T, cyclic)
    pre = "s" if T == "float" else "d"
    entry = f"{pre}{st}{'_cyclic' if cyclic else ''}_mv_{op}"
    sig = [_p("n", "int", "size")]
    if op == "axpby":
        sig.append(_p("alpha", T, "scalar", init="uniform(-2, 2)"))
    sig += [_p(a, f"const {T}*", "in", s, "uniform(-1, 1)") for a, s in arrs]
    sig.append(_p("x", f"const {T}*", "in", "n", "uniform(-1, 1)"))
    if op == "axpby":
        sig.append(_p("beta", T, "scalar", init="uniform(-2, 2)"))
    if op == "residual":
        sig.append(_p("b", f"const {T}*", "in", "n", "uniform(-1, 1)"))
    inout = op in ("axpby", "accum")
    sig.append(_p("y", f"{T}*", "inout" if inout else "out", "n", "uniform(-1, 1)" if inout else None))
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)
    fin = {"plain": "y[i] = sum;", "axpby": "y[i] = alpha * sum + beta * y[i];",
           "residual": "y[i] = b[i] - sum;", "accum": "y[i] += sum;"}[op]

    def ind(s, k):
        return "".join(" " * k + ln + "\n" for ln in s.strip("\n").split("\n"))

    table = f"static const int dia_off[7] = {{{', '.join(map(str, _DIA_OFF))}}};\n" if st == "dia7" else ""
    dtable = f"__constant__ int dia_off[7] = {{{', '.join(map(str, _DIA_OFF))}}};\n" if st == "dia7" else ""
    plain_x = lambda virt, real: f"x[{real}]"
    ref = (table + f"void {entry}({params}) {{\n    for (int i = 0; i < n; i++) {{\n        {('float' if T == 'float' else 'double')} sum;\n"
           + ind(row(plain_x), 8) + f"        {fin}\n    }}\n}}\n")
    naive = _HDR + dtable + f'''
__global__ void {entry}_k({params}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    {T} sum;
{ind(row(plain_x, "(size_t)"), 4)}    {fin}
}}
extern "C" void {entry}({params}) {{
    if (n <= 0) return;
    {entry}_k<<<(n + 255) / 256, 256>>>({args});
}}
'''
    tile_x = lambda virt, real: f"xs[({virt}) - i0 + {L}]"
    load = (f"int g = i0 - {L} + t; xs[t] = x[((g % n) + n) % n];" if cyclic
            else f"int g = i0 - {L} + t; xs[t] = (g >= 0 && g < n) ? x[g] : ({T})0;")
    tiled = _HDR + dtable + f'''
#define RB 256
// x for rows [i0, i0 + RB) plus a halo of {L} below and {U} above, staged once per block
__global__ void {entry}_tile({params}) {{
    __shared__ {T} xs[RB + {L + U}];
    int i0 = blockIdx.x * RB, i = i0 + threadIdx.x;
    for (int t = threadIdx.x; t < RB + {L + U}; t += RB) {{ {load} }}
    __syncthreads();
    if (i >= n) return;  // after the only barrier
    {T} sum;
{ind(row(tile_x, "(size_t)"), 4)}    {fin}
}}
extern "C" void {entry}({params}) {{
    if (n <= 0) return;
    {entry}_tile<<<(n + RB - 1) / RB, RB>>>({args});
}}
'''
    ldg_x = lambda virt, real: f"__ldg(&x[{real}])"
    rparams = ", ".join(f"{p['ctype'][:-1]} *__restrict__ {p['name']}" if p["ctype"].endswith("*")
                        else f"{p['ctype']} {p['name']}" for p in sig)
    gs = _HDR + dtable + f'''
__global__ void __launch_bounds__(512) {entry}_gs({rparams}) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {{
        {T} sum;
{ind(row(ldg_x, "(size_t)"), 8)}        {fin}
    }}
}}
extern "C" void {entry}({params}) {{
    if (n <= 0) return;
    int blocks = (n + 511) / 512; if (blocks > 132 * 8) blocks = 132 * 8;
    {entry}_gs<<<blocks, 512>>>({args});
}}
'''
    words = sum(int(s.split("*")[0]) if "*" in s else 1 for _, s in arrs) + 2 + (op != "plain")
    n = int(400e6 / (words * (4 if T == "float" else 8)))
    n = min(n, 1 << 25)
    rec = {"task_id": f"c2cuda/{FAMILY}/{st}{'_cyclic' if cyclic else ''}_{op}_{T}", "track": "c2cuda",
           "entry": entry, "signature": sig, "reference": ref,
           "variants": [{"name": "naive", "strategy": "one thread per row", "source": naive},
                        {"name": "tiled_smem", "strategy": f"x staged in shared memory with a {L}/{U} halo", "source": tiled},
                        {"name": "grid_stride", "strategy": "grid-stride over rows, 512-thread blocks, read-only loads", "source": gs}],
           "tests": [{"name": "one", "sizes": {"n": 1}}, {"name": "two", "sizes": {"n": 2}},
                     {"name": "ragged", "sizes": {"n": 1003}}, {"name": "perf", "sizes": {"n": n}, "perf": True}],
           "meta": {"flops": f"{2 * (L + U + 1)}*n", "source": "generated",
                    "knobs": {"storage": st, "cyclic": cyclic, "op": op, "dtype": T, "kl": L, "ku": U}}}
    if T == "float":
        rec["tolerance"] = {"rtol": 1e-3, "atol": 1e-4, "l2": 5e-4}
    return rec


def generate(rng: random.Random) -> list[dict]:
    out = [_task(st, op, T) for st, op, T in itertools.product(
        ("tri3", "tri_packed", "sym_tri", "penta", "dia7") + tuple(_GB), ("plain", "axpby", "residual", "accum"),
        ("float", "double"))]
    out += [_task(st, op, T, True) for st, op, T in itertools.product(("tri3", "penta"), ("plain", "residual"),
                                                                    ("float", "double"))]
    rng.shuffle(out)
    return out
