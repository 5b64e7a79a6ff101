"""3-D stencil sweeps on an nz x ny x nx grid: 7-point, 13-point (4th order) and 27-point.

Guarantees: every task is a distinct serial C program computing one sweep (heat step, Jacobi
average, Laplacian, anisotropic diffusion, 27-point box or weighted heat step, 4th-order star) in
float or double with a fixed (boundary layer copied), clamped or periodic halo, written with
either per-axis index variables or precomputed plane/row strides. CUDA variants: naive flat
index, 2.5-D shared-memory z-march with a ring of planes, and 3-D blocks with per-axis neighbour
indices; all handle 1x1x1 grids, dimensions below the stencil radius and ragged tiles.
"""
from __future__ import annotations

import itertools
import random

from cudaperf.families._d2kit import FLOAT_TOL, P, T, TYPES, V, blocks, cargs, cparams, record

FAMILY = "stencil3d"
CATEGORY = "stencil"

FACES = [(-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1)]
ALL27 = list(itertools.product((-1, 0, 1), repeat=3))


def _kinds(ty):
    """name -> (radius, input, output, scalars, formula(A)); A(dz, dy, dx) is a neighbour value."""
    L = ty.lit
    f6 = lambda A: " + ".join(A(*d) for d in FACES)
    cls = lambda A, m: " + ".join(A(*d) for d in ALL27 if sum(map(abs, d)) == m)
    def star13(A):
        ax = []
        for d in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
            m2 = A(*(-2 * x for x in d)); m1 = A(*(-x for x in d))
            p1 = A(*d); p2 = A(*(2 * x for x in d))
            ax.append(f"{L(16)} * ({m1} + {p1}) - ({m2} + {p2})")
        return f"inv_h2 * {L(1 / 12)} * ({' + '.join(ax)} - {L(90)} * {A(0, 0, 0)})"
    return {
        "heat7": (1, "u", "unew", ["alpha"],
                  lambda A: f"{A(0, 0, 0)} + alpha * ({f6(A)} - {L(6)} * {A(0, 0, 0)})"),
        "jacobi7": (1, "x", "xnew", [], lambda A: f"{L(1 / 6)} * ({f6(A)})"),
        "lap7": (1, "phi", "lap", ["inv_h2"],
                 lambda A: f"inv_h2 * ({f6(A)} - {L(6)} * {A(0, 0, 0)})"),
        "aniso7": (1, "u", "unew", ["cx", "cy", "cz"],
                   lambda A: f"{A(0, 0, 0)} + cx * ({A(0, 0, -1)} + {A(0, 0, 1)} - {L(2)} * {A(0, 0, 0)})"
                             f" + cy * ({A(0, -1, 0)} + {A(0, 1, 0)} - {L(2)} * {A(0, 0, 0)})"
                             f" + cz * ({A(-1, 0, 0)} + {A(1, 0, 0)} - {L(2)} * {A(0, 0, 0)})"),
        "box27": (1, "src", "dst", [], lambda A: f"{L(1 / 27)} * ({' + '.join(A(*d) for d in ALL27)})"),
        "heat27": (1, "t", "tnew", ["c0", "c1", "c2", "c3"],
                   lambda A: f"c0 * {A(0, 0, 0)} + c1 * ({cls(A, 1)}) + c2 * ({cls(A, 2)}) + c3 * ({cls(A, 3)})"),
        "star13": (2, "p", "lap", ["inv_h2"], star13),
    }


ENTRY = {"heat7": ["heat3d_step", "diffuse3d"], "jacobi7": ["jacobi3d", "relax7"],
         "lap7": ["laplacian3d", "lap7pt"], "aniso7": ["aniso_diffuse", "heat3d_aniso"],
         "box27": ["box3d", "mean27"], "heat27": ["heat27_step", "stencil27"],
         "star13": ["lap4th_order", "star13_lap"]}
AX = {0: ("k", "nz"), 1: ("j", "ny"), 2: ("i", "nx")}


def _off_name(v, d):
    return v if d == 0 else f"{v}{'m' if d < 0 else 'p'}{abs(d)}"


def _map_lines(bc, v, d, n, ind):
    name = _off_name(v, d)
    L = [f"{ind}int {name} = {v} {'-' if d < 0 else '+'} {abs(d)};"]
    if bc == "periodic":
        L += [f"{ind}while ({name} < 0) {name} += {n};", f"{ind}while ({name} >= {n}) {name} -= {n};"]
    elif bc == "clamped":
        L += [f"{ind}if ({name} < 0) {name} = 0;", f"{ind}if ({name} > {n} - 1) {name} = {n} - 1;"]
    return L


