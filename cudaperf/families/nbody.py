"""All-pairs N-body interactions with softening: gravity, Coulomb, soft Lennard-Jones, potentials.

Guarantees: every task is a distinct serial O(n^2) C program computing, for each body i, the sum
over all j != i of a softened pair interaction -- gravitational acceleration or force,
Coulomb force, soft-core Lennard-Jones force, gravitational or screened-Coulomb (Yukawa)
potential -- in 2-D or 3-D, with positions stored as interleaved (AoS) or separate (SoA)
arrays, coupling constants given as scalar parameters or literals, in float or double. CUDA
variants: naive one thread per body, the classic shared-memory tiling of 256 bodies, and the
tiled loop unrolled with reciprocal square roots; all skip self-interaction and handle n = 1.
"""
from __future__ import annotations

import random

from cudaperf.families._d2kit import P, T, TYPES, V, cargs, cparams, record

FAMILY = "nbody"
CATEGORY = "physics"

LAWS = ("gravity_acc", "gravity_force", "potential", "coulomb", "lj_soft", "yukawa")
ENTRY = {"gravity_acc": "nbody_accel", "gravity_force": "gravity_forces", "potential": "grav_potential",
         "coulomb": "coulomb_forces", "lj_soft": "lj_forces_softcore", "yukawa": "yukawa_potential"}
COMP = "xyz"


def _law(law, ty, style, fns):
    """(property array or None, pair lines on r2 -> s or u, accumulate 'vec'|'scal', final(f))."""
    L = ty.lit
    K = {"gravity_acc": "G", "gravity_force": "G", "potential": "G", "coulomb": "ke",
         "lj_soft": "epsilon", "yukawa": "kq"}[law]
    Kv = K if style == "scalar" else L({"G": 0.5, "ke": 1.5, "epsilon": 0.25, "kq": 2.0}[K])
    soft = "eps2" if style == "scalar" else L(0.01)
    rs = fns["rsqrt"]
    if law in ("gravity_acc", "gravity_force"):
        pair = [f"r2 += {soft};", f"{{t}} inv = {rs}(r2);", "{t} s = mass[j] * inv * inv * inv;"]
        fin = (lambda f: f"{Kv} * {f}") if law == "gravity_acc" else (lambda f: f"{Kv} * mass[i] * {f}")
        return "mass", pair, "vec", fin
    if law == "coulomb":
        pair = [f"r2 += {soft};", f"{{t}} inv = {rs}(r2);", "{t} s = -charge[j] * inv * inv * inv;"]
        return "charge", pair, "vec", lambda f: f"{Kv} * charge[i] * {f}"
    if law == "lj_soft":
        pair = [f"r2 += {L(0.5)};", f"{{t}} ir2 = {L(1)} / r2;", "{t} ir6 = ir2 * ir2 * ir2;",
                f"{{t}} s = -{L(24)} * ir2 * ({L(2)} * ir6 * ir6 - ir6);"]
        return None, pair, "vec", lambda f: f"{Kv} * {f}"
    if law == "potential":
        pair = [f"r2 += {soft};", f"{{t}} u = mass[j] * {rs}(r2);"]
        return "mass", pair, "scal", lambda f: f"-{Kv} * {f}"
    kap = "kappa" if style == "scalar" else L(2.0)
    pair = [f"r2 += {soft};", f"{{t}} r = {fns['sqrt']}(r2);",
            f"{{t}} u = charge[j] * {fns['exp']}(-{kap} * r) / r;"]
    return "charge", pair, "scal", lambda f: f"{Kv} * charge[i] * {f}"


def _pos(layout, D, i, c):
    return f"pos[{i} * {D} + {c}]" if layout == "aos" else f"{COMP[c]}[{i}]"


def _body(law, ty, style, layout, D, fns, posj, propj, ind, loop_head, skip):
    """Inner-loop statements for pair (i, j); posj(c)/propj give j's data."""
    prop, pair, kind, _ = _law(law, ty, style, fns)
    tn = ty.name
    L = [ind + loop_head]
    if skip:
        L.append(ind + "    " + skip)
    for c in range(D):
        L.append(f"{ind}    {tn} d{COMP[c]} = {posj(c)} - p{COMP[c]};")
    L.append(f"{ind}    {tn} r2 = " + " + ".join(f"d{COMP[c]} * d{COMP[c]}" for c in range(D)) + ";")
    for ln in pair:
        ln = ln.replace("{t}", tn)
        if prop:
            ln = ln.replace(f"{prop}[j]", propj)
        L.append(f"{ind}    {ln}")
    if kind == "vec":
        L += [f"{ind}    f{COMP[c]} += s * d{COMP[c]};" for c in range(D)]
    else:
        L.append(f"{ind}    acc += u;")
    L.append(ind + "}")
    return L


