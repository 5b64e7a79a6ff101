"""Independent-particle time integration: Euler, symplectic Euler, velocity Verlet, leapfrog.

Guarantees: every task is a distinct serial C program advancing n non-interacting particles
(positions and velocities updated in place) by one step or by `nsteps` steps of an explicit
integrator under a per-component force law (uniform gravity, harmonic, damped harmonic,
anharmonic), with open space, soft penalty walls, reflecting walls or a periodic box, in 2-D or
3-D, AoS or SoA, float or double. Discontinuous boundary rules (reflect, periodic) are only
generated in double so the CPU reference and the GPU take the same branch on every particle.
CUDA variants: naive (one thread per particle; one launch per step), a grid-stride or fused
all-steps-in-registers kernel, and a 4-particles-per-thread / fused grid-stride kernel.
"""
from __future__ import annotations

import random

from cudaperf.families._d2kit import P, T, TYPES, V, blocks, capped_blocks, cargs, cparams, record

FAMILY = "particle_update"
CATEGORY = "physics"

INTEGRATORS = ("euler", "symplectic", "verlet", "leapfrog")
FORCES = ("gravity", "harmonic", "damped", "anharmonic")
COMP = "xyz"
ENTRY = {"euler": "euler_step", "symplectic": "symplectic_euler", "verlet": "velocity_verlet",
         "leapfrog": "leapfrog_kdk"}


def _accel(force, wall, D, c, ty, p, v):
    L = ty.lit
    terms = []
    if force == "gravity" and c == D - 1:
        terms.append(f"-{L(9.81)}")
    if force in ("harmonic", "damped", "anharmonic"):
        terms.append(f"-{L(4.0)} * {p}")
    if force == "damped":
        terms.append(f"-{L(0.5)} * {v}")
    if force == "anharmonic":
        terms.append(f"-{L(1.0)} * {p} * {p} * {p}")
    if wall == "soft":
        terms.append(f"({p} > {L(1)} ? -{L(100)} * ({p} - {L(1)}) : ({p} < -{L(1)} ? -{L(100)} * ({p} + {L(1)}) : {ty.zero}))")
    if not terms:
        return ty.zero
    return " + ".join(terms)


def _update(integ, force, wall, D, c, ty, p, v, ind):
    """Statements advancing local variables p (position) and v (velocity) of component c."""
    tn, L = ty.name, ty.lit
    A = lambda: _accel(force, wall, D, c, ty, p, v)
    if integ == "euler":
        s = [f"{{ {tn} a = {A()};", f"  {p} += {v} * dt;", f"  {v} += a * dt; }}"]
    elif integ == "symplectic":
        s = [f"{v} += ({A()}) * dt;", f"{p} += {v} * dt;"]
    elif integ == "verlet":
        s = [f"{{ {tn} a0 = {A()};", f"  {p} += {v} * dt + {L(0.5)} * a0 * dt * dt;",
             f"  {tn} a1 = {A()};", f"  {v} += {L(0.5)} * (a0 + a1) * dt; }}"]
    else:
        s = [f"{v} += {L(0.5)} * ({A()}) * dt;", f"{p} += {v} * dt;",
             f"{v} += {L(0.5)} * ({A()}) * dt;"]
    if wall == "reflect":
        s += [f"if ({p} > {L(1)}) {{ {p} = {L(2)} - {p}; {v} = -{v}; }}",
              f"if ({p} < -{L(1)}) {{ {p} = -{L(2)} - {p}; {v} = -{v}; }}"]
    elif wall == "periodic":
        s += [f"if ({p} >= {L(1)}) {p} -= {L(2)};", f"if ({p} < -{L(1)}) {p} += {L(2)};"]
    return [ind + x for x in s]


def _acc(layout, D, c, i="i"):
    if layout == "aos":
        return f"pos[{i} * {D} + {c}]", f"vel[{i} * {D} + {c}]"
    return f"{COMP[c]}[{i}]", f"v{COMP[c]}[{i}]"


