"""black_scholes family: closed-form European option prices and greeks, one option per element.

Guarantees: 80 distinct tasks over the outputs (call, put, both, deltas, gamma, vega, call theta,
rhos, call with delta, call with delta/gamma/vega), the normal CDF (erfc-based or the
Abramowitz-Stegun polynomial used in classic GPU samples), where rate and volatility come from
(per-option arrays or scalars) and element type (float, double). Inputs are drawn in ranges
where every formula is finite (S in [5, 30], K in [1, 100], T in [0.25, 10], vol >= 0.1). The
per-option formula is one __device__ function shared by all variants, so variants differ only
in how work is mapped: naive (thread per option), grid-stride with read-only loads, and four
options per thread.
"""
from __future__ import annotations

import itertools
import random

FAMILY = "black_scholes"
CATEGORY = "finance"
_HDR = "#include <cuda_runtime.h>\n#include <math.h>\n"
_OUTS = {
    "call": ["call"], "put": ["put"], "callput": ["call", "put"], "deltas": ["delta_c", "delta_p"],
    "gamma": ["gamma"], "vega": ["vega"], "theta": ["theta_c"], "rhos": ["rho_c", "rho_p"],
    "call_delta": ["call", "delta_c"], "call_greeks": ["call", "delta_c", "gamma", "vega"],
}
_EXPR = {
    "call": "S * cnd(d1) - K * disc * cnd(d2)",
    "put": "K * disc * cnd(-d2) - S * cnd(-d1)",
    "delta_c": "cnd(d1)",
    "delta_p": "cnd(d1) - 1",
    "gamma": "npdf(d1) / (S * vol * sqT)",
    "vega": "S * npdf(d1) * sqT",
    "theta_c": "-S * npdf(d1) * vol / (2 * sqT) - rate * K * disc * cnd(d2)",
    "rho_c": "K * T * disc * cnd(d2)",
    "rho_p": "-K * T * disc * cnd(-d2)",
}


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper


def _helpers(T, cndk, qual):
    f = "f" if T == "float" else ""
    npdf = f"""{qual}{T} npdf({T} x) {{
    return 0.39894228040143267794{f} * exp(-0.5{f} * x * x);
}}
"""
    if cndk == "erf":
        cnd = f"""{qual}{T} cnd({T} x) {{
    return 0.5{f} * erfc(-x * 0.70710678118654752440{f});
}}
"""
    else:
        cnd = f"""{qual}{T} cnd({T} d) {{
    const {T} A1 = 0.31938153{f}, A2 = -0.356563782{f}, A3 = 1.781477937{f};
    const {T} A4 = -1.821255978{f}, A5 = 1.330274429{f};
    {T} k = 1.0{f} / (1.0{f} + 0.2316419{f} * fabs(d));
    {T} c = 0.39894228040143267794{f} * exp(-0.5{f} * d * d) *
        (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))));
    if (d > 0) c = 1.0{f} - c;
    return c;
}}
"""
    return cnd + npdf


