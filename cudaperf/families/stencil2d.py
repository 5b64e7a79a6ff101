"""2-D 5- and 9-point stencils on a ny x nx grid (Jacobi, Laplacian, heat step, box, Gaussian...).

Guarantees: every task is a distinct serial C program computing one stencil sweep `out = S(in)`
in float or double with one of three halo rules -- fixed (boundary cells copied unchanged),
clamped (edge replicated) or periodic -- reading a dense or a pitched (row stride `ld` >= nx)
input and writing a dense output. The CUDA variants (naive flat index, 32x8 shared-memory tile
with halo, register-blocked column march) apply the same rule and handle 1x1 grids, sizes that
are not multiples of the tile, and single rows or columns.
"""
from __future__ import annotations

import random

from cudaperf.families._d2kit import FLOAT_TOL, P, T, TYPES, V, blocks, cargs, cparams, record

FAMILY = "stencil2d"
CATEGORY = "stencil"

N5 = [(-1, 0), (1, 0), (0, -1), (0, 1)]
CORNERS = [(-1, -1), (-1, 1), (1, -1), (1, 1)]


def _kinds(ty):
    """name -> (input name, output name, scalar names, uses weight array, formula(A))."""
    L = ty.lit
    s4 = lambda A: " + ".join(A(*d) for d in N5)
    sc = lambda A: " + ".join(A(*d) for d in CORNERS)
    return {
        "jacobi5": ("u", "unew", [], False, lambda A: f"{L(0.25)} * ({s4(A)})"),
        "laplace5": ("f", "lap", ["inv_h2"], False,
                     lambda A: f"inv_h2 * ({s4(A)} - {L(4)} * {A(0, 0)})"),
        "heat5": ("temp", "temp_new", ["alpha"], False,
                  lambda A: f"{A(0, 0)} + alpha * ({s4(A)} - {L(4)} * {A(0, 0)})"),
        "sharpen5": ("img", "sharp", [], False, lambda A: f"{L(5)} * {A(0, 0)} - ({s4(A)})"),
        "box9": ("src", "dst", [], False,
                 lambda A: f"({A(0, 0)} + {s4(A)} + {sc(A)}) * {L(1 / 9)}"),
        "gauss9": ("src", "blur", [], False,
                   lambda A: f"{L(0.25)} * {A(0, 0)} + {L(0.125)} * ({s4(A)}) + {L(0.0625)} * ({sc(A)})"),
        "laplace9": ("phi", "lap", ["inv_h2"], False,
                     lambda A: f"inv_h2 * ({L(4)} * ({s4(A)}) + ({sc(A)}) - {L(20)} * {A(0, 0)}) * {L(1 / 6)}"),
        "weighted9": ("a", "b", [], True,
                      lambda A: " + ".join(f"w[{(dy + 1) * 3 + dx + 1}] * {A(dy, dx)}"
                                           for dy in (-1, 0, 1) for dx in (-1, 0, 1))),
    }


ENTRY = {"jacobi5": ["jacobi_step", "jacobi2d", "relax_jacobi"], "laplace5": ["laplacian2d", "lap5"],
         "heat5": ["heat_step", "diffuse2d", "heat2d_explicit"], "sharpen5": ["sharpen", "unsharp5"],
         "box9": ["box_filter3x3", "mean3x3"], "gauss9": ["gauss3x3", "gaussian_blur3"],
         "laplace9": ["laplacian9", "mehrstellen_lap"], "weighted9": ["stencil9", "apply_3x3"]}


def _reference(entry, sig, kind, bc, pitched, ty):
    src, dst, _, _, f = _kinds(ty)[kind]
    ld = "ld" if pitched else "nx"
    def A(dy, dx):
        r = {-1: "im", 0: "i", 1: "ip"}[dy]
        c = {-1: "jm", 0: "j", 1: "jp"}[dx]
        return f"{src}[{r} * {ld} + {c}]"
    L = [f"void {entry}({cparams(sig)}) {{", "    for (int i = 0; i < ny; i++) {"]
    if bc == "clamped":
        L += ["        int im = i > 0 ? i - 1 : 0;", "        int ip = i < ny - 1 ? i + 1 : ny - 1;"]
    elif bc == "periodic":
        L += ["        int im = i > 0 ? i - 1 : ny - 1;", "        int ip = i < ny - 1 ? i + 1 : 0;"]
    else:
        L += ["        int im = i - 1, ip = i + 1;"]
    L.append("        for (int j = 0; j < nx; j++) {")
    if bc == "clamped":
        L += ["            int jm = j > 0 ? j - 1 : 0;", "            int jp = j < nx - 1 ? j + 1 : nx - 1;"]
    elif bc == "periodic":
        L += ["            int jm = j > 0 ? j - 1 : nx - 1;", "            int jp = j < nx - 1 ? j + 1 : 0;"]
    else:
        L += ["            int jm = j - 1, jp = j + 1;",
              "            if (i == 0 || i == ny - 1 || j == 0 || j == nx - 1) {",
              f"                {dst}[i * nx + j] = {src}[i * {ld} + j];", "                continue;",
              "            }"]
    L.append(f"            {dst}[i * nx + j] = {f(A)};")
    L += ["        }", "    }", "}"]
    return "\n".join(L)


