"""Scatters: permutation scatter out[perm[i]] = f(in[i]) (1-D and whole rows), inverse
permutation, integer scatter-add / scatter-max / scatter-min and counting into bins with
atomics (direct index, hashed key % m, 2-D coordinates), and float scatter-add (1-D and
embedding-gradient rows) with atomics.

Guarantees: 71 tasks. Permutation scatters write every output element exactly once (perm(n)).
Accumulating scatters are `inout` (they update existing values), so bins that receive nothing
keep their value. Integer atomics are order independent, so integer tasks are exact; float
scatter-adds are order dependent on a GPU and carry a 1e-4-level tolerance (values are
positive, so there is no cancellation). Integer variants: naive global atomics, grid-stride,
and shared-memory privatised bins when the bins fit in 48 KB (global fallback otherwise).
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import uniq as _uniq
from cudaperf.families._kernelgen import (HDR, P, SM_COUNT, args, decls, ewise_reference, ewise_variants,
                                          record, rows_reference, rows_variants, subst, unrolled_variant, indent)

FAMILY = "scatter"
CATEGORY = "sparse"

TC = {"float": "f32", "double": "f64", "int": "i32", "unsigned int": "u32", "long long": "i64", "unsigned char": "u8"}
DATA = {"float": "uniform(0, 1)", "double": "uniform(0, 1)", "int": "randint(-1000, 1000)",
        "unsigned int": "randint(0, 1000)", "long long": "randint(-1000000, 1000000)", "unsigned char": "randint(0, 256)"}
IDENT = {("max", "int"): "(-2147483647 - 1)", ("max", "unsigned int"): "0u", ("max", "long long"): "(-9223372036854775807LL - 1)",
         ("min", "int"): "2147483647", ("min", "unsigned int"): "0xffffffffu", ("min", "long long"): "9223372036854775807LL"}


def _upd(op, T):
    """CUDA helper `upd(p, v)`: atomically combine v into *p (works on global and shared)."""
    if op == "add" and T == "long long":
        a = "atomicAdd((unsigned long long *)p, (unsigned long long)v);"
    elif op == "add":
        a = "atomicAdd(p, v);"
    else:
        a = f"atomic{op.capitalize()}(p, v);"
    return f"__device__ __forceinline__ void upd({T} *p, {T} v) {{ {a} }}\n"


def _c_update(op, tgt, val):
    if op == "add":
        return f"{tgt} += {val};"
    cmp = ">" if op == "max" else "<"
    return f"if ({val} {cmp} {tgt}) {tgt} = {val};"


def _privatized(entry, sig, n, arrays, op, T, M, bin_, val):
    """Shared-memory bins (identity-initialised) per block, flushed with one atomic per bin."""
    ident = "0" if op == "add" else IDENT[(op, T)]
    acc = lambda nm, c: f"{nm}[i]"
    b = subst(bin_, arrays, acc)
    v = subst(val, arrays, acc)
    dr, dec, arg = decls(sig, True), decls(sig), args(sig)
    src = HDR + _upd(op, T) + f"""
