"""Pooling: MaxPool1d/2d and AvgPool1d/2d (torch defaults: no dilation, floor mode, average
counting padded positions), optionally followed by an element-wise step.

Guarantees: output sizes follow floor((L + 2p - k) / s) + 1 with p <= k / 2 (torch's rule);
max pooling ignores padded positions, average pooling divides by k^d. "naive" is one thread
per output over a flat index; "plane_tiles" maps a 2-D block onto the output plane of one
(batch, channel) pair (consecutive threads -> consecutive outputs along the row) and reads
through the read-only cache.
"""
from __future__ import annotations

import random

from cudaperf.torchtasks._kit import HDR, SMOOTH, UNARY, cparams, module_source, record, sig_of, tests_from

FAMILY = "pooling"
CATEGORY = "stencil"
SHAPES2 = [(32, 64, 256, 256), (16, 128, 128, 128), (64, 32, 224, 224), (8, 256, 128, 256)]
SHAPES1 = [(64, 128, 8192), (32, 64, 65536), (128, 256, 2048)]
KSP = [(2, 2, 0), (3, 2, 1), (3, 1, 1), (4, 4, 0), (5, 2, 2), (3, 3, 0)]


def sources(sig, two_d, kind, k, s, p, chain):
    init = "-INFINITY" if kind == "max" else "0.0f"
    acc = "v = fmaxf(v, X);" if kind == "max" else "v += X;"
    fin = "v" if kind == "max" else f"v / {float(k ** (2 if two_d else 1))}f"
    pre = HDR + f"__device__ __forceinline__ float epi(float v) {{ {chain} return v; }}\n"
    if two_d:
        setup = (f"    int H = height, W = width, Ho = (H + {2 * p} - {k}) / {s} + 1, Wo = (W + {2 * p} - {k}) / {s} + 1;\n"
                 "    long long planes = (long long)batch_size * channels;\n"
                 "    if (planes <= 0 || Ho <= 0 || Wo <= 0) return;\n")
        win = lambda X: f'''for (int kh = 0; kh < {k}; kh++) {{
        int ih = oh * {s} - {p} + kh;
        if (ih < 0 || ih >= H) continue;
        for (int kw = 0; kw < {k}; kw++) {{
            int iw = ow * {s} - {p} + kw;
            if (iw < 0 || iw >= W) continue;
            {acc.replace('X', X)}
        }}
    }}'''
        xi = "xp[(long long)ih * W + iw]"
    else:
        setup = (f"    int H = 1, W = length, Ho = 1, Wo = (W + {2 * p} - {k}) / {s} + 1;\n"
                 "    long long planes = (long long)batch_size * channels;\n"
                 "    if (planes <= 0 || Wo <= 0) return;\n")
        win = lambda X: f'''for (int kw = 0; kw < {k}; kw++) {{
        int iw = ow * {s} - {p} + kw;
        if (iw < 0 || iw >= W) continue;
        {acc.replace('X', X)}
    }}'''
        xi = "xp[iw]"
    naive = pre + f'''
__global__ void pool_naive(long long planes, int H, int W, int Ho, int Wo, const float *x, float *out) {{
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long P = (long long)Ho * Wo;
    if (t >= planes * P) return;
    long long pl = t / P; int oh = (int)((t % P) / Wo), ow = (int)(t % Wo);
    const float *xp = x + pl * H * W;
    float v = {init};
    {win(xi)}
    out[t] = epi({fin});
}}
extern "C" void pool_forward({cparams(sig)}) {{
{setup}    long long total = planes * Ho * Wo;
    pool_naive<<<(unsigned)((total + 255) / 256), 256>>>(planes, H, W, Ho, Wo, x, out);
}}
'''
    opt = pre + f'''
__global__ void pool_tiles(long long planes, int H, int W, int Ho, int Wo, const float *__restrict__ x,
                           float *__restrict__ out) {{
    int ow = blockIdx.x * blockDim.x + threadIdx.x, oh = blockIdx.y * blockDim.y + threadIdx.y;
    if (ow >= Wo || oh >= Ho) return;
    for (long long pl = blockIdx.z; pl < planes; pl += gridDim.z) {{
        const float *xp = x + pl * H * W;
        float v = {init};
        {win(xi.replace('xp[', '__ldg(xp + ').replace(']', ')'))}
        out[(pl * Ho + oh) * Wo + ow] = epi({fin});
    }}
}}
extern "C" void pool_forward({cparams(sig)}) {{
{setup}    dim3 block(32, 8);
    long long gz = planes < 65535 ? planes : 65535;
    dim3 grid((unsigned)((Wo + 31) / 32), (unsigned)((Ho + 7) / 8), (unsigned)gz);
    pool_tiles<<<grid, block>>>(planes, H, W, Ho, Wo, x, out);
}}
'''
    return [("naive", "one thread per output, flat index", naive),
            ("plane_tiles", "2-D blocks over each output plane, read-only cache loads", opt)]


