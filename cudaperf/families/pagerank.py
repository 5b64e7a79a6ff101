"""pagerank family: one pull-style PageRank iteration over the CSR of in-edges.

Guarantees: 84 distinct tasks over the update rule (plain with out-degree array, personalised
teleport vector, edge weights normalised by per-source weight sums, dangling mass as a scalar,
with per-vertex change output, with precomputed contributions, with zero-out-degree guard),
element type (float, double), damping (scalar parameter or the literal 0.85), 32- or 64-bit
row offsets and the loop form (row pointers or hoisted bounds), sampled to 84; each task gets a
degree profile (avg in-degree 4, 16, 64) for its tests. Out-degrees are drawn >= 1
except in the guarded rule, whose reference skips sources with no out-edges. Variants: naive
(thread per vertex), warp per vertex with shuffle reduction, 8 lanes per vertex.
"""
from __future__ import annotations

import itertools
import random

FAMILY = "pagerank"
CATEGORY = "graph"
_HDR = "#include <cuda_runtime.h>\n"
_STYLES = {  # prefix, rowptr, src index, rank in, rank out, n, nnz, v, e
    4: ("pagerank", "in_ptr", "in_src", "pr", "pr_next", "n", "nnz", "v", "e"),
    16: ("pr_iter", "rowptr", "srcs", "rank", "rank_new", "nv", "ne", "i", "k"),
    64: ("page_rank_step", "offsets", "from", "score", "score_out", "num_pages", "num_links", "p", "l"),
}
_FORMS = ("plain", "personal", "weighted", "dangling", "delta", "contrib", "guarded")


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper


