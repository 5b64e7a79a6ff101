"""K-means assignment step: the nearest (or best-scoring) centroid of every point.

Guarantees: every task is a distinct serial C program writing, for each point, the index of the
nearest centroid under squared-euclidean, euclidean, manhattan or chebyshev distance (or the
largest dot product), optionally with that distance/score, for points stored row-wise or
coordinate-major, with a runtime or literal (2) dimension, in float, double or int. Inputs are
integer-valued (randint) so distances are exact in float and double alike: the argmin, and its
tie-break (first centroid wins, strict comparison), is identical in the reference and on the
GPU. CUDA variants: naive one thread per point, centroids staged in shared-memory chunks, and
point coordinates held in registers with read-only centroid loads.
"""
from __future__ import annotations

import random

from cudaperf.families._d2kit import P, T, TYPES, V, blocks, cargs, cparams, record

FAMILY = "kmeans_assign"
CATEGORY = "distance"

METRICS = ("sqeuclidean", "euclidean", "manhattan", "chebyshev", "maxdot")
ENTRY = {"sqeuclidean": "assign_clusters", "euclidean": "nearest_centroid", "manhattan": "assign_l1",
         "chebyshev": "assign_linf", "maxdot": "assign_max_similarity"}


def _metric(metric, ty, fns):
    """(init, update(u, v), post(acc) -> value, better(v, best))."""
    tn = ty.name
    absf = fns["fabs"] if ty.is_float else "abs"
    upd = {"sqeuclidean": lambda u, v: f"{{ {tn} df = {u} - {v}; acc += df * df; }}",
           "euclidean": lambda u, v: f"{{ {tn} df = {u} - {v}; acc += df * df; }}",
           "manhattan": lambda u, v: f"acc += {absf}({u} - {v});",
           "chebyshev": lambda u, v: f"{{ {tn} df = {absf}({u} - {v}); if (df > acc) acc = df; }}",
           "maxdot": lambda u, v: f"acc += {u} * {v};"}[metric]
    post = (lambda a: f"{fns['sqrt']}({a})") if metric == "euclidean" else (lambda a: a)
    better = (lambda v, b: f"{v} > {b}") if metric == "maxdot" else (lambda v, b: f"{v} < {b}")
    return upd, post, better


REF_FNS = {"sqrt": "sqrt", "fabs": "fabs"}


def _acc(layout, fixed):
    d = "2" if fixed else "d"
    if layout == "aos":
        return (lambda i, j: f"pts[(size_t)({i}) * {d} + {j}]"), d
    return (lambda i, j: f"pts[(size_t)({j}) * n + {i}]"), d


def _reference(entry, sig, metric, layout, fixed, with_dist, ty):
    tn = ty.name
    d = "2" if fixed else "d"
    Pt = (lambda i, j: f"pts[{i} * {d} + {j}]") if layout == "aos" else (lambda i, j: f"pts[{j} * n + {i}]")
    upd, post, better = _metric(metric, ty, REF_FNS)
    L = [f"void {entry}({cparams(sig)}) {{", "    for (int i = 0; i < n; i++) {",
         f"        int best = 0;", f"        {tn} best_val = {ty.zero};",
         "        for (int c = 0; c < k; c++) {", f"            {tn} acc = {ty.zero};",
         f"            for (int j = 0; j < {d}; j++) {upd(Pt('i', 'j'), f'cent[c * {d} + j]')}"]
    val = post("acc")
    if val != "acc":
        L.append(f"            {tn} v = {val};")
        val = "v"
    L += [f"            if (c == 0 || {better(val, 'best_val')}) {{ best_val = {val}; best = c; }}",
          "        }", "        assign[i] = best;"]
    if with_dist:
        L.append("        score[i] = best_val;")
    L += ["    }", "}"]
    return "\n".join(L)


