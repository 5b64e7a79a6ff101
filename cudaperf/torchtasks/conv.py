"""Small 1-D and 2-D convolutions (nn.Conv1d / nn.Conv2d, square kernels, stride, zero
padding, bias) followed by 0-2 element-wise steps.

Guarantees: output sizes follow torch's floor((L + 2p - k) / s) + 1; "naive" computes one
output per thread reading weights from global memory; "smem_weights" gives each block one
(batch, out-channel) pair and a strip of outputs, and stages that channel's Cin*k^d weights
in shared memory (tasks keep Cin*k^d <= 4608 floats = 18 KB).
"""
from __future__ import annotations

import random

from cudaperf.torchtasks._kit import HDR, SMOOTH, UNARY, cparams, module_source, record, sig_of, tests_from

FAMILY = "conv"
CATEGORY = "stencil"
CONV2D = [  # N, Cin, Cout, H, W
    (16, 32, 64, 128, 128), (8, 64, 64, 128, 128), (32, 16, 32, 256, 256), (16, 3, 64, 224, 224),
    (64, 64, 128, 56, 56)]
CONV1D = [(32, 32, 64, 16384), (64, 64, 64, 8192), (16, 128, 128, 8192), (128, 16, 32, 4096)]
KSP = [(3, 1, 1), (3, 1, 0), (5, 1, 2), (3, 2, 1), (7, 1, 3), (1, 1, 0)]


def _out(L: str, k: int, s: int, p: int) -> str:
    return f"(({L} + {2 * p} - {k}) // {s} + 1)"


def _cout(L: str, k: int, s: int, p: int) -> str:
    return f"(({L} + {2 * p} - {k}) / {s} + 1)"


def sources(entry, sig, two_d, k, s, p, chain):
    epi = HDR + f"__device__ __forceinline__ float epi(float v) {{ {chain} return v; }}\n"
    if two_d:
        setup = (f"    int N = batch_size, Ci = in_channels, Co = out_channels, H = height, W = width;\n"
                 f"    int Ho = {_cout('H', k, s, p)}, Wo = {_cout('W', k, s, p)};\n"
                 "    if (N <= 0 || Co <= 0 || Ho <= 0 || Wo <= 0) return;\n"
                 "    long long P = (long long)Ho * Wo;\n")
        loop = f'''for (int ci = 0; ci < Ci; ci++)
        for (int kh = 0; kh < {k}; kh++) {{
            int ih = oh * {s} - {p} + kh;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < {k}; kw++) {{
                int iw = ow * {s} - {p} + kw;
                if (iw < 0 || iw >= W) continue;
                v += x[(((long long)n * Ci + ci) * H + ih) * W + iw] * WT;
            }}
        }}'''
        pos = "int oh = (int)(q / Wo), ow = (int)(q % Wo);"
        dimsig = "int N, int Ci, int Co, int H, int W, int Ho, int Wo"
        dimarg = "N, Ci, Co, H, W, Ho, Wo"
        wsize = f"Ci * {k * k}"
        widx_g = f"w[(((long long)co * Ci + ci) * {k} + kh) * {k} + kw]"
        widx_s = f"ws[(ci * {k} + kh) * {k} + kw]"
    else:
        setup = (f"    int N = batch_size, Ci = in_channels, Co = out_channels, H = 1, W = length;\n"
                 f"    int Ho = 1, Wo = {_cout('W', k, s, p)};\n"
                 "    if (N <= 0 || Co <= 0 || Wo <= 0) return;\n"
                 "    long long P = (long long)Wo;\n")
        loop = f'''for (int ci = 0; ci < Ci; ci++)
        for (int kw = 0; kw < {k}; kw++) {{
            int iw = ow * {s} - {p} + kw;
            if (iw < 0 || iw >= W) continue;
            v += x[((long long)n * Ci + ci) * W + iw] * WT;
        }}'''
        pos = "int ow = (int)q; (void)H; (void)Ho;"
        dimsig = "int N, int Ci, int Co, int H, int W, int Ho, int Wo"
        dimarg = "N, Ci, Co, H, W, Ho, Wo"
        wsize = f"Ci * {k}"
        widx_g = f"w[((long long)co * Ci + ci) * {k} + kw]"
        widx_s = f"ws[ci * {k} + kw]"
    args = "x, conv_weight, conv_bias, out"
    naive = epi + f'''
__global__ void conv_naive({dimsig}, const float *x, const float *w, const float *b, float *out) {{
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long P = (long long)Ho * Wo, total = (long long)N * Co * P;
    if (t >= total) return;
    long long q = t % P; int co = (int)((t / P) % Co), n = (int)(t / P / Co);
    {pos}
    float v = b[co];
    {loop.replace('WT', widx_g)}
    out[t] = epi(v);
}}
extern "C" void {entry}({cparams(sig)}) {{
{setup}    long long total = (long long)N * Co * P;
    conv_naive<<<(unsigned)((total + 255) / 256), 256>>>({dimarg}, {args});
}}
'''
    opt = epi + f'''
__global__ void conv_smem({dimsig}, const float *__restrict__ x, const float *__restrict__ w,
                          const float *__restrict__ b, float *__restrict__ out) {{
    extern __shared__ float ws[];
    int co = blockIdx.y, n = blockIdx.z;
    int wn = {wsize};
    for (int j = threadIdx.x; j < wn; j += blockDim.x) ws[j] = w[(long long)co * wn + j];
    __syncthreads();
    long long P = (long long)Ho * Wo;
    long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= P) return;
    {pos}
    float v = b[co];
    {loop.replace('WT', widx_s)}
    out[((long long)n * Co + co) * P + q] = epi(v);
}}
extern "C" void {entry}({cparams(sig)}) {{
{setup}    dim3 grid((unsigned)((P + 255) / 256), Co, N);
    conv_smem<<<grid, 256, (size_t)({wsize}) * sizeof(float)>>>({dimarg}, {args});
}}
'''
    return [("naive", "one thread per output, weights from global memory", naive),
            ("smem_weights", "block per (batch, out channel, output strip), weights staged in shared memory", opt)]