def _prologue(law, ty, style, layout, D, ind, i="i"):
    _, _, kind, _ = _law(law, ty, style, {"rsqrt": "", "sqrt": "", "exp": ""})
    tn = ty.name
    L = [f"{ind}{tn} p{COMP[c]} = {_pos(layout, D, i, c)};" for c in range(D)]
    if kind == "vec":
        L.append(f"{ind}{tn} " + ", ".join(f"f{COMP[c]} = {ty.zero}" for c in range(D)) + ";")
    else:
        L.append(f"{ind}{tn} acc = {ty.zero};")
    return L


def _epilogue(law, ty, style, layout, D, fns, ind, guard=""):
    _, _, kind, fin = _law(law, ty, style, fns)
    if kind == "scal":
        return [f"{ind}{guard}phi[i] = {fin('acc')};"]
    if layout == "aos":
        return [f"{ind}{guard}out[i * {D} + {c}] = {fin('f' + COMP[c])};" for c in range(D)]
    return [f"{ind}{guard}{'a' + COMP[c]}[i] = {fin('f' + COMP[c])};" for c in range(D)]


def _reference(entry, sig, law, style, layout, D, ty):
    fns = {"rsqrt": "1.0 / sqrt", "sqrt": "sqrt", "exp": "exp"}
    prop, _, _, _ = _law(law, ty, style, fns)
    L = [f"void {entry}({cparams(sig)}) {{", "    for (int i = 0; i < n; i++) {"]
    L += _prologue(law, ty, style, layout, D, "        ")
    L += _body(law, ty, style, layout, D, fns, lambda c: _pos(layout, D, "j", c),
               f"{prop}[j]" if prop else "", "        ", "for (int j = 0; j < n; j++) {",
               "if (j == i) continue;")
    L += _epilogue(law, ty, style, layout, D, fns, "        ")
    L += ["    }", "}"]
    return "\n".join(L)


def _variants(entry, sig, law, style, layout, D, ty):
    tn = ty.name
    ps, args = cparams(sig), cargs(sig)
    exact = {"rsqrt": f"{ty.lit(1)} / {ty.fn('sqrt')}", "sqrt": ty.fn("sqrt"), "exp": ty.fn("exp")}
    fast = {"rsqrt": "rsqrt" + ty.fsuffix, "sqrt": ty.fn("sqrt"), "exp": ty.fn("exp")}
    prop, _, _, _ = _law(law, ty, style, exact)
    pro = "\n".join(_prologue(law, ty, style, layout, D, "    ").__iter__())
    nb = "\n".join(_body(law, ty, style, layout, D, exact, lambda c: _pos(layout, D, "j", c),
                         f"{prop}[j]" if prop else "", "    ", "for (int j = 0; j < n; j++) {",
                         "if (j == i) continue;"))
    epi = "\n".join(_epilogue(law, ty, style, layout, D, exact, "    "))
    naive = f"""
__global__ void {entry}_k({ps}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
{pro}
{nb}
{epi}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_k<<<(n + 255) / 256, 256>>>({args});
}}
"""
    loads = "\n".join(f"            sp[{c}][threadIdx.x] = {_pos(layout, D, 'j', c)};" for c in range(D))
    if prop:
        loads += f"\n            sq[threadIdx.x] = {prop}[j];"
    sq_decl = f"    __shared__ {tn} sq[256];\n" if prop else ""

    def tiled_src(fns, unroll, name):
        body = "\n".join(_body(law, ty, style, layout, D, fns, lambda c: f"sp[{c}][jj]",
                               "sq[jj]" if prop else "", "        ",
                               f"for (int jj = 0; jj < cnt; jj++) {{",
                               "if (j0 + jj == i) continue;"))
        pro_t = "\n".join(_prologue(law, ty, style, layout, D, "    ", i="ii"))
        epi_t = "\n".join(_epilogue(law, ty, style, layout, D, fns, "    ", guard="if (live) "))
        return f"""
__global__ void __launch_bounds__(256) {entry}_{name}({ps}) {{
    __shared__ {tn} sp[{D}][256];
{sq_decl}    int i = blockIdx.x * 256 + threadIdx.x;
    bool live = i < n;
    int ii = live ? i : 0;
{pro_t}
    for (int j0 = 0; j0 < n; j0 += 256) {{
        int cnt = n - j0 < 256 ? n - j0 : 256;
        __syncthreads();
        {{
            int j = j0 + threadIdx.x;
            if (j < n) {{
{loads}
            }}
        }}
        __syncthreads();
        {"#pragma unroll 8" if unroll else ""}
{body}
    }}
{epi_t}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_{name}<<<(n + 255) / 256, 256>>>({args});
}}
"""
    return [V("naive", "one thread per body, all other bodies streamed from global memory", naive),
            V("tiled_smem", "tiles of 256 bodies staged in shared memory (SoA), every thread of "
              "the block reuses each tile", tiled_src(exact, False, "tile")),
            V("loop_unrolled", "shared-memory tiles, inner loop unrolled 8x, hardware reciprocal "
              "square root", tiled_src(fast, True, "unroll"))]


