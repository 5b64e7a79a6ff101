"""Integer bit manipulation maps: popcount, bit reversal, integer hashes (xorshift, murmur
fmix, wang, pcg, splitmix), gray code and its inverse, byte swap, leading/trailing zero counts,
parity, rotation, morton bit spreading, next power of two, lowest set bit; 32- and 64-bit.

Guarantees: 70 tasks. Count operations (result <= 64) come in two output widths (int and
unsigned char); value operations come as out-of-place, in-place, and 4 chained rounds
(key-stretching style). The naive variant is the literal C translation (bit loops); the
optimised variants may use the equivalent CUDA intrinsics (__popc, __brev, __clz, __ffs,
__byte_perm, __funnelshift_l). Results are exact integers (default zero tolerance).
"""
from __future__ import annotations

import random

from cudaperf.families._kernelgen import P, ewise_reference, ewise_variants, record, tests_1d

FAMILY = "bitops"
CATEGORY = "misc"

U32, U64 = "unsigned int", "unsigned long long"

# name: (type, is_count, C code computing r from v (v may be clobbered), intrinsic code or None,
# extra scalar (name, init) or None)
OPS = {
    "popcount_kernighan": (U32, True, "r = 0;\nwhile (v) {\n    v &= v - 1u;\n    r++;\n}", "r = __popc(v);", None),
    "popcount_swar": (U32, True, "unsigned int w = v - ((v >> 1) & 0x55555555u);\n"
                      "w = (w & 0x33333333u) + ((w >> 2) & 0x33333333u);\n"
                      "r = (int)((((w + (w >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24);", "r = __popc(v);", None),
    "clz": (U32, True, "r = 32;\nwhile (v) {\n    v >>= 1;\n    r--;\n}", "r = __clz((int)v);", None),
    "ctz": (U32, True, "if (v == 0u) r = 32;\nelse {\n    r = 0;\n    while ((v & 1u) == 0u) {\n        v >>= 1;\n        r++;\n    }\n}",
            "r = v ? __ffs((int)v) - 1 : 32;", None),
    "parity": (U32, True, "r = 0;\nwhile (v) {\n    r ^= 1;\n    v &= v - 1u;\n}", "r = __popc(v) & 1;", None),
    "popcount64": (U64, True, "r = 0;\nwhile (v) {\n    v &= v - 1ull;\n    r++;\n}", "r = __popcll(v);", None),
    "clz64": (U64, True, "r = 64;\nwhile (v) {\n    v >>= 1;\n    r--;\n}", "r = __clzll((long long)v);", None),
    "parity64": (U64, True, "r = 0;\nwhile (v) {\n    r ^= 1;\n    v &= v - 1ull;\n}", "r = __popcll(v) & 1;", None),
    "bitrev_loop": (U32, False, "r = 0u;\nfor (int b = 0; b < 32; b++) {\n    r = (r << 1) | (v & 1u);\n    v >>= 1;\n}", "r = __brev(v);", None),
    "bitrev_swap": (U32, False, "r = ((v >> 1) & 0x55555555u) | ((v & 0x55555555u) << 1);\n"
                    "r = ((r >> 2) & 0x33333333u) | ((r & 0x33333333u) << 2);\n"
                    "r = ((r >> 4) & 0x0F0F0F0Fu) | ((r & 0x0F0F0F0Fu) << 4);\n"
                    "r = ((r >> 8) & 0x00FF00FFu) | ((r & 0x00FF00FFu) << 8);\n"
                    "r = (r >> 16) | (r << 16);", "r = __brev(v);", None),
    "xorshift32": (U32, False, "r = v;\nr ^= r << 13;\nr ^= r >> 17;\nr ^= r << 5;", None, None),
    "fmix32": (U32, False, "r = v;\nr ^= r >> 16;\nr *= 0x85ebca6bu;\nr ^= r >> 13;\nr *= 0xc2b2ae35u;\nr ^= r >> 16;", None, None),
    "wang_hash": (U32, False, "r = (v ^ 61u) ^ (v >> 16);\nr *= 9u;\nr ^= r >> 4;\nr *= 0x27d4eb2du;\nr ^= r >> 15;", None, None),
    "pcg_hash": (U32, False, "unsigned int st = v * 747796405u + 2891336453u;\n"
                 "unsigned int w = ((st >> ((st >> 28u) + 4u)) ^ st) * 277803737u;\nr = (w >> 22u) ^ w;", None, None),
    "gray": (U32, False, "r = v ^ (v >> 1);", None, None),
    "gray_inverse": (U32, False, "r = v;\nr ^= r >> 1;\nr ^= r >> 2;\nr ^= r >> 4;\nr ^= r >> 8;\nr ^= r >> 16;", None, None),
    "bswap32": (U32, False, "r = ((v >> 24) & 0xffu) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);",
                "r = __byte_perm(v, 0u, 0x0123);", None),
    "rotl32": (U32, False, "r = (v << s) | (v >> (32 - s));", "r = __funnelshift_l(v, v, (unsigned int)s);", ("s", "randint(1, 32)")),
    "morton_spread": (U32, False, "r = v & 0x0000ffffu;\nr = (r | (r << 8)) & 0x00ff00ffu;\nr = (r | (r << 4)) & 0x0f0f0f0fu;\n"
                      "r = (r | (r << 2)) & 0x33333333u;\nr = (r | (r << 1)) & 0x55555555u;", None, None),
    "next_pow2": (U32, False, "r = v - 1u;\nr |= r >> 1;\nr |= r >> 2;\nr |= r >> 4;\nr |= r >> 8;\nr |= r >> 16;\nr = r + 1u;", None, None),
    "lowbit": (U32, False, "r = v & (0u - v);", None, None),
    "bitrev64": (U64, False, "r = 0ull;\nfor (int b = 0; b < 64; b++) {\n    r = (r << 1) | (v & 1ull);\n    v >>= 1;\n}", "r = __brevll(v);", None),
    "xorshift64": (U64, False, "r = v;\nr ^= r << 13;\nr ^= r >> 7;\nr ^= r << 17;", None, None),
    "splitmix64": (U64, False, "r = v + 0x9e3779b97f4a7c15ull;\nr = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ull;\n"
                   "r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;\nr = r ^ (r >> 31);", None, None),
    "fmix64": (U64, False, "r = v;\nr ^= r >> 33;\nr *= 0xff51afd7ed558ccdull;\nr ^= r >> 33;\nr *= 0xc4ceb9fe1a85ec53ull;\nr ^= r >> 33;", None, None),
    "gray64": (U64, False, "r = v ^ (v >> 1);", None, None),
}