def _particle(integ, force, wall, D, layout, ty, ind, i="i"):
    """Load, update and store every component of particle i."""
    L = []
    for c in range(D):
        pa, va = _acc(layout, D, c, i)
        L.append(f"{ind}{{")
        L.append(f"{ind}    {ty.name} p = {pa}, v = {va};")
        L += _update(integ, force, wall, D, c, ty, "p", "v", ind + "    ")
        L.append(f"{ind}    {pa} = p; {va} = v;")
        L.append(f"{ind}}}")
    return L


def _reference(entry, sig, integ, force, wall, D, layout, multi, ty):
    L = [f"void {entry}({cparams(sig)}) {{"]
    ind = "    "
    if multi:
        L.append("    for (int step = 0; step < nsteps; step++) {")
        ind = "        "
    L.append(f"{ind}for (int i = 0; i < n; i++) {{")
    L += _particle(integ, force, wall, D, layout, ty, ind + "    ")
    L.append(f"{ind}}}")
    if multi:
        L.append("    }")
    L.append("}")
    return "\n".join(L)


def _variants(entry, sig, integ, force, wall, D, layout, multi, ty):
    tn = ty.name
    ps, args = cparams(sig), cargs(sig)
    kps = ps.replace("int nsteps, ", "") if multi else ps
    kargs = args.replace("nsteps, ", "") if multi else args
    body = "\n".join(_particle(integ, force, wall, D, layout, ty, "    "))
    kernel = f"""
__global__ void {entry}_k({kps}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
{body}
}}
"""
    if multi:
        naive = kernel + f"""
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    for (int step = 0; step < nsteps; step++)
        {entry}_k<<<{blocks('n')}, 256>>>({kargs});
}}
"""
    else:
        naive = kernel + f"""
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_k<<<{blocks('n')}, 256>>>({args});
}}
"""
    # state in registers for the whole particle (all components)
    loads = "\n".join(f"    {tn} p{c} = {_acc(layout, D, c)[0]}, v{c} = {_acc(layout, D, c)[1]};"
                      for c in range(D))
    stores = "\n".join(f"    {_acc(layout, D, c)[0]} = p{c}; {_acc(layout, D, c)[1]} = v{c};"
                       for c in range(D))
    upd = "\n".join(x for c in range(D)
                    for x in _update(integ, force, wall, D, c, ty, f"p{c}", f"v{c}", "        "))
    if multi:
        fused = f"""
__global__ void {entry}_fused({ps}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
{loads}
    for (int step = 0; step < nsteps; step++) {{
{upd}
    }}
{stores}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0 || nsteps <= 0) return;
    {entry}_fused<<<{blocks('n')}, 256>>>({args});
}}
"""
        gsf = f"""
__global__ void __launch_bounds__(128) {entry}_fgs({ps}) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {{
{loads.replace(chr(10) + '    ', chr(10) + '        ').replace('    ', '        ', 1)}
        for (int step = 0; step < nsteps; step++) {{
{upd.replace(chr(10) + '        ', chr(10) + '            ').replace('        ', '            ', 1)}
        }}
{stores.replace(chr(10) + '    ', chr(10) + '        ').replace('    ', '        ', 1)}
    }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0 || nsteps <= 0) return;
    {entry}_fgs<<<{capped_blocks('n', 128)}, 128>>>({args});
}}
"""
        return [V("naive", "one thread per particle, one kernel launch per time step", naive),
                V("fused", "all time steps in one launch, particle state kept in registers "
                  "(one global read and write per value)", fused),
                V("grid_stride", "fused steps in registers plus a grid-stride loop over particles, "
                  "128-thread blocks", gsf)]
    gs = f"""
__global__ void __launch_bounds__(512) {entry}_gs({ps}) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {{
{loads.replace(chr(10) + '    ', chr(10) + '        ').replace('    ', '        ', 1)}
{upd}
{stores.replace(chr(10) + '    ', chr(10) + '        ').replace('    ', '        ', 1)}
    }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_gs<<<{capped_blocks('n', 512)}, 512>>>({args});
}}
"""
    unr = f"""
__global__ void {entry}_x4({ps}) {{
    long long total = (long long)gridDim.x * blockDim.x;
    long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int r = 0; r < 4; r++) {{
        long long li = first + r * total;
        if (li >= n) break;
        int i = (int)li;
{body.replace(chr(10), chr(10) + '    ').replace('    ', '        ', 1)}
    }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_x4<<<{blocks('(n + 3) / 4')}, 256>>>({args});
}}
"""
    return [V("naive", "one thread per particle", naive),
            V("grid_stride", "grid-stride loop, 512-thread blocks, all components in registers", gs),
            V("loop_unrolled", "4 particles per thread, strided by the grid so warps stay "
              "coalesced, unrolled for memory-level parallelism", unr)]