def generate(rng: random.Random) -> list[dict]:
    combos = [(law, D, lay, tn, st) for law in LAWS for D in (2, 3) for lay in ("aos", "soa")
              for tn in ("float", "double") for st in ("scalar", "literal")]
    rng.shuffle(combos)
    combos = sorted(combos[:84], key=lambda c: (LAWS.index(c[0]), c[1], c[2], c[3], c[4]))
    out = []
    for law, D, layout, tn, style in combos:
        ty = TYPES[tn]
        prop, _, kind, _ = _law(law, ty, style, {"rsqrt": "", "sqrt": "", "exp": ""})
        entry = f"{ENTRY[law]}_{D}d_{layout}{'_c' if style == 'literal' else ''}_{ty.tag}"
        sig = [P("n", "int", "size")]
        if style == "scalar":
            K = {"gravity_acc": "G", "gravity_force": "G", "potential": "G", "coulomb": "ke",
                 "lj_soft": "epsilon", "yukawa": "kq"}[law]
            sig.append(P(K, tn, "scalar", init="uniform(0.5, 2)"))
            if law != "lj_soft":
                sig.append(P("eps2", tn, "scalar", init="uniform(0.005, 0.02)"))
            if law == "yukawa":
                sig.append(P("kappa", tn, "scalar", init="uniform(0.5, 3)"))
        if layout == "aos":
            sig.append(P("pos", f"const {tn}*", "in", f"{D}*n", "uniform(-1, 1)"))
        else:
            sig += [P(COMP[c], f"const {tn}*", "in", "n", "uniform(-1, 1)") for c in range(D)]
        if prop:
            sig.append(P(prop, f"const {tn}*", "in", "n",
                         "uniform(0.5, 1.5)" if prop == "mass" else "uniform(-1, 1)"))
        if kind == "scal":
            sig.append(P("phi", f"{tn}*", "out", "n"))
        elif layout == "aos":
            sig.append(P("out", f"{tn}*", "out", f"{D}*n"))
        else:
            sig += [P("a" + COMP[c], f"{tn}*", "out", "n") for c in range(D)]
        ref = _reference(entry, sig, law, style, layout, D, ty)
        big = 12288
        tests = [T("one", {"n": 1}), T("two", {"n": 2}), T("odd", {"n": 1003}),
                 T("perf", {"n": big}, perf=True)]
        tol = ({"rtol": 1e-2, "atol": 2e-3, "l2": 5e-3} if tn == "float"
               else {"rtol": 1e-7, "atol": 1e-9, "l2": 1e-8})
        out.append(record(FAMILY, f"{law}_{D}d_{layout}_{style}_{ty.tag}", entry, sig, ref,
                          _variants(entry, sig, law, style, layout, D, ty), tests,
                          {"law": law, "dim": D, "layout": layout, "dtype": tn, "constants": style},
                          flops=f"20*n*n", tolerance=tol))
    return out