def _map_dev(bc):
    if bc == "periodic":
        b = "return k < 0 ? k + n : (k >= n ? k - n : k);"
    else:  # clamped; for fixed the mapped halo is only read by cells that copy instead
        b = "return k < 0 ? 0 : (k >= n ? n - 1 : k);"
    return f"__device__ __forceinline__ int bmap(int k, int n) {{ {b} }}\n"


def _variants(entry, sig, kind, bc, pitched, ty):
    t = ty.name
    src, dst, _, _, f = _kinds(ty)[kind]
    ps, args = cparams(sig), cargs(sig)
    ld = "ld" if pitched else "nx"
    helper = _map_dev(bc)
    edge = "(i == 0 || i == ny - 1 || j == 0 || j == nx - 1)"

    def Ag(dy, dx):
        r = "i" if dy == 0 else f"bmap(i + ({dy}), ny)"
        c = "j" if dx == 0 else f"bmap(j + ({dx}), nx)"
        return f"{src}[(size_t){r} * {ld} + {c}]"
    fixed_n = (f"if {edge} {{ {dst}[(size_t)i * nx + j] = {src}[(size_t)i * {ld} + j]; return; }}\n    "
               if bc == "fixed" else "")
    naive = f"""
{helper}
__global__ void {entry}_k({ps}) {{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)ny * nx) return;
    int i = (int)(idx / nx), j = (int)(idx % nx);
    {fixed_n}{dst}[(size_t)i * nx + j] = {f(Ag)};
}}
extern "C" void {entry}({ps}) {{
    if (ny <= 0 || nx <= 0) return;
    {entry}_k<<<{blocks('(long long)ny * nx')}, 256>>>({args});
}}
"""
    At = lambda dy, dx: f"tile[threadIdx.y + {1 + dy}][threadIdx.x + {1 + dx}]"
    fixed_t = (f"if {edge} {dst}[(size_t)i * nx + j] = tile[threadIdx.y + 1][threadIdx.x + 1]; else "
               if bc == "fixed" else "")
    tiled = f"""
{helper}
__global__ void {entry}_tile({ps}) {{
    __shared__ {t} tile[8 + 2][32 + 2];
    int j0 = blockIdx.x * 32 - 1, i0 = blockIdx.y * 8 - 1;
    for (int s = threadIdx.y * 32 + threadIdx.x; s < 10 * 34; s += 256) {{
        int r = s / 34, c = s % 34;
        int gi = bmap(i0 + r, ny), gj = bmap(j0 + c, nx);
        tile[r][c] = {src}[(size_t)gi * {ld} + gj];
    }}
    __syncthreads();
    int i = blockIdx.y * 8 + threadIdx.y, j = blockIdx.x * 32 + threadIdx.x;
    if (i < ny && j < nx) {{ {fixed_t}{dst}[(size_t)i * nx + j] = {f(At)}; }}
}}
extern "C" void {entry}({ps}) {{
    if (ny <= 0 || nx <= 0) return;
    dim3 block(32, 8), grid((nx + 31) / 32, (ny + 7) / 8);
    {entry}_tile<<<grid, block>>>({args});
}}
"""
    # register blocking: each thread owns one column and marches down ROWS rows, keeping the
    # 3x3 neighbourhood in registers so each input element is loaded once per thread.
    Ar = lambda dy, dx: f"r{dy + 1}{dx + 1}"
    fixed_r = (f"if {edge} {dst}[(size_t)i * nx + j] = r11; else " if bc == "fixed" else "")
    load_row = lambda reg, row: "; ".join(
        f"{reg}{c} = {src}[(size_t){row} * {ld} + {col}]"
        for c, col in ((0, "jm"), (1, "j"), (2, "jp")))
    reg = f"""
{helper}
__global__ void __launch_bounds__(128) {entry}_march({ps}) {{
    const int ROWS = 16;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i0 = blockIdx.y * ROWS;
    if (j >= nx) return;
    int jm = bmap(j - 1, nx), jp = bmap(j + 1, nx);
    {t} r00, r01, r02, r10, r11, r12, r20, r21, r22;
    int rowa = bmap(i0 - 1, ny), rowb = bmap(i0, ny);
    {load_row('r0', 'rowa')};
    {load_row('r1', 'rowb')};
    int iend = i0 + ROWS < ny ? i0 + ROWS : ny;
    for (int i = i0; i < iend; i++) {{
        int rowc = bmap(i + 1, ny);
        {load_row('r2', 'rowc')};
        {fixed_r}{dst}[(size_t)i * nx + j] = {f(Ar)};
        r00 = r10; r01 = r11; r02 = r12;
        r10 = r20; r11 = r21; r12 = r22;
    }}
}}
extern "C" void {entry}({ps}) {{
    if (ny <= 0 || nx <= 0) return;
    dim3 block(128), grid((nx + 127) / 128, (ny + 15) / 16);
    {entry}_march<<<grid, block>>>({args});
}}
"""
    return [V("naive", "one thread per grid point (flat index), boundary rule per neighbour", naive),
            V("tiled_smem", "32x8 block, (8+2)x(32+2) shared-memory tile with a one-cell halo "
              "mapped at load time", tiled),
            V("register_blocking", "one thread per column marching down 16 rows, 3x3 "
              "neighbourhood kept in registers (each row loaded once)", reg)]


