"""Batched sampling from a Qwen3 policy with a preallocated KV cache, one CUDA graph per decoding step.

Why: the mini policies are small (M: 8 layers of width 256), so a decoding step of transformers'
``generate`` is bound by launching a few hundred small kernels and by its Python around them, not
by arithmetic: 12 ms a step for a batch of 128 on the H100 (session 25, ``benchmarks/gen_speed.py``),
so generation was 12-16 s of a 25 s GRPO step. The static-cache path of transformers compiles the
step with torch.compile, which outlasted a 120 s limit. Here the step is captured once per batch
as a CUDA graph (milliseconds to capture) and replayed.

Guarantees of `generate`:
- Same interface as ``model.generate(input_ids, attention_mask, ...)`` for left-padded prompts: it
  returns the prompts followed by the new tokens, ``pad_token_id`` after a row's end token, at most
  ``max_new_tokens`` new columns, and stops early (up to ``check_every`` steps late, trailing pad
  columns dropped) once every row has ended.
- The model's own modules compute every projection, norm, rotary embedding and MLP; only the
  attention over the preallocated cache and the cache writes are done here. Greedy decoding gives
  the tokens of transformers' ``generate`` (tested on the CPU, where the same code runs without a
  graph); sampling draws from ``softmax(logits / temperature)`` restricted to the nucleus
  ``top_p``, as transformers does with ``top_k=0``, with its own random stream.
- Qwen3 causal LMs only (``config.model_type == "qwen3"``, no sliding-window layers); anything else
  raises ValueError naming what is unsupported, so a caller never silently samples another model.
- ``callback(sequences_so_far)`` runs after every step (the compile-ahead of `cudaperf.compileahead`
  reads the rows that ended); it must not change the tensor.
"""
from __future__ import annotations

from typing import Any, Callable

NEG = float("-inf")


def _parts(model):
    """(embed, layers, final norm, rotary, lm_head) of a Qwen3ForCausalLM, or ValueError."""
    cfg = getattr(model, "config", None)
    if getattr(cfg, "model_type", None) != "qwen3":
        raise ValueError(f"fastgen decodes Qwen3 causal LMs only, not {getattr(cfg, 'model_type', type(model).__name__)!r}")
    if "sliding_attention" in (getattr(cfg, "layer_types", None) or []):
        raise ValueError("fastgen: sliding-window attention layers are not supported")
    inner = getattr(model, "model", None)
    if inner is None or not hasattr(inner, "layers") or not hasattr(model, "lm_head"):
        raise ValueError(f"fastgen: {type(model).__name__} has no .model.layers / .lm_head (a wrapped model?)")
    return inner.embed_tokens, list(inner.layers), inner.norm, inner.rotary_emb, model.lm_head


class _Decoder:
    """The cache, masks and the forward pass of one batch shape (B rows, L cache positions)."""

    def __init__(self, model, batch: int, length: int, dtype, device):
        import torch

        self.embed, self.layers, self.norm, self.rotary, self.lm_head = _parts(model)
        a = self.layers[0].self_attn
        self.hd = a.head_dim
        self.n_kv = model.config.num_key_value_heads
        self.groups = model.config.num_attention_heads // self.n_kv
        self.scale = a.scaling
        shape = (batch, self.n_kv, length, self.hd)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in self.layers]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in self.layers]
        self.ar = torch.arange(length, device=device)

    def forward(self, ids, pos, at, mask):
        """Logits of the last position of `ids` [B, T] at positions `pos` [B, T]; their keys and
        values are written at cache columns `at` [T]. Prefill (T > 1, `at` the first T columns):
        `mask` [B, 1, T, T] boolean, True where a query sees a key. A decoding step (T == 1):
        `mask` [B, 1, 1, L] additive over the whole cache."""
        import torch
        import torch.nn.functional as F
        from transformers.models.qwen3.modeling_qwen3 import apply_rotary_pos_emb

        h = self.embed(ids)
        cos, sin = self.rotary(h, pos)
        b, t = ids.shape
        for i, layer in enumerate(self.layers):
            a = layer.self_attn
            x = layer.input_layernorm(h)
            q = a.q_norm(a.q_proj(x).view(b, t, -1, self.hd)).transpose(1, 2)
            k = a.k_norm(a.k_proj(x).view(b, t, -1, self.hd)).transpose(1, 2)
            v = a.v_proj(x).view(b, t, -1, self.hd).transpose(1, 2)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
            self.k[i].index_copy_(2, at, k.to(self.k[i].dtype))
            self.v[i].index_copy_(2, at, v.to(self.v[i].dtype))
            if t > 1:
                # Prefill: the prompt attends to itself only. transformers' fused attention, which
                # never holds a score per (query, key) pair: a batch of 128 prompts of 3,072 tokens
                # would need 50 GB of scores.
                kk = k.repeat_interleave(self.groups, dim=1) if self.groups > 1 else k
                vv = v.repeat_interleave(self.groups, dim=1) if self.groups > 1 else v
                o = F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask, scale=self.scale)
                h = h + a.o_proj(o.transpose(1, 2).reshape(b, t, -1))
                h = h + layer.mlp(layer.post_attention_layernorm(h))
                continue
            # Grouped-query attention without copying the cache per query head (as repeat_kv would):
            # the queries of one key/value head are stacked along the query axis, so each cache
            # column is read once per step. Query head j uses key/value head j // groups.
            qg = q.reshape(b, self.n_kv, self.groups * t, self.hd)
            w = torch.matmul(qg, self.k[i].transpose(2, 3).to(q.dtype)) * self.scale
            w = w + mask.repeat(1, 1, self.groups, 1)
            w = torch.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
            o = torch.matmul(w, self.v[i].to(q.dtype)).view(b, -1, t, self.hd)
            h = h + a.o_proj(o.transpose(1, 2).reshape(b, t, -1))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        return self.lm_head(self.norm(h[:, -1:]))[:, 0].float()

    def prefill_mask(self, attn, width: int):
        """[B, 1, P, P] boolean: query i sees prompt keys j <= i that are not padding, and itself
        (a padding query then has one key, so no row is all masked and no NaN reaches the cache)."""
        i = self.ar[:width, None]
        j = self.ar[None, :width]
        ok = ((j <= i)[None] & attn.bool()[:, None, :]) | (j == i)[None]
        return ok[:, None]