def generate(rng: random.Random) -> list[dict]:
    out, seen = [], set()
    while len(out) < 110:
        two_d = rng.random() < 0.6
        k, s, p = rng.choice(KSP)
        shape = rng.choice(CONV2D if two_d else CONV1D)
        ops = rng.sample(SMOOTH, rng.choice([0, 1, 1, 2]))
        if shape[1] * k ** (2 if two_d else 1) > 4608:
            continue
        key = (two_d, k, s, p, shape, tuple(ops))
        if key in seen:
            continue
        seen.add(key)
        if two_d:
            dims = ["batch_size", "in_channels", "out_channels", "height", "width"]
            xd = ["batch_size", "in_channels", "height", "width"]
            od = ["batch_size", "out_channels", _out("height", k, s, p), _out("width", k, s, p)]
            wd = ["out_channels", "in_channels", str(k), str(k)]
            small = [{"batch_size": 1, "in_channels": 1, "out_channels": 1, "height": k, "width": k},
                     {"batch_size": 2, "in_channels": 3, "out_channels": 5, "height": 17, "width": 19},
                     {"batch_size": 1, "in_channels": 4, "out_channels": 3, "height": 33, "width": 70}]
            mod = "Conv2d"
        else:
            dims = ["batch_size", "in_channels", "out_channels", "length"]
            xd = ["batch_size", "in_channels", "length"]
            od = ["batch_size", "out_channels", _out("length", k, s, p)]
            wd = ["out_channels", "in_channels", str(k)]
            small = [{"batch_size": 1, "in_channels": 1, "out_channels": 1, "length": k},
                     {"batch_size": 2, "in_channels": 3, "out_channels": 5, "length": 257},
                     {"batch_size": 3, "in_channels": 7, "out_channels": 2, "length": 1001}]
            mod = "Conv1d"
        consts = dict(zip(dims, shape))
        fan = f"in_channels*{k ** (2 if two_d else 1)}"
        inputs = [("x", xd, "uniform(-1, 1)")]
        params = [("conv_weight", "conv.weight", wd, f"uniform(-1/sqrt({fan}), 1/sqrt({fan}))"),
                  ("conv_bias", "conv.bias", ["out_channels"], f"uniform(-1/sqrt({fan}), 1/sqrt({fan}))")]
        outputs = [("out", od)]
        sig = sig_of(dims, inputs, params, outputs)
        module = module_source(
            init_args=["in_channels", "out_channels", "kernel_size", "stride", "padding"],
            init_body=[f"self.conv = nn.{mod}(in_channels, out_channels, kernel_size, stride=stride, padding=padding)"],
            fwd_args=["x"], fwd_body=["x = self.conv(x)"] + [f"x = {UNARY[o][0]}" for o in ops] + ["return x"],
            consts={**consts, "kernel_size": k, "stride": s, "padding": p},
            get_inputs=[f"torch.randn({', '.join(xd)})"],
            doc=f"{mod} (k={k}, stride={s}, padding={p})" + (" followed by " + ", ".join(ops) if ops else "") + ".")
        name = f"{mod.lower()}_k{k}s{s}p{p}_{'_'.join(ops) or 'plain'}_{'x'.join(map(str, shape))}"
        out.append(record(family=FAMILY, name=name, entry="conv_forward", sizes=dims, inputs=inputs, params=params,
                          outputs=outputs, module=module,
                          variants=sources("conv_forward", sig, two_d, k, s, p, " ".join(f"v = {UNARY[o][1]};" for o in ops)),
                          tests=tests_from(small, consts), tolerance={"rtol": 2e-3, "atol": 2e-4, "l2": 1e-3},
                          meta={"ops": [mod.lower()] + ops, "difficulty": 3,
                                "flops": "2*" + "*".join(od + wd[1:])}))
    return out