def _task(T, form, damp_param, IT, style, deg):
    stem, RP, SRC, PR, OUT, N, NNZ, V, E = _STYLES[deg]
    tag = f"{'' if damp_param else '_085'}{'_i64' if IT != 'int' else ''}{'_v2' if style == 'hoist' else ''}"
    entry = f"{'s' if T == 'float' else 'd'}{stem}_{form}{tag}"
    one = "1.0f" if T == "float" else "1.0"
    zero = "0.0f" if T == "float" else "0.0"
    d = "damping" if damp_param else ("0.85f" if T == "float" else "0.85")
    sig = [_p(N, "int", "size"), _p(NNZ, "int", "size")]
    if damp_param:
        sig.append(_p("damping", T, "scalar", init="uniform(0.8, 0.9)"))
    if form == "dangling":
        sig.append(_p("dangling_sum", T, "scalar", init="uniform(0, 0.3)"))
    sig += [_p(RP, f"const {IT}*", "in", f"{N}+1", f"csr_rowptr({N}, {NNZ})"),
            _p(SRC, "const int*", "in", NNZ, f"randint(0, {N})")]
    if form == "weighted":
        sig += [_p("w", f"const {T}*", "in", NNZ, "uniform(0.1, 1)"),
                _p("wsum", f"const {T}*", "in", N, "uniform(1, 8)")]
    elif form == "contrib":
        sig.append(_p("contrib", f"const {T}*", "in", N, "uniform(0, 0.001)"))
    else:
        sig.append(_p("outdeg", "const int*", "in", N, "randint(0, 8)" if form == "guarded" else "randint(1, 33)"))
    if form != "contrib":
        sig.append(_p(PR, f"const {T}*", "in", N, "uniform(0, 0.001)"))
    if form == "personal":
        sig.append(_p("teleport", f"const {T}*", "in", N, "uniform(0, 0.001)"))
    sig.append(_p(OUT, f"{T}*", "out", N))
    if form == "delta":
        sig.append(_p("delta", f"{T}*", "out", N))
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)

    def term(u, e, ldg=False):
        L = (lambda x: "__ldg(&" + x + ")") if ldg else (lambda x: x)
        if form == "weighted":
            return f"{L(f'w[{e}]')} * {L(f'{PR}[{u}]')} / {L(f'wsum[{u}]')}"
        if form == "contrib":
            return L(f"contrib[{u}]")
        return f"{L(f'{PR}[{u}]')} / {L(f'outdeg[{u}]')}"

    def acc_stmt(e, ldg=False):
        u = f"{SRC}[{e}]" if not ldg else f"__ldg(&{SRC}[{e}])"
        if form == "guarded":
            return (f"{{ int u = {u}; int od = {'__ldg(&outdeg[u])' if ldg else 'outdeg[u]'}; "
                    f"if (od > 0) sum += {'__ldg(&' + PR + '[u])' if ldg else PR + '[u]'} / od; }}")
        return f"{{ int u = {u}; sum += {term('u', e, ldg)}; }}"

    base = {"personal": f"({one} - {d}) * teleport[{V}]",
            "dangling": f"({one} - {d}) / {N} + {d} * dangling_sum / {N}"}.get(form, f"({one} - {d}) / {N}")

    def fin(v, s):
        st = f"{OUT}[{v}] = {base.replace('[' + V + ']', '[' + v + ']')} + {d} * {s};"
        if form == "delta":
            st += f" delta[{v}] = fabs({OUT}[{v}] - {PR}[{v}]);"
        return st

    ref = (f"void {entry}({params}) {{\n"
           f"    for (int {V} = 0; {V} < {N}; {V}++) {{\n"
           f"        {T} sum = {zero};\n"
           + (f"        for ({IT} {E} = {RP}[{V}]; {E} < {RP}[{V} + 1]; {E}++)\n" if style == "for" else
              f"        {IT} first = {RP}[{V}], last = {RP}[{V} + 1];\n"
              f"        for ({IT} {E} = first; {E} < last; {E}++)\n") +
           f"            {acc_stmt(E)}\n"
           f"        {fin(V, 'sum')}\n    }}\n}}\n")
    naive = _HDR + f'''
__global__ void {entry}_k({params}) {{
    int {V} = blockIdx.x * blockDim.x + threadIdx.x;
    if ({V} >= {N}) return;
    {T} sum = {zero};
    for ({IT} {E} = {RP}[{V}]; {E} < {RP}[{V} + 1]; {E}++) {acc_stmt(E)}
    {fin(V, "sum")}
}}
extern "C" void {entry}({params}) {{
    if ({N} <= 0) return;
    {entry}_k<<<({N} + 255) / 256, 256>>>({args});
}}
'''

    def grouped(L):
        mask = "0xffffffffu" if L == 32 else f"(((1u << {L}) - 1u) << ((threadIdx.x & 31) / {L} * {L}))"
        return _HDR + f'''
__global__ void {entry}_g{L}({params}) {{
    long long g = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / {L};
    int lane = threadIdx.x % {L};
    unsigned mask = {mask};
    if (g >= {N}) return;  // whole {L}-lane groups leave together
    int {V} = (int)g;
    {IT} beg = {RP}[{V}], end = {RP}[{V} + 1];
    {T} sum = {zero};
    for ({IT} {E} = beg + lane; {E} < end; {E} += {L}) {acc_stmt(E, True)}
    for (int off = {L // 2}; off > 0; off >>= 1) sum += __shfl_down_sync(mask, sum, off, {L});
    if (lane == 0) {{ {fin(V, "sum")} }}
}}
extern "C" void {entry}({params}) {{
    if ({N} <= 0) return;
    long long threads = (long long){N} * {L};
    {entry}_g{L}<<<(unsigned)((threads + 255) / 256), 256>>>({args});
}}
'''
    n = (1 << 25) // deg
    rec = {"task_id": f"c2cuda/{FAMILY}/{T}_{form}{tag}_deg{deg}",
           "track": "c2cuda", "entry": entry, "signature": sig, "reference": ref,
           "variants": [{"name": "naive", "strategy": "one thread per vertex", "source": naive},
                        {"name": "warp_shuffle", "strategy": "one warp per vertex, coalesced in-edge reads, shuffle reduction", "source": grouped(32)},
                        {"name": "subwarp_8", "strategy": "8 lanes per vertex, segmented shuffle reduction", "source": grouped(8)}],
           "tests": [{"name": "one", "sizes": {N: 1, NNZ: 1}},
                     {"name": "ragged", "sizes": {N: 1003, NNZ: 1003 * deg + 11}},
                     {"name": "few_edges", "sizes": {N: 2049, NNZ: 517}},
                     {"name": "perf", "sizes": {N: n, NNZ: 1 << 25}, "perf": True}],
           "meta": {"flops": f"2*{NNZ}", "source": "generated",
                    "knobs": {"dtype": T, "form": form, "damping_param": damp_param, "offset_type": IT,
                              "loop_style": style, "avg_in_degree": deg}}}
    if T == "float":
        rec["tolerance"] = {"rtol": 1e-3, "atol": 1e-4, "l2": 5e-4}
    return rec


def generate(rng: random.Random) -> list[dict]:
    combos = list(itertools.product(("float", "double"), _FORMS, (True, False), ("int", "long long"), ("for", "hoist")))
    combos = rng.sample(combos, 84)
    return [_task(*c, (4, 16, 64)[i % 3]) for i, c in enumerate(combos)]