NAMES = [("x", "y"), ("keys", "hashed"), ("in", "out"), ("words", "res"), ("src", "dst")]


def _body(T, code, count, form, xn, yn):
    rt = "int" if count else T
    if form == "rounds":
        return (f"{T} v = @{xn};\n{rt} r;\nfor (int rep = 0; rep < 4; rep++) {{\n"
                + "\n".join("    " + ln for ln in code.split("\n")) + "\n    v = r;\n}\n" + f"@{yn} = v;")
    tgt = xn if form == "inplace" else yn
    return f"{T} v = @{xn};\n{rt} r;\n{code}\n@{tgt} = r;"


def generate(rng: random.Random) -> list[dict]:
    recs = []
    for op, (T, count, code, fast, scal) in OPS.items():
        forms = ["int_out", "u8_out"] if count else ["out", "inplace", "rounds"]
        for form in forms:
            xn, yn = rng.choice(NAMES)
            entry = rng.choice(["{op}", "{op}_u32" if T == U32 else "{op}_u64", "bits_{op}", "compute_{op}"]).format(op=op)
            entry += {"int_out": "", "u8_out": "_u8", "out": "", "inplace": "_inplace", "rounds": "_x4"}[form]
            sig = [P("n", "int", "size")]
            init = "randint(0, 2147483647)"
            if form == "inplace":
                sig.append(P(xn, f"{T}*", "inout", "n", init))
                arrays = {xn: 1}
            else:
                ot = "int" if form == "int_out" else "unsigned char" if form == "u8_out" else T
                sig += [P(xn, f"const {T}*", "in", "n", init), P(yn, f"{ot}*", "out", "n")]
                arrays = {xn: 1, yn: 1}
            if scal:
                sig.append(P(scal[0], "int", "scalar", init=scal[1]))
            body = _body(T, code, count, form, xn, yn)
            opt = _body(T, fast, count, form, xn, yn) if fast else None
            ref = ewise_reference(entry, sig, "n", arrays, body, i=rng.choice(["i", "k", "idx"]))
            perf = (1 << 26) if T == U32 else (1 << 25)
            if form == "rounds" and "for (int b" in code:
                perf //= 4  # 4 x 32/64-step bit loops: keep the serial reference within seconds
            recs.append(record(FAMILY, f"{op}_{form}", entry, sig, ref,
                               ewise_variants(entry, sig, "n", arrays, body, opt_body=opt),
                               tests_1d(perf), {"op": op, "bits": 32 if T == U32 else 64, "form": form}))
    return recs