__global__ void {entry}_priv({dr}) {{
    extern __shared__ __align__(8) unsigned char smem_raw[];
    {T} *local = ({T} *)smem_raw;
    for (int b = threadIdx.x; b < ({M}); b += blockDim.x) local[b] = {ident};
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < {n}; i += blockDim.x * gridDim.x)
        upd(&local[{b}], {v});
    __syncthreads();
    for (int b = threadIdx.x; b < ({M}); b += blockDim.x)
        if (local[b] != {ident}) upd(&out[b], local[b]);
}}
__global__ void {entry}_glob({dr}) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < {n}; i += blockDim.x * gridDim.x)
        upd(&out[{b}], {v});
}}
extern "C" void {entry}({dec}) {{
    if ({n} <= 0) return;
{SM_COUNT}    int blocks = ({n} + 255) / 256;
    if (blocks > sms_ * 4) blocks = sms_ * 4;
    size_t smem = sizeof({T}) * (size_t)({M});
    if (smem <= 48 * 1024) {entry}_priv<<<blocks, 256, smem>>>({arg});
    else {entry}_glob<<<blocks, 256>>>({arg});
}}
"""
    return {"name": "smem_privatized", "strategy": "per-block shared-memory bins, one global atomic per "
            "touched bin per block; global atomics when the bins exceed 48 KB", "source": src}


def _add_helper(variants, helper):
    for v in variants:
        v["source"] = v["source"].replace(HDR, HDR + helper, 1)
    return variants


def generate(rng: random.Random) -> list[dict]:
    recs = []
    # ---- permutation scatters (1-D)
    perm_cases = [(f, T, "int") for f in ("copy", "scaled", "bias") for T in ("float", "double", "int")]
    perm_cases += [("copy", T, "long long") for T in ("float", "double", "int", "unsigned char")]
    perm_cases += [(f, T, "long long") for f in ("scaled", "bias") for T in ("float", "double", "int")]
    perm_cases += [("inverse", "int", "int")]
    for form, T, IT in perm_cases:
        sig = [P("n", "int", "size")]
        if form == "inverse":
            sig += [P("perm", "const int*", "in", "n", "perm(n)"), P("inv", "int*", "out", "n")]
            body = "inv[@perm] = @i;"
            arrays = {"perm": 1}
        else:
            sig += [P("perm", f"const {IT}*", "in", "n", "perm(n)"), P("in", f"const {T}*", "in", "n", DATA[T])]
            if form != "copy":
                sig.append(P("alpha" if form == "scaled" else "bias", T, "scalar",
                             init="randint(-5, 5)" if T == "int" else "uniform(-2, 2)"))
            sig.append(P("out", f"{T}*", "out", "n"))
            val = {"copy": "@in", "scaled": "alpha * @in", "bias": "@in + bias"}[form]
            body = f"out[@perm] = {val};"
            arrays = {"perm": 1, "in": 1}
        ix = "_i64" if IT == "long long" else ""
        entry = rng.choice(["scatter_{f}_{t}", "permute_{f}_{t}", "{f}_scatter_{t}"]).format(f=form, t=TC[T]) + ix
        ref = ewise_reference(entry, sig, "n", arrays, body, i=rng.choice(["i", "k"]))
        var = ewise_variants(entry, sig, "n", arrays, body, vectorize=False) + [unrolled_variant(entry, sig, "n", arrays, body)]
        tests = [{"name": "one", "sizes": {"n": 1}}, {"name": "odd", "sizes": {"n": 1003}},
                 {"name": "perf", "sizes": {"n": 1 << 25}, "perf": True}]
        recs.append(record(FAMILY, f"perm_{form}_{TC[T]}{ix}", entry, sig, ref, var, tests,
                           {"form": f"perm_{form}", "dtype": T, "index": IT}))
    # ---- row permutation scatter
    dims = [64, 128, 300, 512, 1024, 96]
    for k, (T, IT) in enumerate([(T, IT) for T in ("float", "double", "int") for IT in ("int", "long long")]):
        d = dims[k]
        sig = [P("rows", "int", "size"), P("d", "int", "size"), P("perm", f"const {IT}*", "in", "rows", "perm(rows)"),
               P("in", f"const {T}*", "in", "rows*d", DATA[T]), P("out", f"{T}*", "out", "rows*d")]
        setup, body = "size_t dst = (size_t)perm[@r] * d;", "out[dst + @j] = in[(size_t)@r * d + @j];"
        ix = "_i64" if IT == "long long" else ""
        entry = f"scatter_rows_{TC[T]}{ix}"
        tests = [{"name": "one", "sizes": {"rows": 1, "d": 1}}, {"name": "odd", "sizes": {"rows": 37, "d": 1001}},
                 {"name": "perf", "sizes": {"rows": (1 << 25) // d, "d": d}, "perf": True}]
        recs.append(record(FAMILY, f"rows_perm_{TC[T]}{ix}", entry, sig,
                           rows_reference(entry, sig, "rows", "d", setup, body, rv=rng.choice(["r", "i"])),
                           rows_variants(entry, sig, "rows", "d", setup, body), tests,
                           {"form": "rows_perm", "dtype": T, "index": IT, "d": d}))
    # ---- integer atomic scatters
    int_cases = [(op, T, where) for op in ("add", "max", "min") for T in ("int", "unsigned int", "long long")
                 for where in ("direct", "hashed", "coord2d")]
    int_cases += [("count", T, where) for T in ("int", "unsigned int") for where in ("direct", "hashed", "coord2d")]
    bins_cycle = [64, 4096, 1 << 20]
    for k, (op, T, where) in enumerate(int_cases):
        uop = "add" if op == "count" else op
        mcls = bins_cycle[k % 3]
        sig = [P("n", "int", "size")]
        if where == "coord2d":
            sig += [P("rows", "int", "size"), P("cols", "int", "size"),
                    P("r", "const int*", "in", "n", "randint(0, rows)"), P("c", "const int*", "in", "n", "randint(0, cols)")]
            M, bin_ = "rows * cols", "(size_t)@r * cols + @c"
            side = {64: 8, 4096: 64, 1 << 20: 1024}[mcls]
            sz = ({"n": 1, "rows": 1, "cols": 1}, {"n": 1003, "rows": 7, "cols": 13}, {"n": 1 << 25, "rows": side, "cols": side})
            arrays = {"r": 1, "c": 1}
        else:
            sig.append(P("m", "int", "size"))
            if where == "direct":
                sig.append(P("idx", "const int*", "in", "n", "randint(0, m)"))
                bin_ = "@idx"
                arrays = {"idx": 1}
            else:
                sig.append(P("key", "const unsigned int*", "in", "n", "randint(0, 2147483647)"))
                bin_ = "@key % m"
                arrays = {"key": 1}
            M = "m"
            sz = ({"n": 1, "m": 1}, {"n": 1003, "m": 37}, {"n": 1 << 25, "m": mcls})
        if op == "count":
            val = f"({T})1"
        else:
            sig.append(P("val", f"const {T}*", "in", "n", DATA[T]))
            arrays["val"] = 1
            val = "@val"
        sig.append(P("out", f"{T}*", "inout", M.replace(" ", ""), DATA[T]))
        entry = rng.choice(["scatter_{op}_{t}", "{op}_into_bins_{t}", "bin_{op}_{t}"]).format(op=op, t=TC[T]) + (
            "" if where == "direct" else f"_{where}")
        c_body = _c_update(uop, f"out[{bin_}]", val)
        ref = ewise_reference(entry, sig, "n", arrays, c_body, i=rng.choice(["i", "k", "e"]))
        cu_body = f"upd(&out[{bin_}], {val});"
        var = _add_helper(ewise_variants(entry, sig, "n", arrays, cu_body, vectorize=False), _upd(uop, T))
        var.append(_privatized(entry, sig, "n", arrays, uop, T, M, bin_, val))
        tests = [{"name": "one", "sizes": sz[0]}, {"name": "odd", "sizes": sz[1]},
                 {"name": "perf", "sizes": sz[2], "perf": True}]
        # Roofline lower bound (meta.min_bytes): the index arrays and values are read once; of
        # the bins only those some index hits are touched (at least min(n, bins)/2, see
        # _kernelgen.uniq): add/count read and write each, max/min read each and write only the
        # bins a value beats (data-dependent, not counted).
        es = 8 if T == "long long" else 4
        ins = "n*8" if where == "coord2d" else "n*4"
        if op != "count":
            ins += f"+n*{es}"
        touched = _uniq("n", M.replace(" ", ""))
        mb = f"{ins}+{2 if uop == 'add' else 1}*{touched}*{es}"
        recs.append(record(FAMILY, f"{op}_{TC[T]}_{where}", entry, sig, ref, var, tests,
                           {"form": f"atomic_{op}", "dtype": T, "where": where, "bins": mcls}, min_bytes=mb))
    # ---- float atomic scatter-add (order dependent: tolerance)
    tol = {"rtol": 1e-4, "atol": 1e-5, "l2": 1e-5}
    for T in ("float", "double"):
        for IT in ("int", "long long", "scaled"):
            ix = {"int": "", "long long": "_i64", "scaled": "_scaled"}[IT]
            sig = [P("n", "int", "size"), P("m", "int", "size"),
                   P("idx", f"const {'long long' if IT == 'long long' else 'int'}*", "in", "n", "randint(0, m)"),
                   P("w", f"const {T}*", "in", "n", DATA[T]), P("out", f"{T}*", "inout", "m", DATA[T])]
            val = "@w"
            if IT == "scaled":
                sig.insert(2, P("alpha", T, "scalar", init="uniform(0.5, 2)"))
                val = "alpha * @w"
            arrays = {"idx": 1, "w": 1}
            entry = rng.choice(["scatter_add_{t}", "index_add_{t}", "accumulate_{t}"]).format(t=TC[T]) + ix
            ref = ewise_reference(entry, sig, "n", arrays, f"out[@idx] += {val};")
            body = f"atomicAdd(&out[@idx], {val});"
            var = ewise_variants(entry, sig, "n", arrays, body, vectorize=False) + [unrolled_variant(entry, sig, "n", arrays, body)]
            tests = [{"name": "one", "sizes": {"n": 1, "m": 1}}, {"name": "odd", "sizes": {"n": 1003, "m": 37}},
                     {"name": "perf", "sizes": {"n": 1 << 25, "m": 1 << 22}, "perf": True}]
            # lower bound: idx and w read once, each bin some index hits read and written once
            es = 8 if T == "double" else 4
            mb = f"n*({8 if IT == 'long long' else 4}+{es})+2*{_uniq('n', 'm')}*{es}"
            recs.append(record(FAMILY, f"add_{TC[T]}{ix}", entry, sig, ref, var, tests,
                               {"form": "atomic_add_float", "dtype": T, "index": IT},
                               tol=None if T == "double" else tol, min_bytes=mb))
    # ---- row scatter-add (embedding gradient): float/double/int/long long values
    for k, (T, IT) in enumerate([("float", "int"), ("float", "long long"), ("double", "int"), ("double", "long long"),
                                 ("int", "int"), ("long long", "int")]):
        d = [64, 128, 256, 512, 100, 300][k]
        ix = "_i64" if IT == "long long" else ""
        sig = [P("n", "int", "size"), P("d", "int", "size"), P("vocab", "int", "size"),
               P("ids", f"const {IT}*", "in", "n", "randint(0, vocab)"),
               P("grad_out", f"const {T}*", "in", "n*d", DATA[T]), P("grad_table", f"{T}*", "inout", "vocab*d", DATA[T])]
        setup = "size_t dst = (size_t)ids[@r] * d;"
        cbody = "grad_table[dst + @j] += grad_out[(size_t)@r * d + @j];"
        if T == "long long":
            ubody = "atomicAdd((unsigned long long *)&grad_table[dst + @j], (unsigned long long)grad_out[(size_t)@r * d + @j]);"
        else:
            ubody = "atomicAdd(&grad_table[dst + @j], grad_out[(size_t)@r * d + @j]);"
        entry = f"embedding_backward_{TC[T]}{ix}"
        es = 8 if T in ("double", "long long") else 4
        tests = [{"name": "one", "sizes": {"n": 1, "d": 1, "vocab": 1}}, {"name": "odd", "sizes": {"n": 37, "d": 33, "vocab": 11}},
                 {"name": "perf", "sizes": {"n": (1 << 24) // d, "d": d, "vocab": 50000}, "perf": True}]
        recs.append(record(FAMILY, f"rows_add_{TC[T]}{ix}", entry, sig,
                           rows_reference(entry, sig, "n", "d", setup, cbody, rv=rng.choice(["r", "t"])),
                           rows_variants(entry, sig, "n", "d", setup, ubody), tests,
                           {"form": "rows_atomic_add", "dtype": T, "index": IT, "d": d},
                           tol=tol if T == "float" else None,
                           # lower bound: ids and grad_out read once; only the table rows some id
                           # hits (at least min(n, vocab)/2, see _kernelgen.uniq) are read and
                           # written, the rest of the table is untouched
                           min_bytes=(f"n*{8 if IT == 'long long' else 4}+n*d*{es}"
                                      f"+2*{_uniq('n', 'vocab')}*d*{es}")))
    return recs
