"""Pairwise distance matrices between two point sets (or one set with itself).

Guarantees: every task is a distinct serial C program filling `dist[i * n + j]` with the
euclidean, squared-euclidean, manhattan, chebyshev or cosine distance between point i of `a`
and point j of `b`, for points stored row-wise (AoS, `a[i * d + k]`) or coordinate-major (SoA,
`a[k * m + i]`), with a runtime dimension d or a literal 3 (point clouds), in float or double.
CUDA variants: naive one thread per pair, 16x16 shared-memory tiles of both point sets over
chunks of 16 coordinates, and register blocking (1x4 pairs per thread over a 16x64 block tile);
all handle single points, ragged tiles and d not a multiple of the chunk.
"""
from __future__ import annotations

import random

from cudaperf.families._d2kit import FLOAT_TOL, P, T, TYPES, V, blocks, cargs, cparams, record

FAMILY = "distance_matrix"
CATEGORY = "distance"

METRICS = ("euclidean", "sqeuclidean", "manhattan", "chebyshev", "cosine")
ENTRY = {"euclidean": "pdist_euclidean", "sqeuclidean": "pairwise_sqdist", "manhattan": "cityblock_dist",
         "chebyshev": "chebyshev_dist", "cosine": "cosine_distance"}


def _metric(metric, ty, fns, suf=""):
    """(declarations, update statements on u, v, final expression) with accumulators named *suf."""
    tn, z = ty.name, ty.zero
    a = f"acc{suf}"
    if metric in ("euclidean", "sqeuclidean"):
        fin = f"{fns['sqrt']}({a})" if metric == "euclidean" else a
        return [f"{tn} {a} = {z};"], lambda u, v: [f"{{ {tn} df = {u} - {v}; {a} += df * df; }}"], fin
    if metric == "manhattan":
        return [f"{tn} {a} = {z};"], lambda u, v: [f"{a} += {fns['fabs']}({u} - {v});"], a
    if metric == "chebyshev":
        return [f"{tn} {a} = {z};"], lambda u, v: [f"{a} = {fns['fmax']}({a}, {fns['fabs']}({u} - {v}));"], a
    dot, na, nb = f"dot{suf}", f"na{suf}", f"nb{suf}"
    return ([f"{tn} {dot} = {z}, {na} = {z}, {nb} = {z};"],
            lambda u, v: [f"{{ {tn} p = {u}, q = {v}; {dot} += p * q; {na} += p * p; {nb} += q * q; }}"],
            f"{ty.lit(1)} - {dot} / {fns['fmax']}({fns['sqrt']}({na} * {nb}), {ty.lit(1e-12)})")


REF_FNS = {"sqrt": "sqrt", "fabs": "fabs", "fmax": "fmax"}


def _acc(layout, self_, fixed):
    d = "3" if fixed else "d"
    nb = "m" if self_ else "n"
    bname = "a" if self_ else "b"
    if layout == "aos":
        A = lambda i, k: f"a[(size_t)({i}) * {d} + {k}]"
        B = lambda j, k: f"{bname}[(size_t)({j}) * {d} + {k}]"
    else:
        A = lambda i, k: f"a[(size_t)({k}) * m + {i}]"
        B = lambda j, k: f"{bname}[(size_t)({k}) * {nb} + {j}]"
    return A, B, d, nb


def _reference(entry, sig, metric, layout, self_, fixed, ty):
    _, _, d, nb = _acc(layout, self_, fixed)
    bname = "a" if self_ else "b"
    if layout == "aos":
        A = lambda i, k: f"a[{i} * {d} + {k}]"
        B = lambda j, k: f"{bname}[{j} * {d} + {k}]"
    else:
        A = lambda i, k: f"a[{k} * m + {i}]"
        B = lambda j, k: f"{bname}[{k} * {nb} + {j}]"
    decl, upd, fin = _metric(metric, ty, REF_FNS)
    L = [f"void {entry}({cparams(sig)}) {{", "    for (int i = 0; i < m; i++) {",
         f"        for (int j = 0; j < {nb}; j++) {{"]
    L += ["            " + x for x in decl]
    L.append(f"            for (int k = 0; k < {d}; k++) {' '.join(upd(A('i', 'k'), B('j', 'k')))}")
    L.append(f"            dist[i * {nb} + j] = {fin};")
    L += ["        }", "    }", "}"]
    return "\n".join(L)