def _variants(entry, sig, metric, layout, fixed, with_dist, ty):
    tn = ty.name
    ps, args = cparams(sig), cargs(sig)
    fns = {k: ty.fn(k) for k in REF_FNS}
    Pt, d = _acc(layout, fixed)
    upd, post, better = _metric(metric, ty, fns)
    store = "assign[i] = best;" + (" score[i] = best_val;" if with_dist else "")

    def scan(cval, pval, loop_head):
        """Loop over centroids given accessors for a centroid coordinate and a point coordinate."""
        v = post("acc")
        return (f"for (int c = 0; c < k; c++) {{ {tn} acc = {ty.zero}; "
                f"{loop_head} {upd(pval('j'), cval('c', 'j'))} "
                f"{tn} v = {v}; if (c == 0 || {better('v', 'best_val')}) {{ best_val = v; best = c; }} }}")
    naive = f"""
__global__ void {entry}_k({ps}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int best = 0; {tn} best_val = {ty.zero};
    {scan(lambda c, j: f"cent[(size_t)({c}) * {d} + {j}]", lambda j: Pt('i', j), f"for (int j = 0; j < {d}; j++)")}
    {store}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0 || k <= 0) return;
    {entry}_k<<<{blocks('n')}, 256>>>({args});
}}
"""
    # centroid chunks of CH scalars in shared memory; every thread joins every barrier
    CH = 2048
    tiled = f"""
__global__ void {entry}_tile({ps}) {{
    __shared__ {tn} cs[{CH}];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool live = i < n;
    int ii = live ? i : 0;
    int per = {CH} / {d} > 0 ? {CH} / {d} : 1;
    int best = 0; {tn} best_val = {ty.zero};
    for (int c0 = 0; c0 < k; c0 += per) {{
        int cnt = k - c0 < per ? k - c0 : per;
        __syncthreads();
        for (int s = threadIdx.x; s < cnt * {d}; s += blockDim.x) cs[s] = cent[(size_t)c0 * {d} + s];
        __syncthreads();
        for (int cc = 0; cc < cnt; cc++) {{
            int c = c0 + cc;
            {tn} acc = {ty.zero};
            for (int j = 0; j < {d}; j++) {upd(Pt('ii', 'j'), 'cs[cc * ' + d + ' + j]')}
            {tn} v = {post('acc')};
            if (c == 0 || {better('v', 'best_val')}) {{ best_val = v; best = c; }}
        }}
    }}
    if (live) {{ {store} }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0 || k <= 0) return;
    if ({d} > {CH}) {{ {entry}_fallback<<<{blocks('n')}, 256>>>({args}); return; }}
    {entry}_tile<<<{blocks('n')}, 256>>>({args});
}}
"""
    tiled = naive.split("extern")[0].replace(f"{entry}_k(", f"{entry}_fallback(") + tiled
    MAXD = 2 if fixed else 16
    reg = f"""
__global__ void __launch_bounds__(128) {entry}_reg({ps.replace(f'const {tn} *cent', f'const {tn} *__restrict__ cent')}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    {tn} p[{MAXD}];
    #pragma unroll
    for (int j = 0; j < {MAXD}; j++) p[j] = j < {d} ? {Pt('i', 'j')} : {ty.zero};
    int best = 0; {tn} best_val = {ty.zero};
    for (int c = 0; c < k; c++) {{
        const {tn} *cr = cent + (size_t)c * {d};
        {tn} acc = {ty.zero};
        #pragma unroll
        for (int j = 0; j < {MAXD}; j++) if (j < {d}) {upd('p[j]', '__ldg(&cr[j])')}
        {tn} v = {post('acc')};
        if (c == 0 || {better('v', 'best_val')}) {{ best_val = v; best = c; }}
    }}
    {store}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0 || k <= 0) return;
    if ({d} > {MAXD}) {{ {entry}_fallback<<<{blocks('n')}, 256>>>({args}); return; }}
    {entry}_reg<<<{blocks('n', 128)}, 128>>>({args});
}}
"""
    reg = naive.split("extern")[0].replace(f"{entry}_k(", f"{entry}_fallback(") + reg
    return [V("naive", "one thread per point, centroids read from global memory", naive),
            V("tiled_smem", f"centroids staged in {CH}-scalar shared-memory chunks shared by the "
              "block's 256 points", tiled),
            V("register_blocking", f"point coordinates in registers (up to {MAXD}), read-only "
              "cache broadcast loads of centroids, 128-thread blocks; generic path beyond", reg)]


def generate(rng: random.Random) -> list[dict]:
    combos = [(m, lay, fx, wd, tn) for m in METRICS for lay in ("aos", "soa") for fx in (False, True)
              for wd in (False, True) for tn in ("float", "double", "int")
              if not (tn == "int" and m == "euclidean")]
    rng.shuffle(combos)
    combos = sorted(combos[:84], key=lambda c: (METRICS.index(c[0]), c[1], c[2], c[3], c[4]))
    out = []
    for metric, layout, fixed, with_dist, tn in combos:
        ty = TYPES[tn]
        d = "2" if fixed else "d"
        entry = f"{ENTRY[metric]}_{layout}{'_2d' if fixed else ''}{'_dist' if with_dist else ''}_{ty.tag}"
        sig = [P("n", "int", "size"), P("k", "int", "size")]
        if not fixed:
            sig.append(P("d", "int", "size"))
        sig += [P("pts", f"const {tn}*", "in", f"n*{d}", "randint(-50, 50)"),
                P("cent", f"const {tn}*", "in", f"k*{d}", "randint(-50, 50)"),
                P("assign", "int*", "out", "n")]
        if with_dist:
            sig.append(P("score", f"{tn}*", "out", "n"))
        ref = _reference(entry, sig, metric, layout, fixed, with_dist, ty)

        def sz(n, k, dd):
            s = {"n": n, "k": k}
            if not fixed:
                s["d"] = dd
            return s
        tests = [T("one", sz(1, 1, 1)), T("odd", sz(1003, 7, 3)), T("many", sz(4099, 300, 13)),
                 T("perf", sz(1 << 22 if fixed else 1 << 21, 32, 4), perf=True)]
        out.append(record(FAMILY, f"{metric}_{layout}_{'d2' if fixed else 'dn'}_{'dist' if with_dist else 'idx'}_{ty.tag}",
                          entry, sig, ref, _variants(entry, sig, metric, layout, fixed, with_dist, ty),
                          tests, {"metric": metric, "layout": layout, "fixed_dim": fixed,
                                  "with_dist": with_dist, "dtype": tn},
                          flops=f"3*n*k*{d}"))
    return out