def _sample(logits, temperature: float, top_p: float, generator=None):
    import torch

    if temperature <= 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        sp, si = probs.sort(dim=-1, descending=True)
        # keep the smallest prefix whose mass reaches top_p (the first token always)
        drop = (sp.cumsum(dim=-1) - sp) >= top_p
        sp = sp.masked_fill(drop, 0.0)
        return si.gather(-1, torch.multinomial(sp, 1, generator=generator))[:, 0]
    return torch.multinomial(probs, 1, generator=generator)[:, 0]


def generate(model, input_ids, attention_mask, *, max_new_tokens: int, eos_token_id: int, pad_token_id: int,
             temperature: float = 0.0, top_p: float = 1.0, graph: bool | None = None, check_every: int = 16,
             callback: Callable[[Any], Any] | None = None, generator=None):
    """Prompts (left-padded, [B, P]) followed by up to `max_new_tokens` new tokens; see the module
    docstring. `graph` None: a CUDA graph where the model is on a CUDA device."""
    import torch

    _parts(model)  # a model this module cannot decode fails here, before anything is allocated
    if max_new_tokens < 1:
        raise ValueError("max_new_tokens must be >= 1")
    if input_ids.shape != attention_mask.shape:
        raise ValueError(f"input_ids {tuple(input_ids.shape)} and attention_mask {tuple(attention_mask.shape)} differ")
    if bool((attention_mask[:, -1] == 0).any()):
        raise ValueError("prompts must be left-padded (a row's last column is padding)")
    param = next(model.parameters())
    device = param.device
    graph = device.type == "cuda" if graph is None else graph
    if graph and device.type != "cuda":
        raise ValueError("a CUDA graph needs the model on a CUDA device")
    b, width = input_ids.shape
    length = width + max_new_tokens
    with torch.no_grad():
        dec = _Decoder(model, b, length, param.dtype, device)
        ids, attn = input_ids.to(device), attention_mask.to(device)
        pos = (attn.long().cumsum(-1) - 1).masked_fill(attn == 0, 1)
        logits = dec.forward(ids, pos, dec.ar[:width], dec.prefill_mask(attn, width))
        prompt_ok = torch.nn.functional.pad(attn.bool(), (0, max_new_tokens))
        # the decoding step's static inputs (updated in place: a captured graph reads them)
        tok = torch.empty(b, 1, dtype=torch.long, device=device)
        step_pos = pos[:, -1:].clone()
        cur = torch.full((1,), width - 1, dtype=torch.long, device=device)
        out = torch.full((b, max_new_tokens), pad_token_id, dtype=torch.long, device=device)
        done = torch.zeros(b, dtype=torch.bool, device=device)

        def step():
            sees = prompt_ok | ((dec.ar >= width) & (dec.ar <= cur))[None]
            mask = torch.zeros(sees.shape, device=device).masked_fill(~sees, NEG)[:, None, None]
            return dec.forward(tok, step_pos, cur, mask)

        g = static_logits = None
        n = 0
        for t in range(max_new_tokens):
            nxt = _sample(logits, temperature, top_p, generator)
            nxt = torch.where(done, torch.full_like(nxt, pad_token_id), nxt)
            out[:, t] = nxt
            done |= nxt == eos_token_id
            n = t + 1
            if callback is not None:
                callback(torch.cat([ids, out[:, :n]], dim=1))
            if n == max_new_tokens or (n % check_every == 0 and bool(done.all())):
                break
            tok.copy_(nxt[:, None])
            step_pos += 1
            cur += 1
            if not graph:
                logits = step()
                continue
            if g is None:
                # warm-up on a side stream (lazy init, cuBLAS workspaces), then capture (which
                # runs nothing); the warm-up and the first replay both compute this very step, so
                # its keys and values are written twice, the same both times
                s = torch.cuda.Stream(device)
                s.wait_stream(torch.cuda.current_stream(device))
                with torch.cuda.stream(s):
                    step()
                torch.cuda.current_stream(device).wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    static_logits = step()
            g.replay()
            logits = static_logits.clone()
        if bool(done.all()):
            # drop the columns after the last row ended, as generate stops there
            n = int((out[:, :n] == eos_token_id).int().argmax(dim=1).max()) + 1
        return torch.cat([ids, out[:, :n]], dim=1)


__all__ = ["generate"]