def _variants(entry, sig, metric, layout, self_, fixed, ty):
    tn = ty.name
    ps, args = cparams(sig), cargs(sig)
    fns = {k: ty.fn(k) for k in REF_FNS}
    A, B, d, nb = _acc(layout, self_, fixed)
    decl, upd, fin = _metric(metric, ty, fns)
    naive = f"""
__global__ void {entry}_k({ps}) {{
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= (long long)m * {nb}) return;
    int i = (int)(g / {nb}), j = (int)(g % {nb});
    {' '.join(decl)}
    for (int k = 0; k < {d}; k++) {' '.join(upd(A('i', 'k'), B('j', 'k')))}
    dist[(size_t)i * {nb} + j] = {fin};
}}
extern "C" void {entry}({ps}) {{
    if (m <= 0 || {nb} <= 0) return;
    {entry}_k<<<{blocks(f'(long long)m * {nb}')}, 256>>>({args});
}}
"""
    tiled = f"""
__global__ void {entry}_tile({ps}) {{
    __shared__ {tn} As[16][17], Bs[16][17];
    int i0 = blockIdx.y * 16, j0 = blockIdx.x * 16;
    int i = i0 + threadIdx.y, j = j0 + threadIdx.x;
    {' '.join(decl)}
    for (int k0 = 0; k0 < {d}; k0 += 16) {{
        int ka = k0 + threadIdx.x, ra = i0 + threadIdx.y, rb = j0 + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (ra < m && ka < {d}) ? {A('ra', 'ka')} : {ty.zero};
        Bs[threadIdx.y][threadIdx.x] = (rb < {nb} && ka < {d}) ? {B('rb', 'ka')} : {ty.zero};
        __syncthreads();
        int kend = {d} - k0 < 16 ? {d} - k0 : 16;
        for (int kk = 0; kk < kend; kk++) {' '.join(upd('As[threadIdx.y][kk]', 'Bs[threadIdx.x][kk]'))}
        __syncthreads();
    }}
    if (i < m && j < {nb}) dist[(size_t)i * {nb} + j] = {fin};
}}
extern "C" void {entry}({ps}) {{
    if (m <= 0 || {nb} <= 0) return;
    dim3 block(16, 16), grid(({nb} + 15) / 16, (m + 15) / 16);
    {entry}_tile<<<grid, block>>>({args});
}}
"""
    # 1x4 pairs per thread: a 16 x 64 output tile per 16x16 block, every A value reused 4 times
    decls, upds, fins = [], [], []
    for r in range(4):
        dr, ur, fr = _metric(metric, ty, fns, suf=str(r))
        decls += dr
        upds.append(" ".join(ur("av", f"Bs[threadIdx.x + {16 * r}][kk]")))
        fins.append(fr)
    stores = "\n".join(f"        if (j0 + threadIdx.x + {16 * r} < {nb}) dist[(size_t)i * {nb} + j0 + threadIdx.x + {16 * r}] = {fins[r]};"
                       for r in range(4))
    reg = f"""
__global__ void {entry}_rb({ps}) {{
    __shared__ {tn} As[16][17], Bs[64][17];
    int i0 = blockIdx.y * 16, j0 = blockIdx.x * 64;
    int i = i0 + threadIdx.y;
    {' '.join(decls)}
    for (int k0 = 0; k0 < {d}; k0 += 16) {{
        int ka = k0 + threadIdx.x;
        int ra = i0 + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (ra < m && ka < {d}) ? {A('ra', 'ka')} : {ty.zero};
        for (int q = 0; q < 4; q++) {{
            int rb = j0 + threadIdx.y + 16 * q;
            Bs[threadIdx.y + 16 * q][threadIdx.x] = (rb < {nb} && ka < {d}) ? {B('rb', 'ka')} : {ty.zero};
        }}
        __syncthreads();
        int kend = {d} - k0 < 16 ? {d} - k0 : 16;
        for (int kk = 0; kk < kend; kk++) {{
            {tn} av = As[threadIdx.y][kk];
            {' '.join(upds)}
        }}
        __syncthreads();
    }}
    if (i < m) {{
{stores}
    }}
}}
extern "C" void {entry}({ps}) {{
    if (m <= 0 || {nb} <= 0) return;
    dim3 block(16, 16), grid(({nb} + 63) / 64, (m + 15) / 16);
    {entry}_rb<<<grid, block>>>({args});
}}
"""
    return [V("naive", "one thread per (i, j) pair, coordinates read from global memory", naive),
            V("tiled_smem", "16x16 pair tile per block, 16-coordinate chunks of both point sets "
              "staged in padded shared memory", tiled),
            V("register_blocking", "16x64 pair tile per block, each thread keeps 4 accumulators "
              "and reuses its point's coordinate 4 times from a register", reg)]


def generate(rng: random.Random) -> list[dict]:
    out = []
    for metric in METRICS:
        for layout in ("aos", "soa"):
            for self_ in (False, True):
                for fixed in (False, True):
                    for tn in ("float", "double"):
                        out.append(_task(metric, layout, self_, fixed, tn))
    return out


def _task(metric, layout, self_, fixed, tn):
    ty = TYPES[tn]
    entry = f"{ENTRY[metric]}_{layout}{'_self' if self_ else ''}{'_3d' if fixed else ''}_{ty.tag}"
    sig = [P("m", "int", "size")]
    if not self_:
        sig.append(P("n", "int", "size"))
    if not fixed:
        sig.append(P("d", "int", "size"))
    d = "3" if fixed else "d"
    nb = "m" if self_ else "n"
    sig.append(P("a", f"const {tn}*", "in", f"m*{d}", "uniform(-1, 1)"))
    if not self_:
        sig.append(P("b", f"const {tn}*", "in", f"n*{d}", "uniform(-1, 1)"))
    sig.append(P("dist", f"{tn}*", "out", f"m*{nb}"))
    ref = _reference(entry, sig, metric, layout, self_, fixed, ty)

    def sz(mv, nv, dv):
        s = {"m": mv}
        if not self_:
            s["n"] = nv
        if not fixed:
            s["d"] = dv
        return s
    big = 8192 if fixed else 4096
    tests = [T("one", sz(1, 1, 1)), T("odd", sz(37, 1001, 5)), T("tall", sz(1003, 3, 17)),
             T("perf", sz(big, big, {"chebyshev": 16, "cosine": 24}.get(metric, 32)), perf=True)]
    return record(FAMILY, f"{metric}_{layout}_{'self' if self_ else 'cross'}_{'d3' if fixed else 'dn'}_{ty.tag}",
                  entry, sig, ref, _variants(entry, sig, metric, layout, self_, fixed, ty), tests,
                  {"metric": metric, "layout": layout, "self": self_, "fixed_dim": fixed, "dtype": tn},
                  flops=f"3*m*{nb}*{d}", tolerance=FLOAT_TOL if tn == "float" else None)
