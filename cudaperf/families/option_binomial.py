"""option_binomial family: binomial-tree option prices, one independent tree per option.

Guarantees: 80 distinct tasks over element type (float, double), the number of tree steps (16,
32, 64, 128, 256, a literal in the code), the contract (European/American call/put) and the
lattice (Cox-Ross-Rubinstein or Jarrow-Rudd). Perf option counts keep the serial reference at
most 2^29 node updates and 2^21 options. Inputs are drawn so that the CRR up-probability lies
in (0, 1).
Variants: naive (thread per option, the tree in thread-local memory), the same with 64-thread
blocks (spreads few heavy threads over more SMs), and one block per option with the tree level
in shared memory (thread per node, a barrier per step).
"""
from __future__ import annotations

import itertools
import random

FAMILY = "option_binomial"
CATEGORY = "finance"
_HDR = "#include <cuda_runtime.h>\n#include <math.h>\n"


from cudaperf.families._kernelgen import P as _p  # noqa: E402 - the shared signature-entry helper


def _task(T, N, contract, lattice):
    f = "f" if T == "float" else ""
    ex, kind = contract.split("_")
    pre = "s" if T == "float" else "d"
    entry = f"{pre}binomial_{lattice}_{contract}_{N}"
    sig = [_p("n", "int", "size"),
           _p("spot", f"const {T}*", "in", "n", "uniform(5, 30)"),
           _p("strike", f"const {T}*", "in", "n", "uniform(5, 30)"),
           _p("years", f"const {T}*", "in", "n", "uniform(0.25, 2)"),
           _p("rate", f"const {T}*", "in", "n", "uniform(0.01, 0.05)"),
           _p("vol", f"const {T}*", "in", "n", "uniform(0.1, 0.5)"),
           _p("price", f"{T}*", "out", "n")]
    params = ", ".join(f"{p['ctype'][:-1]} *{p['name']}" if p["ctype"].endswith("*")
                       else f"{p['ctype']} {p['name']}" for p in sig)
    args = ", ".join(p["name"] for p in sig)
    pay = (lambda st: f"({st} > K ? {st} - K : 0)") if kind == "call" else (lambda st: f"(K > {st} ? K - {st} : 0)")
    if lattice == "crr":
        setup = (f"{T} u = exp(v * sqrt(dt)), d = 1 / u;\n"
                 f"{T} p = (exp(r * dt) - d) / (u - d);\n")
    else:
        setup = (f"{T} drift = (r - 0.5{f} * v * v) * dt;\n"
                 f"{T} u = exp(drift + v * sqrt(dt)), d = exp(drift - v * sqrt(dt));\n"
                 f"{T} p = 0.5{f};\n")
    head = (f"{T} S = spot[o], K = strike[o], r = rate[o], v = vol[o];\n"
            f"{T} dt = years[o] / {N};\n" + setup + f"{T} disc = exp(-r * dt), ratio = d / u;\n")

    def ind(s, k):
        return "".join(" " * k + ln + "\n" for ln in s.strip("\n").split("\n"))

    step_ref = (f"{T} cont = disc * (p * val[i] + (1 - p) * val[i + 1]);\n"
                + (f"{T} exer = {pay('st')};\nval[i] = cont > exer ? cont : exer;\nst *= ratio;\n" if ex == "am"
                   else "val[i] = cont;\n"))
    tree = (f"{T} val[{N + 1}];\n"
            f"{T} st = S * pow(u, {N});\n"
            f"for (int i = 0; i <= {N}; i++) {{\n    val[i] = {pay('st')};\n    st *= ratio;\n}}\n"
            f"for (int s = {N - 1}; s >= 0; s--) {{\n"
            + ("    st = S * pow(u, s);\n" if ex == "am" else "")
            + f"    for (int i = 0; i <= s; i++) {{\n" + ind(step_ref, 8) + "    }\n}\n"
            f"price[o] = val[0];\n")
    body = head + tree
    ref = f"void {entry}({params}) {{\n    for (int o = 0; o < n; o++) {{\n" + ind(body, 8) + "    }\n}\n"
    per_opt = f"__device__ void {entry}_one(int o, {params}) {{\n" + ind(body, 4) + "}\n"

    def thread_var(bs, name):
        return _HDR + per_opt + f'''
__global__ void __launch_bounds__({bs}) {entry}_{name}({params}) {{
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o < n) {entry}_one(o, {args});
}}
extern "C" void {entry}({params}) {{
    if (n <= 0) return;
    {entry}_{name}<<<(n + {bs - 1}) / {bs}, {bs}>>>({args});
}}
'''
    TPB = ((N + 1 + 31) // 32) * 32
    exer = (f"            {T} st = S * pow(u, s - i) * pow(d, i);\n"
            f"            {T} exer = {pay('st')};\n            c = c > exer ? c : exer;\n" if ex == "am" else "")
    smem = _HDR + f'''
// one block per option: thread i owns node i of the current tree level (double-buffered)
__global__ void {entry}_blk({params}) {{
    __shared__ {T} lv[2][{N + 1}];
    int o = blockIdx.x, i = threadIdx.x;
    {T} S = spot[o], K = strike[o], r = rate[o], v = vol[o];
    {T} dt = years[o] / {N};
{ind(setup, 4)}    {T} disc = exp(-r * dt);
    if (i <= {N}) {{ {T} st = S * pow(u, {N} - i) * pow(d, i); lv[0][i] = {pay('st')}; }}
    __syncthreads();
    int cur = 0;
    for (int s = {N - 1}; s >= 0; s--) {{  // every thread runs every step: the barrier is uniform
        if (i <= s) {{
            {T} c = disc * (p * lv[cur][i] + (1 - p) * lv[cur][i + 1]);
{exer}            lv[cur ^ 1][i] = c;
        }}
        __syncthreads();
        cur ^= 1;
    }}
    if (i == 0) price[o] = lv[cur][0];
}}
extern "C" void {entry}({params}) {{
    if (n <= 0) return;
    {entry}_blk<<<n, {TPB}>>>({args});
}}
'''
    nopt = min(1 << 21, (1 << 29) // (N * N // 2))  # small trees: per-option setup dominates
    return {"task_id": f"c2cuda/{FAMILY}/{T}_{lattice}_{contract}_{N}", "track": "c2cuda", "entry": entry,
            "signature": sig, "reference": ref,
            "variants": [{"name": "naive", "strategy": "one thread per option, tree in thread-local memory", "source": thread_var(256, "k")},
                         {"name": "block_size_64", "strategy": "one thread per option, 64-thread blocks to occupy more SMs", "source": thread_var(64, "k64")},
                         {"name": "tiled_smem", "strategy": "one block per option, thread per node, tree level in shared memory", "source": smem}],
            "tests": [{"name": "one", "sizes": {"n": 1}}, {"name": "ragged", "sizes": {"n": 1003}},
                      {"name": "perf", "sizes": {"n": nopt}, "perf": True}],
            "tolerance": {"rtol": 2e-3, "atol": 1e-4, "l2": 1e-3} if T == "float" else {"rtol": 1e-7, "atol": 1e-9, "l2": 1e-8},
            "meta": {"flops": f"{3 * N * N}*n", "source": "generated",
                     "knobs": {"dtype": T, "steps": N, "contract": contract, "lattice": lattice}}}


def generate(rng: random.Random) -> list[dict]:
    out = [_task(*c) for c in itertools.product(("float", "double"), (16, 32, 64, 128, 256),
                                                ("eu_call", "eu_put", "am_call", "am_put"), ("crr", "jr"))]
    rng.shuffle(out)
    return out
