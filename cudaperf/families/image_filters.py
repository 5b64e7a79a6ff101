"""Image processing filters on 8-bit or float images: colour conversion, point operations and
3x3/5x5 neighbourhood filters (box, Gaussian, Sobel, Prewitt, Laplacian, median, morphology).

Guarantees: every task is a distinct serial C program. 8-bit filters use integer arithmetic only
(fixed-point weights, rounding by integer division or shifts), so their outputs are exact on the
GPU and in the reference; float filters use float images in [0, 1]. Neighbourhood filters read
pixels outside the image either clamped to the edge or as zero. CUDA variants: point operations
get naive, grid-stride and either vectorised (uchar4/float4 with a scalar tail) or 4-pixels-per-
thread variants; neighbourhood filters get naive (flat index), a 32x8 shared-memory tile with
halo, and 2-D coalesced blocks with read-only loads. All handle 1x1 images and ragged tiles.
"""
from __future__ import annotations

import random

from cudaperf.families._d2kit import P, T, V, blocks, capped_blocks, cargs, cparams, record

FAMILY = "image_filters"
CATEGORY = "image"

U8 = "unsigned char"
GRAY_W = {"bt601": (77, 150, 29, 0.299, 0.587, 0.114), "bt709": (54, 183, 19, 0.2126, 0.7152, 0.0722)}


# ------------------------------------------------------------------ point operations
def _point_ops():
    """name -> (inputs [(name, ctype, init, per-pixel count)], outputs [(name, ctype)],
    scalars [P], per-pixel statements (pixel index i), vectorisable single-channel f(p) or None)."""
    ops = {}
    for w in ("bt601", "bt709"):
        a, b, c, fa, fb, fc = GRAY_W[w]
        ops[f"gray_{w}_u8"] = ([("rgb", U8, "randint(0, 256)", 3)], [("gray", U8)], [],
                               [f"int r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];",
                                f"gray[i] = (unsigned char)(({a} * r + {b} * g + {c} * b + 128) >> 8);"], None)
        ops[f"gray_{w}_planar_f32"] = ([("r", "float", "uniform(0, 1)", 1), ("g", "float", "uniform(0, 1)", 1),
                                        ("b", "float", "uniform(0, 1)", 1)], [("gray", "float")], [],
                                       [f"gray[i] = {fa}f * r[i] + {fb}f * g[i] + {fc}f * b[i];"], None)
        ops[f"gray_{w}_interleaved_f32"] = ([("rgb", "float", "uniform(0, 1)", 3)], [("gray", "float")], [],
                                            [f"gray[i] = {fa}f * rgb[3 * i] + {fb}f * rgb[3 * i + 1] + {fc}f * rgb[3 * i + 2];"], None)
    ops["gray_avg_u8"] = ([("rgb", U8, "randint(0, 256)", 3)], [("gray", U8)], [],
                          ["gray[i] = (unsigned char)((rgb[3 * i] + rgb[3 * i + 1] + rgb[3 * i + 2]) / 3);"], None)
    ops["gray_max_u8"] = ([("rgb", U8, "randint(0, 256)", 3)], [("value", U8)], [],
                          ["int m = rgb[3 * i];", "if (rgb[3 * i + 1] > m) m = rgb[3 * i + 1];",
                           "if (rgb[3 * i + 2] > m) m = rgb[3 * i + 2];", "value[i] = (unsigned char)m;"], None)
    ops["gray_avg_planar_f32"] = ([("r", "float", "uniform(0, 1)", 1), ("g", "float", "uniform(0, 1)", 1),
                                   ("b", "float", "uniform(0, 1)", 1)], [("gray", "float")], [],
                                  ["gray[i] = (r[i] + g[i] + b[i]) / 3.0f;"], None)
    th_u8 = {"binary": "p > t ? 255 : 0", "binary_inv": "p > t ? 0 : 255", "trunc": "p > t ? t : p",
             "tozero": "p > t ? p : 0"}
    th_f = {"binary": "p > t ? 1.0f : 0.0f", "binary_inv": "p > t ? 0.0f : 1.0f", "trunc": "p > t ? t : p",
            "tozero": "p > t ? p : 0.0f"}
    for k, e in th_u8.items():
        ops[f"threshold_{k}_u8"] = ([("src", U8, "randint(0, 256)", 1)], [("dst", U8)],
                                    [P("t", "int", "scalar", init="randint(32, 224)")],
                                    None, ("int", f"(unsigned char)({e})"))
    for k, e in th_f.items():
        ops[f"threshold_{k}_f32"] = ([("src", "float", "uniform(0, 1)", 1)], [("dst", "float")],
                                     [P("t", "float", "scalar", init="uniform(0.2, 0.8)")],
                                     None, ("float", e))
    ops["brightness_contrast_u8"] = ([("src", U8, "randint(0, 256)", 1)], [("dst", U8)],
                                     [P("alpha", "int", "scalar", init="randint(32, 128)"),
                                      P("beta", "int", "scalar", init="randint(-40, 40)")],
                                     None, ("int", "(unsigned char)clamp255(((p - 128) * alpha) / 64 + 128 + beta)"))
    ops["brightness_contrast_f32"] = ([("src", "float", "uniform(0, 1)", 1)], [("dst", "float")],
                                      [P("gain", "float", "scalar", init="uniform(0.5, 2)"),
                                       P("bias", "float", "scalar", init="uniform(-0.2, 0.2)")],
                                      None, ("float", "clamp01(gain * p + bias)"))
    ops["gamma_f32"] = ([("src", "float", "uniform(0, 1)", 1)], [("dst", "float")],
                        [P("gamma", "float", "scalar", init="uniform(0.4, 2.5)")],
                        None, ("float", "POW(p, gamma)"))
    ops["lut_u8"] = ([("src", U8, "randint(0, 256)", 1), ("lut", U8, "randint(0, 256)", 0)], [("dst", U8)],
                     [], None, ("int", "lut[p]"))
    ops["invert_u8"] = ([("src", U8, "randint(0, 256)", 1)], [("dst", U8)], [], None,
                        ("int", "(unsigned char)(255 - p)"))
    ops["invert_f32"] = ([("src", "float", "uniform(0, 1)", 1)], [("dst", "float")], [], None,
                         ("float", "1.0f - p"))
    ops["premultiply_u8"] = ([("rgba", U8, "randint(0, 256)", 4)], [("out", U8)], [],
                             ["int a = rgba[4 * i + 3];",
                              "for (int c = 0; c < 3; c++) out[4 * i + c] = (unsigned char)((rgba[4 * i + c] * a + 127) / 255);",
                              "out[4 * i + 3] = (unsigned char)a;"], None)
    ops["premultiply_f32"] = ([("rgba", "float", "uniform(0, 1)", 4)], [("out", "float")], [],
                              ["float a = rgba[4 * i + 3];",
                               "for (int c = 0; c < 3; c++) out[4 * i + c] = rgba[4 * i + c] * a;",
                               "out[4 * i + 3] = a;"], None)
    return ops


