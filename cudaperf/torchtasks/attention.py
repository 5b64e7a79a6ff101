"""Attention pieces: scaled dot-product attention over (batch, heads, seq, head_dim) tensors,
written as F.scaled_dot_product_attention or as the explicit softmax(QK^T / sqrt(d)) V, with
or without a causal mask (key j visible to query i iff j <= i).

Guarantees: both CUDA variants use the online-softmax recurrence (running max and sum), so
no S x S score matrix is materialised: "naive" gives each query row to one thread with a
register accumulator of MAXD floats, "warp_per_query" gives it to a warp whose lanes split
head_dim (coalesced K/V row reads, shuffle-reduced dot products). head_dim is a size bound by
each test up to the task's MAXD; a larger head_dim makes the entry return without writing.
"""
from __future__ import annotations

import random

from cudaperf.torchtasks._kit import CUDA_REDUCE, HDR, cparams, module_source, record, sig_of, tests_from

FAMILY = "attention"
CATEGORY = "attention"
SHAPES = [(16, 16, 1024, 64), (8, 32, 512, 128), (32, 8, 2048, 32), (4, 16, 4096, 64), (64, 8, 256, 128),
          (8, 12, 2048, 64), (2, 32, 8192, 32)]


def sources(sig, maxd, causal):
    lim = "(causal ? i + 1 : S)".replace("causal", "1" if causal else "0")
    setup = (f"    int BH = batch_size * num_heads, S = seq_len, D = head_dim;\n"
             f"    if (BH <= 0 || S <= 0 || D <= 0 || D > {maxd}) return;\n"
             "    float scale = 1.0f / sqrtf((float)D);\n")
    naive = HDR + f'''
__global__ void attn_naive(int BH, int S, int D, float scale, const float *q, const float *k, const float *v, float *out) {{
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)BH * S) return;
    int i = (int)(t % S);
    long long base = (t / S) * S * D;
    const float *qi = q + t * D;
    float acc[{maxd}];
    for (int d = 0; d < D; d++) acc[d] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int j = 0; j < {lim}; j++) {{
        const float *kj = k + base + (long long)j * D, *vj = v + base + (long long)j * D;
        float sc = 0.0f;
        for (int d = 0; d < D; d++) sc += qi[d] * kj[d];
        sc *= scale;
        float mn = fmaxf(m, sc), corr = expf(m - mn), pj = expf(sc - mn);
        l = l * corr + pj;
        for (int d = 0; d < D; d++) acc[d] = acc[d] * corr + pj * vj[d];
        m = mn;
    }}
    for (int d = 0; d < D; d++) out[t * D + d] = acc[d] / l;
}}
extern "C" void attention_forward({cparams(sig)}) {{
{setup}    long long rows = (long long)BH * S;
    attn_naive<<<(unsigned)((rows + 127) / 128), 128>>>(BH, S, D, scale, q, k, v, out);
}}
'''
    per = (maxd + 31) // 32
    opt = HDR + CUDA_REDUCE + f'''
#define PER {per}
__global__ void attn_warp(int BH, int S, int D, float scale, const float *__restrict__ q, const float *__restrict__ k,
                          const float *__restrict__ v, float *__restrict__ out) {{
    long long t = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (t >= (long long)BH * S) return;  // whole warps leave together: t is uniform in a warp
    int i = (int)(t % S);
    long long base = (t / S) * S * D;
    float qr[PER], acc[PER];
#pragma unroll
    for (int c = 0; c < PER; c++) {{ int d = lane + 32 * c; qr[c] = d < D ? q[t * D + d] : 0.0f; acc[c] = 0.0f; }}
    float m = -INFINITY, l = 0.0f;
    for (int j = 0; j < {lim}; j++) {{
        const float *kj = k + base + (long long)j * D, *vj = v + base + (long long)j * D;
        float sc = 0.0f;
#pragma unroll
        for (int c = 0; c < PER; c++) {{ int d = lane + 32 * c; if (d < D) sc += qr[c] * kj[d]; }}
        sc = warp_sum(sc) * scale;
        float mn = fmaxf(m, sc), corr = expf(m - mn), pj = expf(sc - mn);
        l = l * corr + pj;
#pragma unroll
        for (int c = 0; c < PER; c++) {{ int d = lane + 32 * c; if (d < D) acc[c] = acc[c] * corr + pj * vj[d]; }}
        m = mn;
    }}
#pragma unroll
    for (int c = 0; c < PER; c++) {{ int d = lane + 32 * c; if (d < D) out[t * D + d] = acc[c] / l; }}
}}
extern "C" void attention_forward({cparams(sig)}) {{
{setup}    long long threads = (long long)BH * S * 32;
    attn_warp<<<(unsigned)((threads + 255) / 256), 256>>>(BH, S, D, scale, q, k, v, out);
}}
'''
    return [("naive", "one thread per query row, online softmax, register accumulator", naive),
            ("warp_per_query", "one warp per query row, lanes split head_dim, shuffle dot products", opt)]


def generate(rng: random.Random) -> list[dict]:
    out = []
    dims = ["batch_size", "num_heads", "seq_len", "head_dim"]
    for shape in SHAPES:
        for form in ("sdpa", "explicit"):
            for causal in (False, True):
                consts = dict(zip(dims, shape))
                maxd = shape[3]
                inputs = [(n, dims, "uniform(-1, 1)") for n in ("q", "k", "v")]
                outputs = [("out", dims)]
                sig = sig_of(dims, inputs, [], outputs)
                if form == "sdpa":
                    body = [f"return F.scaled_dot_product_attention(q, k, v, is_causal={causal})"]
                else:
                    body = ["s = torch.matmul(q, k.transpose(-2, -1)) / (q.shape[-1] ** 0.5)"]
                    if causal:
                        body += ["mask = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool, device=s.device).tril()",
                                 "s = s.masked_fill(~mask, float('-inf'))"]
                    body += ["return torch.matmul(torch.softmax(s, dim=-1), v)"]
                module = module_source(init_args=[], init_body=[], fwd_args=["q", "k", "v"], fwd_body=body, consts=consts,
                                       get_inputs=[f"torch.randn({', '.join(dims)})"] * 3,
                                       doc=f"{'Causal s' if causal else 'S'}caled dot-product attention ({form}).")
                small = [{"batch_size": 1, "num_heads": 1, "seq_len": 1, "head_dim": 1},
                         {"batch_size": 2, "num_heads": 3, "seq_len": 17, "head_dim": min(5, maxd)},
                         {"batch_size": 1, "num_heads": 2, "seq_len": 70, "head_dim": maxd}]
                name = f"{form}{'_causal' if causal else ''}_{'x'.join(map(str, shape))}"
                out.append(record(family=FAMILY, name=name, entry="attention_forward", sizes=dims, inputs=inputs,
                                  params=[], outputs=outputs, module=module, variants=sources(sig, maxd, causal),
                                  tests=tests_from(small, consts), tolerance={"rtol": 2e-3, "atol": 2e-4, "l2": 1e-3},
                                  meta={"ops": ["attention", form] + (["causal"] if causal else []), "difficulty": 4,
                                        "max_head_dim": maxd,
                                        "flops": "4*batch_size*num_heads*seq_len*seq_len*head_dim"}))
    return out