def generate(rng: random.Random) -> list[dict]:
    out = []
    kinds = list(_kinds(TYPES["float"]))
    combos = [(k, bc, p, tn) for k in kinds for bc in ("fixed", "clamped", "periodic")
              for p in (False, True) for tn in ("float", "double")]
    rng.shuffle(combos)
    combos = sorted(combos[:84], key=lambda c: (kinds.index(c[0]), c[1], c[2], c[3]))
    for kind, bc, pitched, tn in combos:
        ty = TYPES[tn]
        src, dst, scal, warr, _ = _kinds(ty)[kind]
        entry = f"{rng.choice(ENTRY[kind])}_{bc}{'_pitched' if pitched else ''}_{ty.tag}"
        ld = "ld" if pitched else "nx"
        sig = [P("ny", "int", "size"), P("nx", "int", "size")]
        if pitched:
            sig.append(P("ld", "int", "size"))
        sig.append(P(src, f"const {tn}*", "in", f"ny*{ld}", "uniform(-1, 1)"))
        if warr:
            sig.append(P("w", f"const {tn}*", "in", "9", "uniform(-0.5, 0.5)"))
        for s in scal:
            sig.append(P(s, tn, "scalar", init="uniform(0.05, 0.2)" if s == "alpha" else "uniform(0.5, 2)"))
        sig.append(P(dst, f"{tn}*", "out", "ny*nx"))
        ref = _reference(entry, sig, kind, bc, pitched, ty)
        big = (8192, 8192) if tn == "float" else (8192, 4096)
        # a differential operator is identically 0 on a 1x1 grid; use the smallest grid with a
        # non-zero answer so a relative tolerance means something
        edge = ("tiny", 1, 2) if kind in ("laplace5", "laplace9") else ("one", 1, 1)
        shapes = [edge, ("row", 1, 300), ("col", 515, 1), ("odd", 37, 1001), ("perf", *big)]
        tests = []
        for name, ny, nx in shapes:
            s = {"ny": ny, "nx": nx}
            if pitched:
                s["ld"] = nx + (64 if name == "perf" else 3)
            tests.append(T(name, s, perf=name == "perf"))
        npts = 5 if kind.endswith("5") else 9
        out.append(record(FAMILY, f"{kind}_{bc}_{'pitched' if pitched else 'dense'}_{ty.tag}",
                          entry, sig, ref, _variants(entry, sig, kind, bc, pitched, ty), tests,
                          {"stencil": kind, "boundary": bc, "pitched": pitched, "dtype": tn},
                          flops=f"{2 * npts}*ny*nx",
                          tolerance=FLOAT_TOL if (tn == "float" and kind in ("laplace5", "laplace9", "sharpen5")) else None,
                          min_bytes=(f"ny*nx*{2 * ty_size(tn)}" if pitched else None)))
    return out


def ty_size(tn):
    return 4 if tn == "float" else 8