def generate(rng: random.Random) -> list[dict]:
    pairs = [(ig, f) for ig in INTEGRATORS for f in FORCES
             if not (ig in ("verlet", "leapfrog") and f == "damped")]
    combos = [(ig, f, w, tn) for ig, f in pairs for tn, walls in
              (("float", ("open", "soft")), ("double", ("open", "soft", "reflect", "periodic")))
              for w in walls]
    out = []
    for integ, force, wall, tn in combos:
        ty = TYPES[tn]
        D = rng.choice((2, 3))
        layout = rng.choice(("aos", "soa"))
        multi = rng.random() < 0.5
        entry = f"{ENTRY[integ]}_{force}_{wall}_{D}d_{layout}{'_nsteps' if multi else ''}_{ty.tag}"
        sig = [P("n", "int", "size")]
        if multi:
            sig.append(P("nsteps", "int", "size"))
        sig.append(P("dt", tn, "scalar", init="uniform(0.001, 0.01)"))
        if layout == "aos":
            sig += [P("pos", f"{tn}*", "inout", f"{D}*n", "uniform(-1, 1)"),
                    P("vel", f"{tn}*", "inout", f"{D}*n", "uniform(-1, 1)")]
        else:
            sig += [P(COMP[c], f"{tn}*", "inout", "n", "uniform(-1, 1)") for c in range(D)]
            sig += [P("v" + COMP[c], f"{tn}*", "inout", "n", "uniform(-1, 1)") for c in range(D)]
        ref = _reference(entry, sig, integ, force, wall, D, layout, multi, ty)
        per = 2 * D * ty_size(tn)  # bytes per particle
        big = min(1 << 25, int(0.8e9 // per))
        if multi:
            tests = [T("one", {"n": 1, "nsteps": 1}), T("odd", {"n": 1003, "nsteps": 3}),
                     T("mid", {"n": 65537, "nsteps": 10}),
                     T("perf", {"n": big // 16, "nsteps": 16}, perf=True)]
        else:
            tests = [T("one", {"n": 1}), T("odd", {"n": 1003}), T("mid", {"n": 65537}),
                     T("perf", {"n": big}, perf=True)]
        out.append(record(FAMILY, f"{integ}_{force}_{wall}_{D}d_{layout}_{'multi' if multi else 'single'}_{ty.tag}",
                          entry, sig, ref, _variants(entry, sig, integ, force, wall, D, layout, multi, ty),
                          tests, {"integrator": integ, "force": force, "boundary": wall, "dim": D,
                                  "layout": layout, "multistep": multi, "dtype": tn},
                          flops=f"{10 * D}*n" + ("*nsteps" if multi else ""),
                          min_bytes=_min_bytes(force, D, tn)))
    return out


def _min_bytes(force, D, tn):
    """Roofline lower bound (meta.min_bytes). Every position and velocity component is read and
    written once (the default count), except under uniform gravity: it pulls along the last
    axis only, so the other D - 1 velocity components never change (bar a reflection or soft
    wall, data-dependent and not counted) and need not be written back."""
    if force != "gravity":
        return None
    return f"n*{(4 * D - (D - 1)) * ty_size(tn)}"


def ty_size(tn):
    return 4 if tn == "float" else 8