def generate(rng: random.Random) -> list[dict]:
    out, seen = [], set()
    while len(out) < 80:
        two_d = rng.random() < 0.6
        kind = rng.choice(["max", "avg"])
        k, s, p = rng.choice(KSP)
        shape = rng.choice(SHAPES2 if two_d else SHAPES1)
        ops = rng.sample(SMOOTH, rng.choice([0, 0, 1]))
        key = (two_d, kind, k, s, p, shape, tuple(ops))
        if key in seen:
            continue
        seen.add(key)
        o = lambda L: f"(({L} + {2 * p} - {k}) // {s} + 1)"
        if two_d:
            dims = ["batch_size", "channels", "height", "width"]
            od = ["batch_size", "channels", o("height"), o("width")]
            small = [{"batch_size": 1, "channels": 1, "height": k, "width": k},
                     {"batch_size": 2, "channels": 3, "height": 17, "width": 35},
                     {"batch_size": 1, "channels": 5, "height": 40, "width": 9}]
        else:
            dims = ["batch_size", "channels", "length"]
            od = ["batch_size", "channels", o("length")]
            small = [{"batch_size": 1, "channels": 1, "length": k},
                     {"batch_size": 2, "channels": 3, "length": 257},
                     {"batch_size": 3, "channels": 5, "length": 1001}]
        mod = f"{'Max' if kind == 'max' else 'Avg'}Pool{'2' if two_d else '1'}d"
        consts = dict(zip(dims, shape))
        inputs = [("x", dims, "uniform(-2, 2)")]
        outputs = [("out", od)]
        sig = sig_of(dims, inputs, [], outputs)
        module = module_source(init_args=["kernel_size", "stride", "padding"],
                               init_body=[f"self.pool = nn.{mod}(kernel_size, stride=stride, padding=padding)"],
                               fwd_args=["x"], fwd_body=["x = self.pool(x)"] + [f"x = {UNARY[q][0]}" for q in ops] + ["return x"],
                               consts={**consts, "kernel_size": k, "stride": s, "padding": p},
                               get_inputs=[f"torch.randn({', '.join(dims)})"],
                               doc=f"{mod} (k={k}, stride={s}, padding={p})" + (" then " + ops[0] if ops else "") + ".")
        name = f"{mod.lower()}_k{k}s{s}p{p}_{'_'.join(ops) or 'plain'}_{'x'.join(map(str, shape))}"
        out.append(record(family=FAMILY, name=name, entry="pool_forward", sizes=dims, inputs=inputs, params=[],
                          outputs=outputs, module=module,
                          variants=sources(sig, two_d, kind, k, s, p, " ".join(f"v = {UNARY[q][1]};" for q in ops)),
                          tests=tests_from(small, consts), tolerance={"rtol": 1e-4, "atol": 1e-5, "l2": 1e-4},
                          meta={"ops": [mod.lower()] + ops, "difficulty": 2, "flops": f"{k ** (2 if two_d else 1)}*" + "*".join(od)}))
    return out