def _reference(entry, sig, kind, bc, style, ty):
    R, src, dst, _, f = _kinds(ty)[kind]
    L = [f"void {entry}({cparams(sig)}) {{"]
    if style == "strides":
        L.append("    const long sy = nx, sz = (long)nx * ny;")
    ind = "    "
    for ax in range(3):
        v, n = AX[ax]
        L.append(f"{ind}for (int {v} = 0; {v} < {n}; {v}++) {{")
        ind += "    "
        for d in range(-R, R + 1):
            if d:
                L += _map_lines(bc, v, d, n, ind)
    def A(dz, dy, dx):
        k, j, i = _off_name("k", dz), _off_name("j", dy), _off_name("i", dx)
        if style == "strides":
            return f"{src}[{k} * sz + {j} * sy + {i}]"
        return f"{src}[({k} * ny + {j}) * nx + {i}]"
    here = "k * sz + j * sy + i" if style == "strides" else "(k * ny + j) * nx + i"
    if bc == "fixed":
        conds = " || ".join(f"{v} < {R} || {v} >= {n} - {R}" for v, n in AX.values())
        L.append(f"{ind}if ({conds}) {{ {dst}[{here}] = {src}[{here}]; continue; }}")
    L.append(f"{ind}{dst}[{here}] = {f(A)};")
    for _ in range(3):
        ind = ind[:-4]
        L.append(ind + "}")
    L.append("}")
    return "\n".join(L)


def _variants(entry, sig, kind, bc, ty):
    R, src, dst, _, f = _kinds(ty)[kind]
    t = ty.name
    ps, args = cparams(sig), cargs(sig)
    if bc == "periodic":
        mp = "k %= n; if (k < 0) k += n; return k;"
    else:
        mp = "return k < 0 ? 0 : (k >= n ? n - 1 : k);"
    helper = f"__device__ __forceinline__ int bmap(int k, int n) {{ {mp} }}\n"
    edge = " || ".join(f"{v} < {R} || {v} >= {n} - {R}" for v, n in AX.values())
    here = "((size_t)k * ny + j) * nx + i"

    def Ag(dz, dy, dx):
        k = "k" if dz == 0 else f"bmap(k + ({dz}), nz)"
        j = "j" if dy == 0 else f"bmap(j + ({dy}), ny)"
        i = "i" if dx == 0 else f"bmap(i + ({dx}), nx)"
        return f"{src}[((size_t){k} * ny + {j}) * nx + {i}]"
    fx = f"if ({edge}) {{ {dst}[{here}] = {src}[{here}]; return; }}\n    " if bc == "fixed" else ""
    naive = f"""
{helper}
__global__ void {entry}_k({ps}) {{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)nz * ny * nx) return;
    int i = (int)(idx % nx), j = (int)((idx / nx) % ny), k = (int)(idx / ((long long)nx * ny));
    {fx}{dst}[{here}] = {f(Ag)};
}}
extern "C" void {entry}({ps}) {{
    if (nz <= 0 || ny <= 0 || nx <= 0) return;
    {entry}_k<<<{blocks('(long long)nz * ny * nx')}, 256>>>({args});
}}
"""
    # 2.5-D: a block owns a 32x8 xy tile and marches ZC planes in z; the 2R+1 planes the stencil
    # needs live in a shared-memory ring, each plane loaded (with its xy halo) exactly once.
    NP, TY_, TX_ = 2 * R + 1, 8 + 2 * R, 32 + 2 * R
    Ar = lambda dz, dy, dx: (f"ring[(z + ({dz}) - z0 + {R}) % {NP}][threadIdx.y + {R + dy}]"
                             f"[threadIdx.x + {R + dx}]")
    fx_t = (f"if ({edge}) {dst}[{here}] = ring[(z - z0 + {R}) % {NP}][threadIdx.y + {R}][threadIdx.x + {R}]; else "
            if bc == "fixed" else "")
    tiled = f"""
{helper}
__device__ __forceinline__ void load_plane({t} (*pl)[{TX_}], const {t} *gsrc, int pz, int nz, int ny, int nx, int ty0, int tx0) {{
    int gk = bmap(pz, nz);
    for (int s = threadIdx.y * 32 + threadIdx.x; s < {TY_ * TX_}; s += 256) {{
        int r = s / {TX_}, c = s % {TX_};
        int gj = bmap(ty0 + r, ny), gi = bmap(tx0 + c, nx);
        pl[r][c] = gsrc[((size_t)gk * ny + gj) * nx + gi];
    }}
}}
__global__ void {entry}_zmarch({ps}) {{
    const int ZC = 16;
    __shared__ {t} ring[{NP}][{TY_}][{TX_}];
    int z0 = blockIdx.z * ZC;
    int ty0 = blockIdx.y * 8 - {R}, tx0 = blockIdx.x * 32 - {R};
    for (int pz = z0 - {R}; pz < z0 + {R}; pz++)
        load_plane(ring[(pz - z0 + {R}) % {NP}], {src}, pz, nz, ny, nx, ty0, tx0);
    int zend = z0 + ZC < nz ? z0 + ZC : nz;
    int i = blockIdx.x * 32 + threadIdx.x, j = blockIdx.y * 8 + threadIdx.y;
    for (int z = z0; z < zend; z++) {{
        load_plane(ring[(z + {R} - z0 + {R}) % {NP}], {src}, z + {R}, nz, ny, nx, ty0, tx0);
        __syncthreads();
        int k = z;
        if (i < nx && j < ny) {{ {fx_t}{dst}[{here}] = {f(Ar)}; }}
        __syncthreads();
    }}
}}
extern "C" void {entry}({ps}) {{
    if (nz <= 0 || ny <= 0 || nx <= 0) return;
    dim3 block(32, 8), grid((nx + 31) / 32, (ny + 7) / 8, (nz + 15) / 16);
    {entry}_zmarch<<<grid, block>>>({args});
}}
"""
    # 3-D blocks: neighbour indices per axis computed once per thread, no division
    def Ab(dz, dy, dx):
        return f"__ldg(&{src}[(zk[{dz + R}] * ny + yj[{dy + R}]) * (size_t)nx + xi[{dx + R}]])"
    fx_b = f"if ({edge}) {{ {dst}[{here}] = {src}[{here}]; return; }}\n    " if bc == "fixed" else ""
    blk = f"""
{helper}
__global__ void {entry}_b3({ps}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= nx || j >= ny || k >= nz) return;
    {fx_b}size_t zk[{2 * R + 1}]; int yj[{2 * R + 1}], xi[{2 * R + 1}];
    #pragma unroll
    for (int d = -{R}; d <= {R}; d++) {{
        zk[d + {R}] = (size_t)bmap(k + d, nz); yj[d + {R}] = bmap(j + d, ny); xi[d + {R}] = bmap(i + d, nx);
    }}
    {dst}[{here}] = {f(Ab)};
}}
extern "C" void {entry}({ps}) {{
    if (nz <= 0 || ny <= 0 || nx <= 0) return;
    dim3 block(32, 4, 2), grid((nx + 31) / 32, (ny + 3) / 4, (nz + 1) / 2);
    {entry}_b3<<<grid, block>>>({args});
}}
"""
    return [V("naive", "one thread per grid point (flat index), neighbour mapping per tap", naive),
            V("tiled_smem", f"2.5-D: 32x8 xy tile marching 16 z-planes, a ring of {NP} "
              "shared-memory planes with halo, each plane loaded once", tiled),
            V("coalesced", "3-D 32x4x2 blocks, per-axis neighbour indices computed once, "
              "__ldg read-only loads, no integer division", blk)]