def _task(T, kind, cndk, rv):
    outs = _OUTS[kind]
    pre = "s" if T == "float" else "d"
    entry = f"{pre}bs_{kind}_{cndk}{'_scalar_rv' if rv == 'scalar' else ''}"
    sig = [_p("n", "int", "size"),
           _p("spot", f"const {T}*", "in", "n", "uniform(5, 30)"),
           _p("strike", f"const {T}*", "in", "n", "uniform(1, 100)"),
           _p("years", f"const {T}*", "in", "n", "uniform(0.25, 10)")]
    if rv == "array":
        sig += [_p("rate", f"const {T}*", "in", "n", "uniform(0.01, 0.05)"),
                _p("vol", f"const {T}*", "in", "n", "uniform(0.1, 0.5)")]
    else:
        sig += [_p("rate", T, "scalar", init="uniform(0.01, 0.05)"), _p("vol", T, "scalar", init="uniform(0.1, 0.5)")]
    sig += [_p(o, f"{T}*", "out", "n") for o in outs]
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)
    ri = "[i]" if rv == "array" else ""
    f = "f" if T == "float" else ""
    # per-option body shared by reference and device code
    core = (f"{T} S = spot[i], K = strike[i], T = years[i];\n"
            + (f"{T} rate_i = rate[i], vol_i = vol[i];\n" if rv == "array" else "")
            + f"{T} sqT = sqrt(T);\n"
            f"{T} d1 = (log(S / K) + ({'rate_i' if rv == 'array' else 'rate'} + 0.5{f} * {'vol_i * vol_i' if rv == 'array' else 'vol * vol'}) * T) / ({'vol_i' if rv == 'array' else 'vol'} * sqT);\n"
            f"{T} d2 = d1 - {'vol_i' if rv == 'array' else 'vol'} * sqT;\n"
            f"{T} disc = exp(-{'rate_i' if rv == 'array' else 'rate'} * T);\n")
    stores = ""
    for o in outs:
        e = _EXPR[o]
        if rv == "array":
            e = e.replace("vol", "vol_i").replace("rate", "rate_i")
        stores += f"{o}[i] = {e};\n"
    body = core + stores

    def indent(s, k):
        return "".join(" " * k + ln + "\n" for ln in s.strip("\n").split("\n"))

    ref = (_helpers(T, cndk, "static ") + f"\nvoid {entry}({params}) {{\n    for (int i = 0; i < n; i++) {{\n"
           + indent(body, 8) + "    }\n}\n")
    dev_params = params
    devfn = f"__device__ __forceinline__ void {entry}_one(int i, {dev_params}) {{\n" + indent(body, 4) + "}\n"
    common = _HDR + _helpers(T, cndk, "__device__ __forceinline__ ") + devfn
    naive = common + f'''
__global__ void {entry}_k({params}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {entry}_one(i, {args});
}}
extern "C" void {entry}({params}) {{
    if (n <= 0) return;
    {entry}_k<<<(n + 255) / 256, 256>>>({args});
}}
'''
    rparams = ", ".join(f"{p['ctype'][:-1]} *__restrict__ {p['name']}" if p["ctype"].endswith("*")
                        else f"{p['ctype']} {p['name']}" for p in sig)
    gs = common + f'''
__global__ void __launch_bounds__(128) {entry}_gs({rparams}) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        {entry}_one(i, {args});
}}
extern "C" void {entry}({params}) {{
    if (n <= 0) return;
    int blocks = (n + 127) / 128; if (blocks > 132 * 16) blocks = 132 * 16;
    {entry}_gs<<<blocks, 128>>>({args});
}}
'''
    ilp = common + f'''
// four options per thread, a block-width apart so each of the four loads stays coalesced
__global__ void {entry}_x4({rparams}) {{
    int base = blockIdx.x * blockDim.x * 4 + threadIdx.x;
#pragma unroll
    for (int u = 0; u < 4; u++) {{
        int i = base + u * blockDim.x;
        if (i < n) {entry}_one(i, {args});
    }}
}}
extern "C" void {entry}({params}) {{
    if (n <= 0) return;
    {entry}_x4<<<(n + 1023) / 1024, 256>>>({args});
}}
'''
    return {"task_id": f"c2cuda/{FAMILY}/{T}_{kind}_{cndk}_{rv}", "track": "c2cuda", "entry": entry,
            "signature": sig, "reference": ref,
            "variants": [{"name": "naive", "strategy": "one thread per option", "source": naive},
                         {"name": "grid_stride", "strategy": "grid-stride loop, 128-thread blocks, restrict pointers", "source": gs},
                         {"name": "loop_unrolled", "strategy": "four options per thread, block-strided for coalescing", "source": ilp}],
            "tests": [{"name": "one", "sizes": {"n": 1}}, {"name": "ragged", "sizes": {"n": 1003}},
                      {"name": "perf", "sizes": {"n": 12000000 if T == "float" else 8000000}, "perf": True}],
            "tolerance": {"rtol": 1e-3, "atol": 2e-4, "l2": 1e-3} if T == "float" else {"rtol": 1e-7, "atol": 1e-9, "l2": 1e-8},
            "meta": {"flops": f"{40 + 12 * len(outs)}*n", "source": "generated",
                     "knobs": {"dtype": T, "outputs": outs, "cnd": cndk, "rate_vol": rv}}}


def generate(rng: random.Random) -> list[dict]:
    out = [_task(*c) for c in itertools.product(("float", "double"), sorted(_OUTS), ("erf", "poly"), ("array", "scalar"))]
    rng.shuffle(out)
    return out
