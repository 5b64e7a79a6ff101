"""2-D image convolution: 3x3/5x5/7x7 filters, one or a few input and output channels.

Guarantees: every task is a distinct serial C program computing
`out[o][y][x] = (bias[o]) + sum_c sum_ky sum_kx in[c][y+ky-p][x+kx-p] * filt[o][c][ky][kx]` on CHW
planes, in float or double, with 'valid' (output (h-K+1) x (w-K+1)) or 'same' (zero padding)
geometry; channel counts and the filter size are literal constants of the program. CUDA
variants: naive one thread per output element, 16x16 shared-memory input tiles (per channel)
with the filter bank in shared memory, and 32x8 coalesced blocks in which a thread computes all
output channels of its pixel; all handle the smallest valid image and ragged tiles.
"""
from __future__ import annotations

import math
import random

from cudaperf.families._d2kit import FLOAT_TOL, P, T, TYPES, V, blocks, cargs, cparams, record

FAMILY = "conv2d"
CATEGORY = "conv"

CHANNELS = [(1, 1), (3, 1), (3, 4), (2, 8)]
ENTRY = ["conv2d", "conv_forward", "filter2d", "correlate2d", "conv_layer"]


def _geom(mode, K):
    if mode == "valid":
        return f"(height - {K - 1})", f"(width - {K - 1})", 0
    return "height", "width", K // 2


def _reference(entry, sig, mode, K, C, OC, bias, ty):
    ho, wo, p = _geom(mode, K)
    tn = ty.name
    L = [f"void {entry}({cparams(sig)}) {{",
         f"    const int out_h = {ho}, out_w = {wo};",
         f"    for (int o = 0; o < {OC}; o++)",
         "        for (int y = 0; y < out_h; y++)",
         "            for (int x = 0; x < out_w; x++) {",
         f"                {tn} acc = {'bias[o]' if bias else ty.zero};",
         f"                for (int c = 0; c < {C}; c++)",
         f"                    for (int ky = 0; ky < {K}; ky++) {{"]
    if mode == "same":
        L += [f"                        int iy = y + ky - {p};",
              "                        if (iy < 0 || iy >= height) continue;"]
    else:
        L += ["                        int iy = y + ky;"]
    L += [f"                        for (int kx = 0; kx < {K}; kx++) {{"]
    if mode == "same":
        L += [f"                            int ix = x + kx - {p};",
              "                            if (ix < 0 || ix >= width) continue;"]
    else:
        L += ["                            int ix = x + kx;"]
    L += ["                            acc += in[(c * height + iy) * width + ix]"
          f" * filt[((o * {C} + c) * {K} + ky) * {K} + kx];",
          "                        }", "                    }",
          "                out[(o * out_h + y) * out_w + x] = acc;", "            }", "}"]
    return "\n".join(L)


