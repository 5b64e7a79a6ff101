"""graph_frontier family: one breadth-first-search level expansion over a CSR graph.

Guarantees: 84 distinct tasks sampled from: frontier given as the vertices at level `cur`, as
an explicit vertex queue, or as a byte bitmap; output the level array only, plus a next-frontier
bitmap, or plus the count of newly reached vertices; all edges or only edges whose weight is at
most a threshold; push (top-down) or pull (bottom-up) direction; 32- or 64-bit row offsets; edge loop over the
row pointers or over hoisted bounds; and a degree profile (avg 4, 16, 64) for the tests. Results are deterministic: new vertices get the
label cur+1 whichever edge reaches them first (no parent pointers), counts use a
compare-and-swap on the label so each vertex is counted once. Variants: naive (thread per
frontier slot), warp per vertex, grid-stride with read-only loads.
"""
from __future__ import annotations

import itertools
import random

FAMILY = "graph_frontier"
CATEGORY = "graph"
_HDR = "#include <cuda_runtime.h>\n"
_STYLES = {  # prefix, rowptr, col, level, nv, ne, v, e, u
    4: ("bfs_", "row_offsets", "col_indices", "level", "n_vertices", "n_edges", "v", "e", "u"),
    16: ("frontier_", "rowptr", "adj", "depth", "nv", "ne", "src", "k", "dst"),
    64: ("level_step_", "offs", "nbrs", "dist", "num_nodes", "num_edges", "node", "j", "nb"),
}


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper


