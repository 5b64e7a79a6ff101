"""Gathers: out[i] = src[idx[i]] and its relatives (permutation gather, scaled, accumulating,
masked, two-table, 2-D coordinate, byte lookup table, linear interpolation), and row gathers
(embedding lookup, scaled and positional embeddings, embedding bags with sum/mean, row
permutation, per-row take-along-axis, column selection).

Guarantees: 77 tasks over float/double/int/unsigned char data and int or long long indices.
Indices are drawn with randint(0, bound) / perm(n), so every gather is in bounds for every
test; `meta.min_bytes` counts only what must move (the indexed rows, not whole tables), as a
LOWER bound (see `_kernelgen.uniq`): a table element or row read several times is counted once.
1-D gathers get naive / grid_stride / loop_unrolled (latency-bound: more loads in flight);
row gathers get naive / warp_per_row / block_per_row (index read once per row, coalesced row
copies).
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import (P, ewise_reference, ewise_variants, record, rows_reference,
                                          rows_variants, unrolled_variant)
from cudaperf.families._kernelgen import uniq as _uniq

FAMILY = "gather"
CATEGORY = "sparse"

DATA = {"float": "uniform(-1, 1)", "double": "uniform(-1, 1)", "int": "randint(-1000, 1000)",
        "unsigned char": "randint(0, 256)"}
TC = {"float": "f32", "double": "f64", "int": "i32", "unsigned char": "u8"}


def _one_d(form, T, IT):
    """-> (sig, arrays, body, tests-sizes(edge, odd, perf), min_bytes)."""
    n = P("n", "int", "size")
    m = P("m", "int", "size")
    out = P("out", f"{T}*", "inout" if form == "take_acc" else "out", "n", DATA[T] if form == "take_acc" else None)
    src = P("src", f"const {T}*", "in", "m", DATA[T])
    idx = P("idx", f"const {IT}*", "in", "n", "randint(0, m)")
    big = {"n": 1 << 25, "m": 1 << 25}
    sz = ({"n": 1, "m": 1}, {"n": 1003, "m": 517}, big)
    isz = 4 if IT == "int" else 8
    es = {"float": 4, "double": 8, "int": 4, "unsigned char": 1}[T]
    # idx read + out written once per i, plus the distinct src elements (see _kernelgen.uniq)
    mb = f"n*({isz}+{es})+{_uniq('n', 'm')}*{es}"
    if form == "take":
        return [n, m, src, idx, out], "@out = src[@idx];", sz, mb
    if form == "take_perm":
        return ([n, P("src", f"const {T}*", "in", "n", DATA[T]), P("perm", f"const {IT}*", "in", "n", "perm(n)"),
                 out], "@out = src[@perm];", ({"n": 1}, {"n": 1003}, {"n": 1 << 25}), None)
    if form == "take_scaled":
        return ([n, m, src, idx, P("w", f"const {T}*", "in", "n", DATA[T]), out], "@out = @w * src[@idx];",
                sz, f"n*({isz}+{2 * es})+{_uniq('n', 'm')}*{es}")
    if form == "take_acc":  # out is read and written (accumulated into)
        return [n, m, src, idx, out], "@out += src[@idx];", sz, f"n*({isz}+{2 * es})+{_uniq('n', 'm')}*{es}"
    if form == "take_masked":
        return ([n, m, src, idx, P("mask", "const unsigned char*", "in", "n", "bernoulli(0.5)"), out],
                # mask read and out written everywhere; idx and src only where the mask is set
                # (bernoulli(0.5): counted for a quarter of the elements, half the expected share)
                f"@out = @mask ? src[@idx] : ({T})0;", sz,
                f"n*(1+{es})+(n//4)*{isz}+{_uniq('n//4', 'm')}*{es}")
    if form == "take_add2":
        return ([n, m, P("a", f"const {T}*", "in", "m", DATA[T]), P("b", f"const {T}*", "in", "m", DATA[T]),
                 P("ia", f"const {IT}*", "in", "n", "randint(0, m)"), P("ib", f"const {IT}*", "in", "n", "randint(0, m)"),
                 out], "@out = a[@ia] + b[@ib];", sz, f"n*({2 * isz}+{es})+2*{_uniq('n', 'm')}*{es}")
    if form == "take_2d":
        return ([n, P("rows", "int", "size"), P("cols", "int", "size"),
                 P("a", f"const {T}*", "in", "rows*cols", DATA[T]),
                 P("ri", f"const {IT}*", "in", "n", "randint(0, rows)"), P("ci", f"const {IT}*", "in", "n", "randint(0, cols)"),
                 out], "@out = a[(size_t)@ri * cols + @ci];",
                ({"n": 1, "rows": 1, "cols": 1}, {"n": 1003, "rows": 37, "cols": 101},
                 {"n": 1 << 25, "rows": 4096, "cols": 8192}), f"n*({2 * isz}+{es})+{_uniq('n', 'rows*cols')}*{es}")
    if form == "lut":
        return ([n, P("in", "const unsigned char*", "in", "n", "randint(0, 256)"),
                 P("lut", f"const {T}*", "in", "256", DATA[T]), out], "@out = lut[@in];",
                ({"n": 1}, {"n": 1003}, {"n": 1 << 26}), None)
    if form == "interp":
        return ([n, m, src, P("idx", f"const {IT}*", "in", "n", "randint(0, m - 1)"),
                 P("frac", f"const {T}*", "in", "n", "uniform(0, 1)"), out],
                "@out = src[@idx] + @frac * (src[@idx + 1] - src[@idx]);",
                # src[idx] and src[idx + 1]: at least the distinct idx values' elements
                ({"n": 1, "m": 2}, {"n": 1003, "m": 517}, big), f"n*({isz}+{2 * es})+{_uniq('n', 'm')}*{es}")
    raise ValueError(form)


def _rows(form, T, IT, d):
    """-> (sig, R, D, setup, body, sizes(edge, odd, perf), min_bytes)."""
    es = {"float": 4, "double": 8, "int": 4}[T]
    isz = 4 if IT == "int" else 8
    if form.startswith("embed"):
        sig = [P("n", "int", "size"), P("d", "int", "size"), P("vocab", "int", "size"),
               P("ids", f"const {IT}*", "in", "n", "randint(0, vocab)"),
               P("table", f"const {T}*", "in", "vocab*d", DATA[T])]
        setup = "size_t base = (size_t)ids[@r] * d;"
        val = "table[base + @j]"
        if form == "embed_scaled":
            sig.append(P("scale", T, "scalar", init="uniform(0.5, 2)"))
            val = f"scale * {val}"
        if form == "embed_pos":
            sig.insert(3, P("seq", "int", "size"))
            sig.append(P("pos", f"const {T}*", "in", "seq*d", DATA[T]))
            val = f"{val} + pos[(size_t)(@r % seq) * d + @j]"
        sig.append(P("out", f"{T}*", "out", "n*d"))
        n = (1 << 25) // d
        s = ({"n": 1, "d": 1, "vocab": 1}, {"n": 37, "d": 33, "vocab": 1001}, {"n": n, "d": d, "vocab": 50000})
        if form == "embed_pos":
            s = tuple({**x, "seq": q} for x, q in zip(s, (1, 5, 512)))
        # ids read + out rows written once, the distinct table rows (see _kernelgen.uniq) and, for
        # embed_pos, the positional rows 0 .. min(n, seq) - 1 (row r uses r % seq)
        mb = f"n*({isz}+{es}*d)+{_uniq('n', 'vocab')}*d*{es}"
        if form == "embed_pos":
            mb += f"+min(n, seq)*d*{es}"
        return sig, "n", "d", setup, f"out[(size_t)@r * d + @j] = {val};", s, mb
    if form in ("bag_sum", "bag_mean"):
        sig = [P("bags", "int", "size"), P("K", "int", "size"), P("d", "int", "size"), P("vocab", "int", "size"),
               P("ids", f"const {IT}*", "in", "bags*K", "randint(0, vocab)"),
               P("table", f"const {T}*", "in", "vocab*d", DATA[T]), P("out", f"{T}*", "out", "bags*d")]
        fin = "acc / K" if form == "bag_mean" else "acc"
        body = (f"{T} acc = 0;\nfor (int k = 0; k < K; k++)\n    acc += table[(size_t)ids[@r * K + k] * d + @j];\n"
                f"out[(size_t)@r * d + @j] = {fin};")
        s = ({"bags": 1, "K": 1, "d": 1, "vocab": 1}, {"bags": 37, "K": 3, "d": 33, "vocab": 1001},
             {"bags": (1 << 24) // d, "K": 8, "d": d, "vocab": 50000})
        # ids read + out rows written once, and each distinct table row once (see _kernelgen.uniq): at the
        # perf sizes bags*K >> vocab, so the whole 50000-row table is touched, but its rows are
        # read K*bags/vocab times over (from the L2), which the old count charged to HBM
        return sig, "bags", "d", "", body, s, f"bags*K*{isz}+bags*d*{es}+{_uniq('bags*K', 'vocab')}*d*{es}"
    if form == "row_perm":
        sig = [P("rows", "int", "size"), P("d", "int", "size"), P("perm", f"const {IT}*", "in", "rows", "perm(rows)"),
               P("in", f"const {T}*", "in", "rows*d", DATA[T]), P("out", f"{T}*", "out", "rows*d")]
        s = ({"rows": 1, "d": 1}, {"rows": 37, "d": 1001}, {"rows": (1 << 25) // d, "d": d})
        return sig, "rows", "d", "size_t src_row = (size_t)perm[@r] * d;", \
            "out[(size_t)@r * d + @j] = in[src_row + @j];", s, None
    if form == "take_along_rows":
        sig = [P("rows", "int", "size"), P("cols", "int", "size"), P("k", "int", "size"),
               P("a", f"const {T}*", "in", "rows*cols", DATA[T]), P("idx", f"const {IT}*", "in", "rows*k", "randint(0, cols)"),
               P("out", f"{T}*", "out", "rows*k")]
        s = ({"rows": 1, "cols": 1, "k": 1}, {"rows": 37, "cols": 1001, "k": 7}, {"rows": 1 << 16, "cols": 1024, "k": 256})
        return sig, "rows", "k", "", "out[(size_t)@r * k + @j] = a[(size_t)@r * cols + idx[(size_t)@r * k + @j]];", \
            s, f"rows*k*({isz}+{es})+rows*{_uniq('k', 'cols')}*{es}"  # distinct picks per row
    if form == "col_select":
        sig = [P("rows", "int", "size"), P("cols", "int", "size"), P("k", "int", "size"),
               P("a", f"const {T}*", "in", "rows*cols", DATA[T]), P("cidx", f"const {IT}*", "in", "k", "randint(0, cols)"),
               P("out", f"{T}*", "out", "rows*k")]
        s = ({"rows": 1, "cols": 1, "k": 1}, {"rows": 37, "cols": 1001, "k": 300}, {"rows": 1 << 16, "cols": 1024, "k": 512})
        return sig, "rows", "k", "", "out[(size_t)@r * k + @j] = a[(size_t)@r * cols + cidx[@j]];", s, \
            f"rows*k*{es}+k*{isz}+rows*{_uniq('k', 'cols')}*{es}"  # distinct columns, every row
    raise ValueError(form)


def generate(rng: random.Random) -> list[dict]:
    recs = []
    one_d = [(f, T, "int") for f in ("take", "take_perm", "take_scaled", "take_acc", "take_masked", "take_add2", "take_2d")
             for T in ("float", "double", "int")]
    one_d += [(f, T, "long long") for f in ("take", "take_perm", "take_scaled", "take_acc") for T in ("float", "double", "int")]
    one_d += [("lut", T, "int") for T in ("float", "double", "int", "unsigned char")]
    one_d += [("interp", T, "int") for T in ("float", "double")]
    for form, T, IT in one_d:
        sig, body, sz, mb = _one_d(form, T, IT)
        arrays = {p["name"]: 1 for p in sig if p.get("shape") == "n"}
        ix = "i64" if IT == "long long" else ""
        entry = rng.choice(["{f}_{t}", "gather_{f}_{t}", "{t}_{f}", "index_{f}_{t}"]).format(f=form, t=TC[T]) + (f"_{ix}" if ix else "")
        ref = ewise_reference(entry, sig, "n", arrays, body, i=rng.choice(["i", "k", "e"]))
        var = ewise_variants(entry, sig, "n", arrays, body, vectorize=False) + [unrolled_variant(entry, sig, "n", arrays, body)]
        tests = [{"name": "one", "sizes": sz[0]}, {"name": "odd", "sizes": sz[1]},
                 {"name": "perf", "sizes": sz[2], "perf": True}]
        recs.append(record(FAMILY, f"{form}_{TC[T]}{'_' + ix if ix else ''}", entry, sig, ref, var, tests,
                           {"form": form, "dtype": T, "index": IT}, min_bytes=mb))
    row_forms = [(f, T, IT) for f in ("embed", "embed_scaled", "embed_pos", "bag_sum", "bag_mean")
                 for T in ("float", "double") for IT in ("int", "long long")]
    row_forms += [(f, T, IT) for f in ("row_perm", "take_along_rows", "col_select") for T in ("float", "double", "int")
                  for IT in ("int", "long long")]
    dims = [64, 128, 256, 300, 512, 768, 1024]
    for k, (form, T, IT) in enumerate(row_forms):
        d = dims[k % len(dims)]
        sig, R, D, setup, body, sz, mb = _rows(form, T, IT, d)
        ix = "i64" if IT == "long long" else ""
        entry = rng.choice(["{f}_{t}", "{f}_lookup_{t}", "gather_{f}_{t}"]).format(f=form, t=TC[T]) + (f"_{ix}" if ix else "")
        ref = rows_reference(entry, sig, R, D, setup, body, rv=rng.choice(["r", "t", "row"]), cv=rng.choice(["j", "c", "col"]))
        tests = [{"name": "one", "sizes": sz[0]}, {"name": "odd", "sizes": sz[1]},
                 {"name": "perf", "sizes": sz[2], "perf": True}]
        recs.append(record(FAMILY, f"{form}_{TC[T]}{'_' + ix if ix else ''}", entry, sig, ref,
                           rows_variants(entry, sig, R, D, setup, body), tests,
                           {"form": form, "dtype": T, "index": IT, "d": d}, min_bytes=mb))
    return recs