HELPERS_C = ("static int clamp255(int v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }\n"
             "static float clamp01(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }\n")
HELPERS_CU = ("__device__ __forceinline__ int clamp255(int v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }\n"
              "__device__ __forceinline__ float clamp01(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }\n")


def _point_lines(op, spec, ind, pow_fn):
    ins, outs, scal, lines, vec = spec
    if lines is not None:
        return [ind + s for s in lines]
    pt, e = vec
    return [f"{ind}{pt} p = {ins[0][0]}[i];", f"{ind}{outs[0][0]}[i] = {e.replace('POW', pow_fn)};"]


def _point_task(op, spec):
    ins, outs, scal, lines, vec = spec
    entry = {"gray": "rgb_to_gray", "threshold": "threshold", "brightness": "adjust_brightness_contrast",
             "gamma": "gamma_correct", "lut": "apply_lut", "invert": "invert_image",
             "premultiply": "premultiply_alpha"}[op.split("_")[0]] + "_" + "_".join(op.split("_")[1:])
    entry = entry.rstrip("_")
    sig = [P("n", "int", "size")]
    for nm, ct, init, per in ins:
        sig.append(P(nm, f"const {ct}*", "in", "256" if per == 0 else ("n" if per == 1 else f"{per}*n"), init))
    sig += scal
    per_out = 4 if op.startswith("premultiply") else 1
    for nm, ct in outs:
        sig.append(P(nm, f"{ct}*", "out", "n" if per_out == 1 else f"{per_out}*n"))
    body_ref = _point_lines(op, spec, "        ", "powf")
    need_helpers = any("clamp" in s for s in body_ref)
    ref = (HELPERS_C if need_helpers else "") + "\n".join(
        [f"void {entry}({cparams(sig)}) {{", "    for (int i = 0; i < n; i++) {"] + body_ref + ["    }", "}"])
    if "powf" in ref:
        ref = ref.replace("powf", "pow")
    ps, args = cparams(sig), cargs(sig)
    hdr = HELPERS_CU if need_helpers else ""
    body = "\n".join(_point_lines(op, spec, "        ", "powf"))
    naive = f"""{hdr}
__global__ void {entry}_k({ps}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{
{body}
    }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_k<<<{blocks('n')}, 256>>>({args});
}}
"""
    gs = f"""{hdr}
__global__ void __launch_bounds__(512) {entry}_gs({ps}) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {{
{body}
    }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_gs<<<{capped_blocks('n', 512)}, 512>>>({args});
}}
"""
    variants = [V("naive", "one thread per pixel", naive),
                V("grid_stride", "grid-stride loop over pixels, 512-thread blocks", gs)]
    if vec is not None:
        pt, e = vec
        src, dst = ins[0][0], outs[0][0]
        ct = ins[0][1]
        vt = "uchar4" if ct == U8 else "float4"
        e = e.replace("POW", "powf")
        comp = "\n".join(f"        {{ {pt} p = v.{c}; o.{c} = {e}; }}" for c in "xyzw")
        vecsrc = f"""{hdr}
__global__ void {entry}_v4({ps}) {{
    int n4 = n / 4;
    const {vt} *s4 = (const {vt} *){src};
    {vt} *d4 = ({vt} *){dst};
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < n4; q += blockDim.x * gridDim.x) {{
        {vt} v = s4[q], o;
{comp}
        d4[q] = o;
    }}
    // tail: the last n % 4 pixels, scalar (buffers from cudaMalloc are 256-byte aligned)
    if (blockIdx.x == 0 && threadIdx.x < n - 4 * n4) {{
        int i = 4 * n4 + threadIdx.x;
        {pt} p = {src}[i];
        {dst}[i] = {e};
    }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_v4<<<{capped_blocks('n / 4 + 1', 256)}, 256>>>({args});
}}
"""
        variants.append(V("vectorized", f"{vt} loads and stores (4 pixels per access), "
                          "grid-stride, scalar tail", vecsrc))
    else:
        unr = f"""{hdr}
__global__ void {entry}_x4({ps}) {{
    int total = gridDim.x * blockDim.x;
    int first = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int rep = 0; rep < 4; rep++) {{
        int i = first + rep * total;
        if (i < n) {{
{body}
        }}
    }}
}}
extern "C" void {entry}({ps}) {{
    if (n <= 0) return;
    {entry}_x4<<<{blocks('(n + 3) / 4')}, 256>>>({args});
}}
"""
        variants.append(V("loop_unrolled", "4 pixels per thread strided by the grid (coalesced), "
                          "unrolled for memory-level parallelism", unr))
    u8 = ins[0][1] == U8
    per_in = sum(max(per, 0) * (1 if ct == U8 else 4) for _, ct, _, per in ins)
    per_px = per_in + per_out * (1 if outs[0][1] == U8 else 4)
    big = min(1 << 28, int(1.0e9 // per_px) // 1024 * 1024)
    tests = [T("one", {"n": 1}), T("odd", {"n": 1003}), T("mid", {"n": 65539}),
             T("perf", {"n": big}, perf=True)]
    return record(FAMILY, op, entry, sig, ref, variants, tests,
                  {"op": op, "kind": "point", "dtype": "u8" if u8 else "f32"})


# ------------------------------------------------------------------ neighbourhood filters
SOBX = [(-1, -1, -1), (0, -1, -2), (1, -1, -1), (-1, 1, 1), (0, 1, 2), (1, 1, 1)]  # (dy, dx, w)


def _nb_ops():
    """name -> (radius, in ctype, out ctype, body(A) -> (lines, result expr))."""
    ops = {}
    def wsum(A, taps):
        return " + ".join(f"{w} * {A(dy, dx)}" if w != 1 else A(dy, dx) for dy, dx, w in taps)
    for R in (1, 2):
        taps = [(dy, dx, 1) for dy in range(-R, R + 1) for dx in range(-R, R + 1)]
        cnt = (2 * R + 1) ** 2
        ops[f"box{2 * R + 1}_u8"] = (R, U8, U8, lambda A, taps=taps, cnt=cnt: (
            [f"int s = {wsum(A, taps)};"], f"(unsigned char)((s + {cnt // 2}) / {cnt})"))
        ops[f"box{2 * R + 1}_f32"] = (R, "float", "float", lambda A, taps=taps, cnt=cnt: (
            [f"float s = {wsum(A, taps)};"], f"s * (1.0f / {cnt}.0f)"))
    g3 = [(dy, dx, (2 - abs(dy)) * (2 - abs(dx))) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    b5 = [1, 4, 6, 4, 1]
    g5 = [(dy, dx, b5[dy + 2] * b5[dx + 2]) for dy in range(-2, 3) for dx in range(-2, 3)]
    ops["gauss3_u8"] = (1, U8, U8, lambda A: ([f"int s = {wsum(A, g3)};"], "(unsigned char)((s + 8) >> 4)"))
    ops["gauss3_f32"] = (1, "float", "float", lambda A: ([f"float s = {wsum(A, g3)};"], "s * 0.0625f"))
    ops["gauss5_u8"] = (2, U8, U8, lambda A: ([f"int s = {wsum(A, g5)};"], "(unsigned char)((s + 128) >> 8)"))
    ops["gauss5_f32"] = (2, "float", "float", lambda A: ([f"float s = {wsum(A, g5)};"], "s * 0.00390625f"))
    sobx = [(dy, dx, w) for dy, dx, w in [(-1, -1, -1), (0, -1, -2), (1, -1, -1), (-1, 1, 1), (0, 1, 2), (1, 1, 1)]]
    soby = [(dx, dy, w) for dy, dx, w in sobx]
    prx = [(dy, dx, w) for dy, dx, w in [(-1, -1, -1), (0, -1, -1), (1, -1, -1), (-1, 1, 1), (0, 1, 1), (1, 1, 1)]]
    pry = [(dx, dy, w) for dy, dx, w in prx]
    for nm, kx, ky in (("sobel", sobx, soby), ("prewitt", prx, pry)):
        ops[f"{nm}_l1_u8"] = (1, U8, "int", lambda A, kx=kx, ky=ky: (
            [f"int gx = {wsum(A, kx)};", f"int gy = {wsum(A, ky)};"], "abs(gx) + abs(gy)"))
        ops[f"{nm}_l1_f32"] = (1, "float", "float", lambda A, kx=kx, ky=ky: (
            [f"float gx = {wsum(A, kx)};", f"float gy = {wsum(A, ky)};"], "FABS(gx) + FABS(gy)"))
    ops["sobel_l2_u8"] = (1, U8, "float", lambda A: (
        [f"int gx = {wsum(A, sobx)};", f"int gy = {wsum(A, soby)};"], "SQRT((float)(gx * gx + gy * gy))"))
    ops["sobel_l2_f32"] = (1, "float", "float", lambda A: (
        [f"float gx = {wsum(A, sobx)};", f"float gy = {wsum(A, soby)};"], "SQRT(gx * gx + gy * gy)"))
    lap = [(-1, 0, -1), (1, 0, -1), (0, -1, -1), (0, 1, -1), (0, 0, 4)]
    ops["laplace_u8"] = (1, U8, "int", lambda A: ([], wsum(A, lap)))
    ops["laplace_f32"] = (1, "float", "float", lambda A: ([], wsum(A, lap)))
    shp = [(-1, 0, -1), (1, 0, -1), (0, -1, -1), (0, 1, -1), (0, 0, 5)]
    ops["sharpen_u8"] = (1, U8, U8, lambda A: ([], f"(unsigned char)clamp255({wsum(A, shp)})"))
    ops["sharpen_f32"] = (1, "float", "float", lambda A: ([], f"clamp01({wsum(A, shp)})"))
    nine = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    for t, vt in ((U8, "int"), ("float", "float")):
        tag = "u8" if t == U8 else "f32"
        def med(A, vt=vt):
            L = [f"{vt} w[9] = {{{', '.join(A(dy, dx) for dy, dx in nine)}}};",
                 "for (int a = 1; a < 9; a++) {",
                 f"    {vt} key = w[a]; int b = a - 1;",
                 "    while (b >= 0 && w[b] > key) { w[b + 1] = w[b]; b--; }",
                 "    w[b + 1] = key;", "}"]
            return L, ("(unsigned char)w[4]" if vt == "int" else "w[4]")
        ops[f"median3_{tag}"] = (1, t, t, med)
        for mop, cmp in (("dilate", ">"), ("erode", "<")):
            def morph(A, vt=vt, cmp=cmp):
                L = [f"{vt} m = {A(0, 0)};"] + [f"if ({A(dy, dx)} {cmp} m) m = {A(dy, dx)};"
                                                  for dy, dx in nine if (dy, dx) != (0, 0)]
                return L, ("(unsigned char)m" if vt == "int" else "m")
            ops[f"{mop}3_{tag}"] = (1, t, t, morph)
    return ops


def _nb_task(op, spec, border):
    R, it, ot, bodyf = spec
    tag = "u8" if it == U8 else "f32"
    zero = "0" if it == U8 else "0.0f"
    entry = {"box3": "box_blur3", "box5": "box_blur5", "gauss3": "gaussian3x3", "gauss5": "gaussian5x5",
             "sobel": "sobel", "prewitt": "prewitt", "laplace": "laplacian", "sharpen": "sharpen",
             "median3": "median3x3", "dilate3": "dilate3x3", "erode3": "erode3x3"}[op.split("_")[0]]
    entry += "_" + "_".join(op.split("_")[1:]) + f"_{border}"
    sig = [P("height", "int", "size"), P("width", "int", "size"),
           P("src", f"const {it}*", "in", "height*width", "randint(0, 256)" if it == U8 else "uniform(0, 1)"),
           P("dst", f"{ot}*", "out", "height*width")]
    ps, args = cparams(sig), cargs(sig)

    def fixfn(s, cuda):
        return (s.replace("SQRT", "sqrtf" if cuda else "sqrt").replace("FABS", "fabsf" if cuda else "fabs"))
    # reference: neighbour rows/columns through a pixel() helper or explicit clamped indices
    if border == "clamp":
        Ar = lambda dy, dx: f"src[{_cl('y', dy, 'height')} * width + {_cl('x', dx, 'width')}]"
    else:
        Ar = lambda dy, dx: f"pix(src, height, width, y + {dy}, x + {dx})" if (dy or dx) else "src[y * width + x]"
    lines, res = bodyf(Ar)
    helper = ""
    if border == "zero":
        helper = (f"static {'int' if it == U8 else 'float'} pix(const {it} *img, int h, int w, int y, int x) {{\n"
                  f"    if (y < 0 || y >= h || x < 0 || x >= w) return {zero};\n    return img[y * w + x];\n}}\n")
    need = "clamp" in res or any("clamp" in s for s in lines)
    ref = (HELPERS_C if need else "") + helper + "\n".join(
        [f"void {entry}({ps}) {{", "    for (int y = 0; y < height; y++) {",
         "        for (int x = 0; x < width; x++) {"] +
        ["            " + fixfn(s, False) for s in lines] +
        [f"            dst[y * width + x] = {fixfn(res, False)};", "        }", "    }", "}"])
    hdr = HELPERS_CU if need else ""
    vt = "int" if it == U8 else "float"
    if border == "clamp":
        dmap = ("__device__ __forceinline__ int bmap(int k, int n) { return k < 0 ? 0 : (k >= n ? n - 1 : k); }\n")
        ld = (f"__device__ __forceinline__ {vt} px(const {it} *img, int h, int w, int y, int x) {{\n"
              f"    return img[(size_t)bmap(y, h) * w + bmap(x, w)];\n}}\n")
    else:
        dmap = ""
        ld = (f"__device__ __forceinline__ {vt} px(const {it} *img, int h, int w, int y, int x) {{\n"
              f"    return (y < 0 || y >= h || x < 0 || x >= w) ? {zero} : img[(size_t)y * w + x];\n}}\n")
    Ag = lambda dy, dx: f"px(src, height, width, y + ({dy}), x + ({dx}))"
    gl, gr = bodyf(Ag)
    gbody = "\n".join("    " + fixfn(s, True) for s in gl)
    naive = f"""{hdr}{dmap}{ld}
__global__ void {entry}_k({ps}) {{
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= (long long)height * width) return;
    int y = (int)(g / width), x = (int)(g % width);
{gbody}
    dst[(size_t)y * width + x] = {fixfn(gr, True)};
}}
extern "C" void {entry}({ps}) {{
    if (height <= 0 || width <= 0) return;
    {entry}_k<<<{blocks('(long long)height * width')}, 256>>>({args});
}}
"""
    TH, TW = 8 + 2 * R, 32 + 2 * R
    At = lambda dy, dx: f"tile[threadIdx.y + {R + dy}][threadIdx.x + {R + dx}]"
    tl, tr = bodyf(At)
    tbody = "\n".join("        " + fixfn(s, True) for s in tl)
    tiled = f"""{hdr}{dmap}{ld}
__global__ void {entry}_tile({ps}) {{
    __shared__ {vt} tile[{TH}][{TW}];
    int y0 = blockIdx.y * 8 - {R}, x0 = blockIdx.x * 32 - {R};
    for (int s = threadIdx.y * 32 + threadIdx.x; s < {TH * TW}; s += 256)
        tile[s / {TW}][s % {TW}] = px(src, height, width, y0 + s / {TW}, x0 + s % {TW});
    __syncthreads();
    int y = blockIdx.y * 8 + threadIdx.y, x = blockIdx.x * 32 + threadIdx.x;
    if (y < height && x < width) {{
{tbody}
        dst[(size_t)y * width + x] = {fixfn(tr, True)};
    }}
}}
extern "C" void {entry}({ps}) {{
    if (height <= 0 || width <= 0) return;
    dim3 block(32, 8), grid((width + 31) / 32, (height + 7) / 8);
    {entry}_tile<<<grid, block>>>({args});
}}
"""
    co = f"""{hdr}{dmap}{ld.replace('img[', '__ldg(&img[').replace('+ bmap(x, w)]', '+ bmap(x, w)])').replace('* w + x]', '* w + x])')}
__global__ void __launch_bounds__(256) {entry}_2d({ps.replace(f'const {it} *src', f'const {it} *__restrict__ src')}) {{
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y;
    if (y >= height || x >= width) return;
{gbody}
    dst[(size_t)y * width + x] = {fixfn(gr, True)};
}}
extern "C" void {entry}({ps}) {{
    if (height <= 0 || width <= 0) return;
    dim3 block(32, 8), grid((width + 31) / 32, (height + 7) / 8);
    {entry}_2d<<<grid, block>>>({args});
}}
"""
    variants = [V("naive", "one thread per pixel (flat index), border rule per tap", naive),
                V("tiled_smem", f"32x8 block, ({TH})x({TW}) shared-memory tile with a {R}-pixel halo, "
                  "border applied at load", tiled),
                V("coalesced", "2-D 32x8 blocks (row-contiguous warps), __ldg read-only loads", co)]
    heavy = R == 2
    if op.startswith("median"):  # insertion sort per pixel: ~0.2 us/pixel in the serial C
        big = (4096, 4096) if it == U8 else (2048, 4096)
    elif it == U8:
        big = (8192, 8192) if heavy else (8192, 16384)
    else:
        big = (4096, 8192) if heavy else (8192, 8192)
    # gradients/Laplacians of a 1x1 clamped image are identically 0: use 1x2 as the edge case
    edge = (T("tiny", {"height": 1, "width": 2}) if op.startswith(("sobel", "prewitt", "laplace"))
            else T("one", {"height": 1, "width": 1}))
    tests = [edge, T("strip", {"height": 3, "width": 301}),
             T("odd", {"height": 37, "width": 101}), T("perf", {"height": big[0], "width": big[1]}, perf=True)]
    return record(FAMILY, f"{op}_{border}", entry, sig, ref, variants, tests,
                  {"op": op, "kind": "neighbourhood", "border": border, "dtype": tag})


def _cl(v, d, n):
    if d == 0:
        return v
    if d < 0:
        return f"({v} - {-d} < 0 ? 0 : {v} - {-d})"
    return f"({v} + {d} > {n} - 1 ? {n} - 1 : {v} + {d})"


def generate(rng: random.Random) -> list[dict]:
    out = [_point_task(op, spec) for op, spec in _point_ops().items()]
    for op, spec in _nb_ops().items():
        for border in ("clamp", "zero"):
            out.append(_nb_task(op, spec, border))
    return out