def _task(front, outk, weighted, direction, IT, style, deg):
    pre, RP, COL, LV, NV, NE, V, E, U = _STYLES[deg]
    tag = f"{'_wt' if weighted else ''}{'_i64' if IT != 'int' else ''}{'_v2' if style == 'hoist' else ''}"
    entry = f"{pre}{direction}_{front}_{outk}{tag}"
    sig = [_p(NV, "int", "size"), _p(NE, "int", "size")]
    if front == "queue":
        sig.append(_p("nf", "int", "size"))
    sig.append(_p("cur", "int", "scalar", value=1))
    if weighted:
        sig.append(_p("max_w", "float", "scalar", init="uniform(0.3, 0.7)"))
    sig += [_p(RP, f"const {IT}*", "in", f"{NV}+1", f"csr_rowptr({NV}, {NE})"),
            _p(COL, "const int*", "in", NE, f"randint(0, {NV})")]
    if weighted:
        sig.append(_p("wt", "const float*", "in", NE, "uniform(0, 1)"))
    if front == "queue":
        sig.append(_p("queue", "const int*", "in", "nf", f"randint(0, {NV})"))
    if front == "bitmap":
        sig.append(_p("in_frontier", "const unsigned char*", "in", NV, "bernoulli(0.15)"))
    sig.append(_p(LV, "int*", "inout", NV, "choice(-1, -1, -1, 0, 1, 2)"))
    if outk == "next":
        sig.append(_p("next", "unsigned char*", "out", NV))
    if outk == "count":
        sig.append(_p("num_new", "int*", "out", "1"))
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)
    wcond = f" && wt[{E}] <= max_w" if weighted else ""

    def in_front(x, ldg=False):
        if front == "bitmap":
            return f"__ldg(&in_frontier[{x}])" if ldg else f"in_frontier[{x}]"
        return f"{LV}[{x}] == cur"

    # ---------------------------------------------------------------- reference
    pre_lines = ""
    if outk == "next":
        pre_lines += f"    for (int i = 0; i < {NV}; i++) next[i] = 0;\n"
    if outk == "count":
        pre_lines += "    int cnt = 0;\n"
    mark_ref = {"level": "", "next": f" next[{U}] = 1;", "count": " cnt++;"}[outk]
    ref_loop = (f"        for ({IT} {E} = {RP}[{V}]; {E} < {RP}[{V} + 1]; {E}++) {{\n" if style == "for" else
                f"        {IT} first = {RP}[{V}], last = {RP}[{V} + 1];\n"
                f"        for ({IT} {E} = first; {E} < last; {E}++) {{\n")
    if direction == "push":
        if front == "queue":
            head = f"    for (int q = 0; q < nf; q++) {{\n        int {V} = queue[q];\n"
        else:
            head = (f"    for (int {V} = 0; {V} < {NV}; {V}++) {{\n"
                    f"        if (!({in_front(V)})) continue;\n")
        body = (ref_loop +
                f"            int {U} = {COL}[{E}];\n"
                f"            if ({LV}[{U}] == -1{wcond}) {{ {LV}[{U}] = cur + 1;{mark_ref} }}\n"
                f"        }}\n    }}\n")
    else:
        # pull: {V} is the unvisited vertex, its CSR row lists in-neighbours {U}
        head = (f"    for (int {V} = 0; {V} < {NV}; {V}++) {{\n"
                f"        if ({LV}[{V}] != -1) continue;\n")
        mark_pull = {"level": "", "next": f" next[{V}] = 1;", "count": " cnt++;"}[outk]
        body = (ref_loop +
                f"            int {U} = {COL}[{E}];\n"
                f"            if ({in_front(U)}{wcond}) {{ {LV}[{V}] = cur + 1;{mark_pull} break; }}\n"
                f"        }}\n    }}\n")
    post = "    *num_new = cnt;\n" if outk == "count" else ""
    ref = f"void {entry}({params}) {{\n{pre_lines}{head}{body}{post}}}\n"

    # ---------------------------------------------------------------- CUDA pieces
    def claim(u, who):
        """label `u` cur+1 if unvisited; GPU form of the reference's mark."""
        if outk == "count":
            return f"if (atomicCAS(&{LV}[{u}], -1, cur + 1) == -1) atomicAdd(num_new, 1);"
        nx = f" next[{who}] = 1;" if outk == "next" else ""
        return f"if ({LV}[{u}] == -1) {{ {LV}[{u}] = cur + 1;{nx} }}"

    def prep(naive):
        s = ""
        if outk == "next":
            s += (f"    {entry}_clear<<<({NV} + 255) / 256, 256>>>({NV}, next);\n" if naive
                  else f"    cudaMemsetAsync(next, 0, (size_t){NV});\n")
        if outk == "count":
            s += f"    cudaMemsetAsync(num_new, 0, sizeof(int));\n"
        return s

    clear_k = (f"__global__ void {entry}_clear(int n, unsigned char *next) {{\n"
               f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) next[i] = 0;\n}}\n"
               if outk == "next" else "")
    count_slot = "nf" if (front == "queue" and direction == "push") else NV

    def vertex_of(slot):
        return f"queue[{slot}]" if (front == "queue" and direction == "push") else slot

    if direction == "push":
        gate = "" if front == "queue" else f"if (!({in_front(V)})) return;"
        per_thread = (f"int {V} = {vertex_of('t')};\n    {gate}\n"
                      f"    for ({IT} {E} = {RP}[{V}]; {E} < {RP}[{V} + 1]; {E}++) {{\n"
                      f"        int {U} = {COL}[{E}];\n"
                      f"        if ({'wt[' + E + '] <= max_w' if weighted else 'true'}) {{ {claim(U, U)} }}\n    }}")
    else:
        mark = {"level": "", "next": f" next[{V}] = 1;", "count": " atomicAdd(num_new, 1);"}[outk]
        per_thread = (f"int {V} = t;\n    if ({LV}[{V}] != -1) return;\n"
                      f"    for ({IT} {E} = {RP}[{V}]; {E} < {RP}[{V} + 1]; {E}++) {{\n"
                      f"        int {U} = {COL}[{E}];\n"
                      f"        if ({in_front(U)}{wcond}) {{ {LV}[{V}] = cur + 1;{mark} break; }}\n    }}")
    naive = _HDR + clear_k + f'''
__global__ void {entry}_k({params}) {{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= {count_slot}) return;
    {per_thread}
}}
extern "C" void {entry}({params}) {{
{prep(True)}    if ({count_slot} <= 0) return;
    {entry}_k<<<({count_slot} + 255) / 256, 256>>>({args});
}}
'''
    # warp per vertex
    if direction == "push":
        wgate = "" if front == "queue" else f"if (!({in_front(V)})) return;  // uniform per warp"
        wbody = (f"int {V} = {vertex_of('(int)w')};\n    {wgate}\n"
                 f"    {IT} beg = {RP}[{V}], end = {RP}[{V} + 1];\n"
                 f"    for ({IT} {E} = beg + lane; {E} < end; {E} += 32) {{\n"
                 f"        int {U} = __ldg(&{COL}[{E}]);\n"
                 f"        if ({'__ldg(&wt[' + E + ']) <= max_w' if weighted else 'true'}) {{ {claim(U, U)} }}\n    }}")
    else:
        mark = {"level": "", "next": f" next[{V}] = 1;", "count": " atomicAdd(num_new, 1);"}[outk]
        wbody = (f"int {V} = (int)w;\n    if ({LV}[{V}] != -1) return;  // uniform per warp\n"
                 f"    {IT} beg = {RP}[{V}], end = {RP}[{V} + 1];\n"
                 f"    bool found = false;\n"
                 f"    for ({IT} base = beg; base < end && !found; base += 32) {{\n"
                 f"        {IT} {E} = base + lane;\n"
                 f"        bool hit = false;\n"
                 f"        if ({E} < end) {{ int {U} = __ldg(&{COL}[{E}]); hit = ({in_front(U, True)}){wcond.replace('wt[' + E + ']', '__ldg(&wt[' + E + '])')}; }}\n"
                 f"        found = __any_sync(0xffffffffu, hit);\n    }}\n"
                 f"    if (found && lane == 0) {{ {LV}[{V}] = cur + 1;{mark} }}")
    warp = _HDR + f'''
__global__ void {entry}_warp({params}) {{
    long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (w >= {count_slot}) return;  // uniform per warp
    {wbody}
}}
extern "C" void {entry}({params}) {{
{prep(False)}    if ({count_slot} <= 0) return;
    long long threads = (long long){count_slot} * 32;
    {entry}_warp<<<(unsigned)((threads + 255) / 256), 256>>>({args});
}}
'''
    gs_body = (per_thread.replace("return;", "continue;")
               .replace(f"{COL}[{E}];", f"__ldg(&{COL}[{E}]);"))
    gs = _HDR + f'''
__global__ void __launch_bounds__(512) {entry}_gs({params}) {{
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < {count_slot}; t += blockDim.x * gridDim.x) {{
    {gs_body}
    }}
}}
extern "C" void {entry}({params}) {{
{prep(False)}    if ({count_slot} <= 0) return;
    int blocks = ({count_slot} + 511) / 512; if (blocks > 132 * 4) blocks = 132 * 4;
    {entry}_gs<<<blocks, 512>>>({args});
}}
'''
    n = (1 << 26) // deg
    tests = [{"name": "one", "sizes": {NV: 1, NE: 1}}, {"name": "ragged", "sizes": {NV: 1003, NE: 1003 * min(deg, 16) + 5}},
             {"name": "sparse", "sizes": {NV: 4099, NE: 2000}},
             {"name": "perf", "sizes": {NV: n, NE: 1 << 26}, "perf": True}]
    if front == "queue":
        for t, nf in zip(tests, (1, 300, 4099, n // 8)):
            t["sizes"]["nf"] = nf
    return {"task_id": f"c2cuda/{FAMILY}/{direction}_{front}_{outk}{tag}_d{deg}",
            "track": "c2cuda", "entry": entry, "signature": sig, "reference": ref,
            "variants": [{"name": "naive", "strategy": "one thread per frontier slot (vertex or queue entry)", "source": naive},
                         {"name": "warp_per_vertex", "strategy": "one warp per vertex, coalesced adjacency reads" + (", __any_sync early exit" if direction == "pull" else ""), "source": warp},
                         {"name": "grid_stride", "strategy": "grid-stride over vertices, 512-thread blocks, read-only adjacency loads", "source": gs}],
            "tests": tests,
            "meta": {"flops": "0", "min_bytes": _min_bytes(front, outk, direction, NV, NE), "source": "generated",
                     "knobs": {"frontier": front, "output": outk, "weighted": weighted, "direction": direction,
                               "offset_type": IT, "loop_style": style, "avg_degree": deg}}}


def _min_bytes(front: str, outk: str, direction: str, NV: str, NE: str) -> str:
    """Lower bound on the bytes one level step must move (meta.min_bytes, the roofline check).

    Only what every run must touch is counted, data-dependent traffic at HALF its expected
    amount under this generator's inputs (levels: choice(-1, -1, -1, 0, 1, 2), so half the
    vertices are unvisited and 1/6 are at level cur = 1; bitmap: bernoulli(0.15)):
    * pull: every vertex's level is read (the unvisited test); an unvisited vertex scans its
      edges only until the first frontier neighbour (early exit), so just ONE edge per unvisited
      vertex that has edges is sure: min(NV, NE)/4 edges of 4 bytes. The frontier lookups are random reads the L2 may
      serve and are not counted. (The old count, every edge, was 5x what a run at degree 64
      reads: pull_levels_next_d64 ran at 0.52x its "roofline".)
    * push: the frontier description is read whole (levels 4*NV, bitmap NV bytes, queue 4*nf),
      and every edge of a frontier vertex: levels 1/6 of the edges (counted NE/12), bitmap 0.15
      (counted 0.075*NE), queue the edges of its distinct vertices, at least min(nf, NV)/2 of
      them (see _kernelgen.uniq) with NE/NV edges each on average. Row offsets, the destination
      levels and the level writes are not counted.
    * outputs: the next-frontier bitmap is written whole (NV bytes), the count is 4 bytes.
    """
    if direction == "pull":
        mb = f"4*{NV}+4*(min({NV}, {NE})//4)"  # no more edge-holding vertices than edges
    else:
        front_b = {"levels": f"4*{NV}", "bitmap": f"{NV}", "queue": "4*nf"}[front]
        edges = {"levels": f"{NE}//12", "bitmap": f"3*{NE}//40",
                 "queue": f"(min(nf, {NV})//2)*{NE}//max({NV}, 1)"}[front]
        mb = f"{front_b}+4*({edges})"
    return mb + {"level": "", "next": f"+{NV}", "count": "+4"}[outk]


def generate(rng: random.Random) -> list[dict]:
    combos = [c for c in itertools.product(("levels", "queue", "bitmap"), ("level", "next", "count"),
                                           (False, True), ("push", "pull"))
              if not (c[0] == "queue" and c[3] == "pull")]
    combos = [c + (IT, st) for c in combos for IT in ("int", "long long") for st in ("for", "hoist")]
    combos = rng.sample(combos, 84)
    return [_task(*c, (4, 16, 64)[i % 3]) for i, c in enumerate(combos)]