def _variants(entry, sig, mode, K, C, OC, bias, ty):
    t = ty.name
    ps, args = cparams(sig), cargs(sig)
    ho, wo, p = _geom(mode, K)
    init = "bias[o]" if bias else ty.zero
    guard = lambda v, n: f"({v} >= 0 && {v} < {n})" if mode == "same" else "true"
    naive = f"""
__global__ void {entry}_k({ps}) {{
    long long oh = {ho}, ow = {wo};
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= {OC} * oh * ow) return;
    int x = (int)(g % ow), y = (int)((g / ow) % oh), o = (int)(g / (ow * oh));
    {t} acc = {init};
    for (int c = 0; c < {C}; c++)
        for (int ky = 0; ky < {K}; ky++) {{
            int iy = y + ky - {p};
            if (!{guard('iy', 'height')}) continue;
            for (int kx = 0; kx < {K}; kx++) {{
                int ix = x + kx - {p};
                if (!{guard('ix', 'width')}) continue;
                acc += in[((size_t)c * height + iy) * width + ix] * filt[((o * {C} + c) * {K} + ky) * {K} + kx];
            }}
        }}
    out[((size_t)o * oh + y) * ow + x] = acc;
}}
extern "C" void {entry}({ps}) {{
    long long oh = {ho}, ow = {wo};
    if (oh <= 0 || ow <= 0) return;
    {entry}_k<<<{blocks(f'{OC} * oh * ow')}, 256>>>({args});
}}
"""
    TS = 16 + K - 1
    tiled = f"""
__global__ void {entry}_tile({ps}) {{
    __shared__ {t} tile[{TS}][{TS}];
    __shared__ {t} fs[{OC * C * K * K}];
    int oh = {ho}, ow = {wo};
    int tid = threadIdx.y * 16 + threadIdx.x;
    for (int s = tid; s < {OC * C * K * K}; s += 256) fs[s] = filt[s];
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    int bx = blockIdx.x * 16 - {p}, by = blockIdx.y * 16 - {p};
    {t} acc[{OC}];
    #pragma unroll
    for (int o = 0; o < {OC}; o++) acc[o] = {'bias[o]' if bias else ty.zero};
    for (int c = 0; c < {C}; c++) {{
        __syncthreads();  // previous channel's tile fully consumed
        for (int s = tid; s < {TS * TS}; s += 256) {{
            int r = s / {TS}, q = s % {TS};
            int iy = by + r, ix = bx + q;
            tile[r][q] = (iy >= 0 && iy < height && ix >= 0 && ix < width)
                ? in[((size_t)c * height + iy) * width + ix] : {ty.zero};
        }}
        __syncthreads();
        #pragma unroll
        for (int ky = 0; ky < {K}; ky++)
            #pragma unroll
            for (int kx = 0; kx < {K}; kx++) {{
                {t} v = tile[threadIdx.y + ky][threadIdx.x + kx];
                #pragma unroll
                for (int o = 0; o < {OC}; o++) acc[o] += v * fs[((o * {C} + c) * {K} + ky) * {K} + kx];
            }}
    }}
    if (x < ow && y < oh) {{
        #pragma unroll
        for (int o = 0; o < {OC}; o++) out[((size_t)o * oh + y) * ow + x] = acc[o];
    }}
}}
extern "C" void {entry}({ps}) {{
    int oh = {ho}, ow = {wo};
    if (oh <= 0 || ow <= 0) return;
    dim3 block(16, 16), grid((ow + 15) / 16, (oh + 15) / 16);
    {entry}_tile<<<grid, block>>>({args});
}}
"""
    coal = f"""
__global__ void __launch_bounds__(256) {entry}_px({ps}) {{
    int oh = {ho}, ow = {wo};
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y;
    if (x >= ow || y >= oh) return;
    {t} acc[{OC}];
    #pragma unroll
    for (int o = 0; o < {OC}; o++) acc[o] = {'__ldg(&bias[o])' if bias else ty.zero};
    for (int c = 0; c < {C}; c++) {{
        const {t} *__restrict__ plane = in + (size_t)c * height * width;
        #pragma unroll
        for (int ky = 0; ky < {K}; ky++) {{
            int iy = y + ky - {p};
            if (!{guard('iy', 'height')}) continue;
            #pragma unroll
            for (int kx = 0; kx < {K}; kx++) {{
                int ix = x + kx - {p};
                if (!{guard('ix', 'width')}) continue;
                {t} v = __ldg(&plane[(size_t)iy * width + ix]);
                #pragma unroll
                for (int o = 0; o < {OC}; o++) acc[o] += v * __ldg(&filt[((o * {C} + c) * {K} + ky) * {K} + kx]);
            }}
        }}
    }}
    #pragma unroll
    for (int o = 0; o < {OC}; o++) out[((size_t)o * oh + y) * ow + x] = acc[o];
}}
extern "C" void {entry}({ps}) {{
    int oh = {ho}, ow = {wo};
    if (oh <= 0 || ow <= 0) return;
    dim3 block(32, 8), grid((ow + 31) / 32, (oh + 7) / 8);
    {entry}_px<<<grid, block>>>({args});
}}
"""
    return [V("naive", "one thread per output element (channel, row, column), global loads", naive),
            V("tiled_smem", f"16x16 output tile, ({TS})^2 input tile per channel and the filter "
              "bank in shared memory, every thread accumulates all output channels", tiled),
            V("coalesced", "32x8 blocks (row-contiguous threads), one thread per pixel computing "
              "all output channels so each input load is reused, unrolled taps, __ldg", coal)]


def generate(rng: random.Random) -> list[dict]:
    out = []
    combos = [(K, mode, ch, b, tn) for K in (3, 5, 7) for mode in ("valid", "same")
              for ch in CHANNELS for b in (False, True) for tn in ("float", "double")]
    rng.shuffle(combos)
    combos = sorted(combos[:84], key=lambda c: (c[0], c[1], c[2], c[3], c[4]))
    for K, mode, (C, OC), bias, tn in combos:
        ty = TYPES[tn]
        entry = f"{rng.choice(ENTRY)}_{mode}_{K}x{K}_c{C}o{OC}{'_bias' if bias else ''}_{ty.tag}"
        ho, wo, _ = _geom(mode, K)
        sig = [P("height", "int", "size"), P("width", "int", "size"),
               P("in", f"const {tn}*", "in", f"{C}*height*width", "uniform(-1, 1)"),
               P("filt", f"const {tn}*", "in", str(OC * C * K * K), "uniform(-0.5, 0.5)")]
        if bias:
            sig.append(P("bias", f"const {tn}*", "in", str(OC), "uniform(-1, 1)"))
        sig.append(P("out", f"{tn}*", "out", f"{OC}*{ho}*{wo}"))
        ref = _reference(entry, sig, mode, K, C, OC, bias, ty)
        edge = K if mode == "valid" else 1
        px = min((1 << 26) if tn == "float" else (1 << 25), int(8e8 / (OC * C * K * K)),
                 int(1.2e9 / ((C + OC) * ty_size(tn))))
        side = max(256, int(math.sqrt(px)) // 64 * 64)
        tests = [T("one", {"height": edge, "width": edge}),
                 T("strip", {"height": edge, "width": 300}),
                 T("odd", {"height": 37, "width": 101}),
                 T("perf", {"height": side, "width": side + 64}, perf=True)]
        out.append(record(FAMILY, f"{mode}_k{K}_c{C}o{OC}_{'bias' if bias else 'nobias'}_{ty.tag}",
                          entry, sig, ref, _variants(entry, sig, mode, K, C, OC, bias, ty), tests,
                          {"ksize": K, "padding": mode, "in_ch": C, "out_ch": OC, "bias": bias,
                           "dtype": tn},
                          flops=f"{2 * OC * C * K * K}*{ho}*{wo}",
                          tolerance=FLOAT_TOL if tn == "float" else None))
    return out


def ty_size(tn):
    return 4 if tn == "float" else 8
