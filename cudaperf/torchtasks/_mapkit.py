"""Element-wise map tasks: one builder for activations and element-wise chains.

Guarantees: the module applies `stmts` (torch lines on tensor `x`, optionally reading a second
input `y` of the same shape and a per-channel parameter) and the two CUDA variants apply the
same element function: "naive" (one thread per element) and "vectorized" (grid-stride float4
loads/stores with a scalar tail; cudaMalloc'd buffers are 256-byte aligned, so the float4 view
of the first n/4*4 elements is aligned and in bounds).
"""
from __future__ import annotations

from cudaperf.torchtasks._kit import HDR, cparams, grid1d, module_source, prod, record, sig_of, tests_from


def map_task(*, family: str, name: str, entry: str, dims: list[str], consts: dict, small: list[dict],
             torch_lines: list[str], cuda_body: str, second: bool = False, chan: str | None = None,
             chan_dims: list[str] | None = None, doc: str, init: str = "uniform(-3, 3)",
             tol: dict | None = None, meta: dict | None = None) -> dict:
    """`chan`: name of a per-channel parameter (dims[1] channels, broadcast over dims[2:])."""
    inputs = [("x", dims, init)] + ([("y", dims, init)] if second else [])
    params = [(chan, chan, chan_dims, "uniform(-1, 1)")] if chan else []
    outputs = [("out", dims)]
    sig = sig_of(dims, inputs, params, outputs)
    n = prod([f"(long long){d}" for d in dims])
    inner = prod([f"(long long){d}" for d in dims[2:]]) if chan else "1"
    C = dims[1] if chan else "1"
    fn = ("__device__ __forceinline__ float elem(float v, float yv, float pc) {\n    "
          + cuda_body + "\n    return v;\n}\n")
    yarg = "const float *__restrict__ y, " if second else ""
    parg = "const float *__restrict__ p, int C, long long inner, " if chan else ""
    ycall = "y, " if second else ""
    pcall = f"{chan}, {C}, {inner}, " if chan else ""
    yv = lambda i: f"y[{i}]" if second else "0.0f"
    pc = lambda i: f"p[(({i}) / inner) % C]" if chan else "0.0f"
    naive = HDR + fn + f'''
__global__ void map_naive(long long n, const float *x, {yarg}{parg}float *out) {{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = elem(x[i], {yv('i')}, {pc('i')});
}}
extern "C" void {entry}({cparams(sig)}) {{
    long long n = {n};
    if (n <= 0) return;
    map_naive<<<{grid1d('n')}, 256>>>(n, x, {ycall}{pcall}out);
}}
'''
    comps = "xyzw"
    body4 = "\n".join(
        f"        o.{c} = elem(a.{c}, {'b.' + c if second else '0.0f'}, {pc(f'4 * i + {j}')});"
        for j, c in enumerate(comps))
    vec = HDR + fn + f'''
__global__ void map_vec4(long long n4, const float4 *__restrict__ x, {"const float4 *__restrict__ y, " if second else ""}{parg}float4 *__restrict__ out) {{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
         i += (long long)blockDim.x * gridDim.x) {{
        float4 a = x[i];{" float4 b = y[i];" if second else ""}
        float4 o;
{body4}
        out[i] = o;
    }}
}}
__global__ void map_tail(long long start, long long n, const float *x, {yarg}{parg}float *out) {{
    long long i = start + threadIdx.x;
    if (i < n) out[i] = elem(x[i], {yv('i')}, {pc('i')});
}}
extern "C" void {entry}({cparams(sig)}) {{
    long long n = {n};
    if (n <= 0) return;
    long long n4 = n / 4;
    if (n4 > 0) {{
        long long blocks = (n4 + 255) / 256;
        if (blocks > 132LL * 32) blocks = 132LL * 32;
        map_vec4<<<(unsigned)blocks, 256>>>(n4, (const float4 *)x, {"(const float4 *)y, " if second else ""}{pcall}(float4 *)out);
    }}
    if (n - 4 * n4 > 0) map_tail<<<1, 32>>>(4 * n4, n, x, {ycall}{pcall}out);
}}
'''
    init_body = ([f"self.{chan} = nn.Parameter(torch.randn({', '.join(chan_dims)}))"] if chan else [])
    init_args = [d for d in chan_dims if d in consts] if chan else []
    args = ["x", "y"] if second else ["x"]
    module = module_source(init_args=init_args, init_body=init_body, fwd_args=args,
                           fwd_body=torch_lines + ["return x"], consts=consts,
                           get_inputs=[f"torch.randn({', '.join(dims)})" for _ in args], doc=doc)
    return record(family=family, name=name, entry=entry, sizes=list(dims), inputs=inputs, params=params,
                  outputs=outputs, module=module,
                  variants=[("naive", "one thread per element", naive),
                            ("vectorized", "grid-stride float4 loads and stores, scalar tail", vec)],
                  tests=tests_from(small, {d: consts[d] for d in dims}), tolerance=tol, meta=meta)