def generate(rng: random.Random) -> list[dict]:
    out = []
    kinds = list(_kinds(TYPES["float"]))
    combos = [(k, bc, st, tn) for k in kinds for bc in ("fixed", "clamped", "periodic")
              for st in ("nested", "strides") for tn in ("float", "double")]
    for kind, bc, style, tn in combos:
        ty = TYPES[tn]
        R, src, dst, scal, _ = _kinds(ty)[kind]
        entry = f"{ENTRY[kind][style == 'strides']}_{bc}_{ty.tag}"
        sig = [P("nz", "int", "size"), P("ny", "int", "size"), P("nx", "int", "size"),
               P(src, f"const {tn}*", "in", "nz*ny*nx", "uniform(-1, 1)")]
        for s in scal:
            init = "uniform(0.5, 2)" if s == "inv_h2" else "uniform(0.02, 0.15)"
            sig.append(P(s, tn, "scalar", init=init))
        sig.append(P(dst, f"{tn}*", "out", "nz*ny*nx"))
        ref = _reference(entry, sig, kind, bc, style, ty)
        big = 384 if tn == "float" else 320
        if kind in ("box27", "heat27"):
            big = 320 if tn == "float" else 288
        # Laplacians are identically 0 on a single cell: the edge case is the smallest grid
        # with a non-zero answer
        edge = ("tiny", 1, 1, 2) if kind in ("lap7", "star13") else ("one", 1, 1, 1)
        shapes = [edge, ("line", 1, 1, 300), ("small", 3, 2, 5), ("odd", 5, 9, 37),
                  ("perf", big, big, big)]
        tests = [T(nm, {"nz": a, "ny": b, "nx": c}, perf=nm == "perf") for nm, a, b, c in shapes]
        npts = {1: 7, 2: 13}[R] if "27" not in kind else 27
        out.append(record(FAMILY, f"{kind}_{bc}_{style}_{ty.tag}", entry, sig, ref,
                          _variants(entry, sig, kind, bc, ty), tests,
                          {"stencil": kind, "boundary": bc, "style": style, "dtype": tn, "radius": R},
                          flops=f"{2 * npts}*nz*ny*nx",
                          tolerance=FLOAT_TOL if tn == "float" else None))
    return out
