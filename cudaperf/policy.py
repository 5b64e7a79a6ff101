"""Policy models: tokenizer, the small Qwen3 family (S/M/L), SFT warm start, sampling, paper loader.

Guarantees:
- `train_tokenizer` builds a byte-level BPE tokenizer (the `tokenizers` library) with the special
  tokens ``<|endoftext|>`` (padding), ``<|im_start|>``, ``<|im_end|>`` (end of turn = EOS) and a
  Qwen-style chat template, returned as a `PreTrainedTokenizerFast` that `save_pretrained` /
  `load_tokenizer` round-trip. Byte-level means every string encodes (no unknown token) and
  decodes back to itself.
- `build_model(size, tokenizer)` returns a freshly initialised `Qwen3ForCausalLM` whose config
  comes from `MODEL_SPECS` (architecture of Qwen3-8B/14B/32B, scaled down; tied embeddings),
  with the tokenizer's vocabulary and special-token ids. No weights are downloaded, ever.
- `sft_examples` builds TRL prompt-completion records from task variants only (every variant,
  naive and optimised) and refinement transcripts whose feedback is an `EvalResult` stating
  only what is known: correct (the variants are verified), static features computed from the
  attempt's source, and speedup / CV only when a measurement of that variant was given.
- `train_sft` runs TRL's `SFTTrainer` (loss on the completion only) and stops at `max_steps`
  or the wall-clock budget, whichever comes first; it returns the logged loss curve.
- `sample` returns, for each task, exactly ``n`` completions (strings, special tokens removed),
  generated in batches of prompts padded on the left so that a batch gives the same greedy
  output as one prompt alone.
- `load_policy` loads any causal-LM checkpoint (Qwen3-8B/14B/32B by path or hub name), in 4-bit
  NF4 via bitsandbytes when asked (CUDA only: on a CPU it raises instead of silently loading
  full precision) and wrapped with peft LoRA adapters when `lora` is given.
"""
from __future__ import annotations

import copy
import math
import random
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Iterable, Sequence

from cudaperf import prompts
from cudaperf.result import EvalResult
from cudaperf.tasks import Task

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
PAD_TOKEN, EOS_TOKEN = "<|endoftext|>", "<|im_end|>"

# Qwen's ChatML layout: every message is <|im_start|>role\ncontent<|im_end|>\n, and the
# generation prompt opens an assistant turn. Same layout as the real Qwen3 checkpoints, so the
# prompts module's messages mean the same thing to a mini policy and to Qwen3-32B.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Scaled-down Qwen3 shapes standing in for 8B / 14B / 32B in the size ablation. Parameter counts
# (tied embeddings, the project tokenizer's 7,222 tokens): tiny 0.25M, S 1.91M, M 8.15M,
# L 25.7M (tests/test_policy.py checks the ranges). Head dim stays 32-64 and GQA keeps 2 query heads per KV head, as in Qwen3.
MODEL_SPECS: dict[str, dict[str, int]] = {
    "tiny": dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, head_dim=16),
    "S": dict(hidden_size=128, intermediate_size=384, num_hidden_layers=5, num_attention_heads=4,
              num_key_value_heads=2, head_dim=32),
    "M": dict(hidden_size=256, intermediate_size=768, num_hidden_layers=8, num_attention_heads=8,
              num_key_value_heads=4, head_dim=32),
    "L": dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=7, num_attention_heads=8,
              num_key_value_heads=4, head_dim=64),
}
PAPER_MODELS = {"S": "Qwen/Qwen3-8B", "M": "Qwen/Qwen3-14B", "L": "Qwen/Qwen3-32B"}
LORA_DEFAULTS = {"r": 16, "alpha": 32, "dropout": 0.05,
                 "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                    "down_proj"]}


from cudaperf.config import _f  # noqa: E402 - the shared help-string field helper


@dataclass(frozen=True)
class PolicyConfig:
    """Policy model, tokenizer, SFT and sampling settings (one per profile)."""

    model_size: str = _f("tiny", "Mini-policy size: tiny (tests/smoke) | S | M | L (stand-ins for 8B/14B/32B).")
    model_name_or_path: str = _f("", "Checkpoint to load (local path or hub name); empty = build "
                                     "`model_size` from a config (mini profile).")
    quantize_4bit: bool = _f(False, "Load the checkpoint in 4-bit NF4 with bitsandbytes (QLoRA; CUDA only).")
    lora: dict = _f({}, "LoRA settings (r, alpha, dropout, target_modules); empty = full fine-tuning.")
    tokenizer_path: str = _f("data/tokenizer", "Where the project's BPE tokenizer is saved / loaded.")
    vocab_size: int = _f(8192, "BPE vocabulary size including special tokens.")
    max_length: int = _f(3072, "Longest SFT example in tokens (prompt + completion); longer ones are dropped.")
    sft_refine: bool = _f(True, "Add refinement transcripts (attempt -> feedback -> other variant) to SFT.")
    sft_renames: int = _f(0, "Renamed copies of each train task in SFT (entry point, the kernels named after it and "
                             "the parameters renamed at random), so the policy learns to take names from the prompt.")
    sft_copies: int = _f(0, "Copy records per train task in SFT (`copy_examples`): a renamed program shown in the "
                            "prompt and repeated verbatim, to teach in-context copying of names (0 = none).")
    sft_max_examples: int = _f(0, "Use at most this many SFT examples (0 = all).")
    sft_epochs: float = _f(3.0, "Passes over the SFT data (max_steps, if set, wins).")
    sft_max_steps: int = _f(-1, "Optimiser steps (-1: from sft_epochs).")
    sft_time_budget_s: float = _f(0.0, "Stop SFT after this many seconds (0 = no limit).")
    learning_rate: float = _f(1e-3, "Peak learning rate (cosine decay, linear warm-up).")
    warmup: float = _f(0.03, "Warm-up: a fraction of the steps (< 1) or a number of steps.")
    weight_decay: float = _f(0.01, "AdamW weight decay.")
    batch_size: int = _f(8, "SFT examples per device per step.")
    grad_accum: int = _f(1, "Gradient accumulation steps.")
    logging_steps: int = _f(10, "Log the training loss every this many steps.")
    cudnn_attention: bool = _f(False, "Let PyTorch's SDPA pick cuDNN attention in training (see `training_attention`).")
    n_samples: int = _f(5, "Samples per task in evaluation (pass@1 and pass@5 come from these).")
    temperature: float = _f(0.8, "Sampling temperature (0 = greedy).")
    top_p: float = _f(0.95, "Nucleus sampling mass.")
    max_new_tokens: int = _f(1536, "Longest completion sampled, in tokens.")
    sample_batch_size: int = _f(64, "Prompts x samples generated per batch.")
    seed: int = _f(0, "Seed for model initialisation, data order and sampling.")

    @classmethod
    def for_profile(cls, name: str, **overrides: Any) -> "PolicyConfig":
        """Settings of profile `name` (smoke | mini | paper) with keyword overrides."""
        from cudaperf.config import settings_for_profile

        return settings_for_profile(_POLICY_PROFILES, name, overrides)


_POLICY_PROFILES = {
    "smoke": PolicyConfig(model_size="tiny", sft_max_examples=64, sft_max_steps=12,
                          batch_size=4, learning_rate=3e-3, logging_steps=1, n_samples=2,
                          max_new_tokens=64, sample_batch_size=8),
    "mini": PolicyConfig(model_size="L", sft_epochs=3.0, sft_renames=1, sft_time_budget_s=400.0, batch_size=16,
                         learning_rate=1e-3, logging_steps=20, sample_batch_size=256),
    "paper": PolicyConfig(model_size="L", model_name_or_path=PAPER_MODELS["L"], quantize_4bit=True,
                          lora=dict(LORA_DEFAULTS), learning_rate=1e-4, batch_size=2, grad_accum=8,
                          sft_epochs=1.0, max_length=4096, max_new_tokens=2048, sample_batch_size=16),
}


# --------------------------------------------------------------------------- tokenizer


def tokenizer_corpus(tasks: Iterable[Task], python_files: Iterable[str | Path] = (),
                     max_python_chars: int = 400_000) -> Iterable[str]:
    """Texts the tokenizer learns from: C references, CUDA variants, prompt text, some Python.

    The prompt text (system prompt, task prompts, feedback phrases) is included so that the
    fixed wording of every turn costs few tokens.
    """
    yield prompts.SYSTEM_PROMPT
    yield prompts.REVISE
    for t in tasks:
        yield t.reference
        yield prompts.task_user_text(t)
        for v in t.variants:
            yield v.source
    for msg in _feedback_phrases():
        yield msg
    used = 0
    for p in python_files:
        if used >= max_python_chars:
            break
        text = Path(p).read_text(errors="replace")[: max_python_chars - used]
        used += len(text)
        yield text


def _feedback_phrases() -> list[str]:
    """Feedback texts of every kind, so their wording is in the vocabulary."""
    f = {"coal": 0.4, "occ": 0.3, "div": 2.0, "xfer": 2.0, "atomics": 16.0, "tpb": 48.0, "kernels": 8.0}
    rs = [
        EvalResult("x", "x", status="compile_error",
                   compile_log='cand.cu(3): error: identifier "x" is undefined\n  y = x;\n      ^\n'),
        EvalResult("x", "x", status="wrong", compiled=True, pass_rate=0.5, correct=False, features=f,
                   failures=[{"test": "odd", "sizes": {"n": 1003}, "reason": "mismatch", "param": "y",
                              "summary": "3 wrong element(s), first at index 1000, max abs err 1, "
                                         "max rel err 1, l2 rel 0.1",
                              "examples": [{"index": 1000, "expected": 1.0, "got": 0.0}]}]),
        EvalResult("x", "x", status="correct", compiled=True, pass_rate=1.0, correct=True,
                   speedup=2.0, cv=0.01, runtime_ms=0.5, features=f),
        EvalResult("x", "x", status="compiled", compiled=True),
    ]
    return [prompts.feedback_message(r) for r in rs]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 8192, min_frequency: int = 2):
    """Byte-level BPE trained on `texts`, wrapped as a PreTrainedTokenizerFast with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS_TOKEN, pad_token=PAD_TOKEN,
                                   model_max_length=1 << 20)
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "right"
    return fast


def has_weights(path: str | Path) -> bool:
    """Whether a local folder is a loadable checkpoint: a config and weight files (a folder with
    only the config and evaluation files, as data/models/sft-* is committed, is not)."""
    p = Path(path)
    return (p / "config.json").is_file() and any(
        (p / n).is_file() for n in ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                                    "pytorch_model.bin.index.json", "adapter_model.safetensors"))


def load_tokenizer(path: str | Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


def repo_python_files(root: str | Path = ".") -> list[Path]:
    return sorted(Path(root, "cudaperf").rglob("*.py"))


def get_tokenizer(cfg: PolicyConfig, tasks: Sequence[Task] = (), root: str | Path = "."):
    """The project tokenizer: loaded from `cfg.tokenizer_path` if saved there, else trained on
    the TRAIN split of `tasks` (never val/test) plus the repo's Python, and saved."""
    path = Path(root, cfg.tokenizer_path)
    if (path / "tokenizer.json").is_file():
        return load_tokenizer(path)
    train = [t for t in tasks if t.split == "train"]
    if not train:
        raise ValueError(f"no tokenizer at {path} and no train-split tasks to train one on")
    tok = train_tokenizer(tokenizer_corpus(train, repo_python_files(root)), cfg.vocab_size)
    tok.save_pretrained(str(path))
    return tok


def tokenizer_stats(tok, texts: dict[str, Sequence[str]]) -> list[dict[str, Any]]:
    """Rows (kind, texts, mean/median/p95/max tokens, chars per token) per named group of texts."""
    import numpy as np

    rows = []
    for kind, group in texts.items():
        if not group:
            continue
        n = np.array([len(tok(t, add_special_tokens=False)["input_ids"]) for t in group])
        chars = sum(len(t) for t in group)
        rows.append({"kind": kind, "texts": len(group), "mean_tokens": float(n.mean()),
                     "median_tokens": float(np.median(n)), "p95_tokens": float(np.percentile(n, 95)),
                     "max_tokens": int(n.max()), "chars_per_token": chars / max(1, int(n.sum()))})
    return rows


# --------------------------------------------------------------------------- models


def model_config(size: str, tokenizer, max_length: int = 2048):
    """Qwen3Config for a mini policy of `size` (see MODEL_SPECS) matching `tokenizer`."""
    from transformers import Qwen3Config

    if size not in MODEL_SPECS:
        raise ValueError(f"unknown model size {size!r}; choose one of {list(MODEL_SPECS)}")
    return Qwen3Config(vocab_size=len(tokenizer), max_position_embeddings=max_length,
                       tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id,
                       eos_token_id=tokenizer.eos_token_id, bos_token_id=None,
                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                       **MODEL_SPECS[size])


def build_model(size: str, tokenizer, max_length: int = 2048, seed: int = 0):
    """A freshly initialised Qwen3ForCausalLM of `size` (deterministic for a seed)."""
    import torch
    from transformers import GenerationConfig, Qwen3ForCausalLM

    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(model_config(size, tokenizer, max_length))
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id)
    return model


def count_parameters(model) -> int:
    """Distinct trainable-or-not parameters (tied embeddings counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def save_policy(model, tokenizer, path: str | Path, max_shard_size: str = "16MB") -> list[Path]:
    """Save fp16 safetensors in shards of at most `max_shard_size`, plus the tokenizer."""
    import torch

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    half = copy.deepcopy(model).to(torch.float16)
    half.save_pretrained(str(path), max_shard_size=max_shard_size, safe_serialization=True)
    tokenizer.save_pretrained(str(path))
    return sorted(path.glob("*.safetensors"))


# --------------------------------------------------------------------------- SFT data


def load_variant_measurements(path: str | Path) -> dict[tuple[str, str], dict[str, float]]:
    """{(task_id, variant): {"speedup", "cv"}} from measured variants (cv: the robust CV where a
    row has one, else the classic CV).

    `path` is one parquet/CSV/JSONL table or a directory of parquet shards (the schema of
    `cudaperf.measurements`; shards merged there, a later shard wins). Columns used: task_id,
    variant, speedup (over the naive variant), optionally cv, correct, status and flags. Only
    rows that are correct, not flagged as a hack and have a finite speedup are kept.
    """
    import pandas as pd

    path = Path(path)
    if path.is_dir():
        from cudaperf.measurements import merge, measurement_files

        shards = measurement_files(path)
        if not shards:
            raise FileNotFoundError(f"no parquet measurement files in {path}")
        df = merge(shards)
    elif path.suffix == ".parquet":
        df = pd.read_parquet(path)
    elif path.suffix == ".csv":
        df = pd.read_csv(path)
    else:
        df = pd.read_json(path, lines=True)
    out = {}
    for r in df.to_dict(orient="records"):
        if "correct" in r and (r["correct"] is None or r["correct"] is pd.NA or not bool(r["correct"])):
            continue
        if "status" in r and r["status"] not in (None, "correct"):
            continue
        flags = r.get("flags")
        if flags is not None and any(str(f).startswith("hack:") for f in list(flags)):
            continue
        s, cv = r.get("speedup"), r.get("cv")
        robust = r.get("cv_robust")  # measured from session 31 on; see harness.robust_cv
        if robust is not None and math.isfinite(float(robust)):
            cv = robust
        if s is None or not math.isfinite(float(s)):
            continue
        ok_cv = cv is not None and math.isfinite(float(cv))
        out[(str(r["task_id"]), str(r["variant"]))] = {"speedup": float(s),
                                                       "cv": float(cv) if ok_cv else None}
    return out


def known_result(task: Task, code: str, measured: dict[str, float] | None = None) -> EvalResult:
    """An EvalResult for a verified variant stating only what is known about it.

    Known: it compiles and is correct (variants are verified on a GPU), and its static features
    (computed here from the source). Speed and CV only from a measurement; otherwise None.
    """
    from cudaperf.features import static_features

    feats = static_features(code).values()
    r = EvalResult(task_id=task.task_id, candidate_hash="", status="correct", compiled=True,
                   pass_rate=1.0, correct=True, features=feats, message="correct")
    if measured:
        r.speedup = measured.get("speedup")
        r.cv = measured.get("cv")
    return r


def sft_examples(tasks: Iterable[Task], measurements: dict[tuple[str, str], dict] | None = None,
                 refine: bool = True, measurably_faster: float = 1.05, renames: int = 0,
                 seed: int = 0) -> list[dict[str, Any]]:
    """TRL prompt-completion records: every variant of every task, plus refinement transcripts,
    plus (renames > 0) the translation records of `renames` copies of each task whose entry point
    and parameters are renamed at random (`renamed`; kind "translate-renamed"): names the policy
    can only get right by copying them from the prompt.

    Refinement pairs: with measurements of a task's variants, every variant measured slower
    than the task's fastest (by `measurably_faster`) is an attempt whose feedback carries its
    measured speedup and CV, answered by the fastest. Without measurements the naive variant is
    the attempt (feedback: correct, no numbers) and each optimised variant an answer.
    """
    measurements = measurements or {}
    out: list[dict[str, Any]] = []
    rng = random.Random(seed)
    for t in tasks:
        base = prompts.task_prompt(t)
        for v in t.variants:
            out.append(_record(t, base, v.source, "translate", v.name, ""))
        for _ in range(renames):
            r = renamed(t, random_entry_name(rng, t), random_param_names(rng, t))
            rp = prompts.task_prompt(r)
            for v in r.variants:
                out.append(_record(t, rp, v.source, "translate-renamed", v.name, ""))
        if not refine or len(t.variants) < 2:
            continue
        meas = {v.name: measurements.get((t.task_id, v.name)) for v in t.variants}
        if all(meas.values()):
            best = max(t.variants, key=lambda v: meas[v.name]["speedup"])
            pairs = [(v, best) for v in t.variants
                     if meas[best.name]["speedup"] > measurably_faster * meas[v.name]["speedup"]]
        else:
            naive = t.variants[0] if t.variants[0].name == "naive" else t.baseline_variant
            pairs = [(naive, v) for v in t.variants if v.name != naive.name]
            meas = {}
        for slow, fast in pairs:
            res = known_result(t, slow.source, meas.get(slow.name))
            msgs = prompts.refine_prompt(t, slow.source, res)
            out.append(_record(t, msgs, fast.source, "refine", fast.name, slow.name))
    return out


COPY_PROMPT = "Repeat this CUDA program exactly, character for character."


def copy_examples(tasks: Iterable[Task], copies: int = 1, seed: int = 0) -> list[dict[str, Any]]:
    """Identity-copy SFT records (kind "copy"): the prompt shows a variant of a task renamed at
    random (`renamed`: entry point, the kernels named after it, every parameter), the answer
    repeats it verbatim. Why: the SFT policies of sessions 8-13 never took the task's names from
    the prompt (entry point named in 0-2 of 240 held-out samples); copying from the context is a
    skill small models learn quickly when every answer token can be copied, and the translation
    records need exactly that skill for names and loop bodies. Each copy picks one variant of the
    task at random; the chat layout is the translation records' (system prompt, user, assistant)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for t in tasks:
        for _ in range(copies):
            r = renamed(t, random_entry_name(rng, t), random_param_names(rng, t))
            v = rng.choice(r.variants)
            msgs = [{"role": "system", "content": prompts.SYSTEM_PROMPT},
                    {"role": "user", "content": f"{COPY_PROMPT}\n```cuda\n{v.source.strip()}\n```"}]
            out.append(_record(t, msgs, v.source, "copy", v.name, ""))
    return out


# Entry-point names of the renamed SFT copies: C-style words, never one of the task's identifiers.
_NAME_WORDS = ("apply", "compute", "run", "eval", "update", "calc", "proc", "step", "op", "fused", "map",
               "reduce", "pass", "stage", "kern", "task", "job", "do", "batch", "work")
# Parameter names of the renamed copies: the short names C code uses for sizes, arrays and scalars.
_PARAM_WORDS = ("n", "m", "k", "len", "cnt", "num", "sz", "rows", "cols", "w", "h", "d", "nx", "ny",
                "src", "dst", "buf", "arr", "vec", "mat", "a", "b", "c", "x", "y", "z", "p", "q", "u",
                "v", "data", "val", "res", "lhs", "rhs", "ld", "off", "scale", "alpha", "beta", "eps",
                "lo", "hi", "in0", "in1", "out0", "t", "s", "r", "f", "g", "xs", "ys", "ws")
_RESERVED = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int
long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while bool true false new delete this class template typename namespace using operator
private public protected virtual friend dim3 threadIdx blockIdx blockDim gridDim warpSize
""".split())


def _source_text(task: Task) -> str:
    """The task's reference and every variant, one string: where a new name must not occur."""
    return task.reference + "".join(v.source for v in task.variants)


def random_entry_name(rng: random.Random, task: Task) -> str:
    """A fresh C identifier for `task`'s entry point that occurs nowhere in its sources."""
    text = _source_text(task)
    while True:
        name = f"{rng.choice(_NAME_WORDS)}_{rng.choice(_NAME_WORDS)}{rng.randint(0, 999)}"
        if name not in text:
            return name


def random_param_names(rng: random.Random, task: Task) -> dict[str, str]:
    """A new name for each of `task`'s parameters: short C-style names, distinct, and none an
    identifier of its sources, a C/C++ keyword or a CUDA built-in (so no renamed code can clash
    with a local variable or a kernel of the task)."""
    import re

    taken = set(re.findall(r"[A-Za-z_]\w*", _source_text(task))) | _RESERVED
    out: dict[str, str] = {}
    for p in task.signature:
        while True:
            name = rng.choice(_PARAM_WORDS)
            if rng.random() < 0.5 or name in taken:
                name = f"{name}{rng.randint(0, 99)}"
            if name not in taken:
                break
        taken.add(name)
        out[p.name] = name
    return out


def renamed(task: Task, new_entry: str, params: dict[str, str] | None = None) -> Task:
    """`task` with its entry point called `new_entry` in the reference and every variant, and the
    identifiers built on it (kernels named ``<entry>_tiled`` etc.) renamed alike; with `params`
    (old name -> new name), its parameters too: in the signature (names, shape and init
    expressions), the tests' sizes and scalars, the reference and every variant. Nothing else
    changes, so each variant compiles and computes exactly what it did."""
    import dataclasses
    import re

    params = dict(params or {})
    for new in [new_entry, *params.values()]:
        if not re.fullmatch(r"[A-Za-z_]\w*", new):
            raise ValueError(f"not a C identifier: {new!r}")
    if set(params) - {p.name for p in task.signature}:
        raise ValueError(f"not parameters of {task.task_id}: {sorted(set(params) - {p.name for p in task.signature})}")
    # One pass over each text: the entry as a whole word or as the stem of a longer identifier
    # (entry_ws, entry_final); a parameter as a whole word that is not a member (.x, ->n) and not
    # an escape sequence ("\n").
    words = "|".join(re.escape(n) for n in sorted(params, key=len, reverse=True))
    pat = re.compile(rf"(?<![\w.\\])(?<!->)(?:(?P<e>{re.escape(task.entry)})(?=\b|_)"
                     + (rf"|(?P<p>{words})\b)" if words else ")"))
    sub = lambda text: pat.sub(lambda m: new_entry if m.group("e") else params[m.group("p")], text)  # noqa: E731

    def subx(text: str | None) -> str | None:
        return None if text is None else sub(text)

    sig = [dataclasses.replace(p, name=params.get(p.name, p.name), shape=subx(p.shape), init=subx(p.init))
           for p in task.signature]
    tests = [dataclasses.replace(t, sizes={params.get(k, k): v for k, v in t.sizes.items()},
                                 scalars={params.get(k, k): v for k, v in t.scalars.items()})
             for t in task.tests]
    meta = dict(task.meta, renamed_from=task.entry)
    if params:
        meta["renamed_params"] = params
    return dataclasses.replace(task, entry=new_entry, reference=sub(task.reference), signature=sig, tests=tests,
                               variants=[dataclasses.replace(v, source=sub(v.source)) for v in task.variants],
                               meta=meta)


def _record(t: Task, prompt_msgs, code: str, kind: str, variant: str, attempt: str) -> dict[str, Any]:
    return {"prompt": prompt_msgs,
            "completion": [{"role": "assistant", "content": prompts.completion_for(code)}],
            "task_id": t.task_id, "family": t.family, "kind": kind, "variant": variant,
            "attempt": attempt}


def example_lengths(examples: Sequence[dict], tokenizer) -> list[dict[str, int]]:
    """Prompt, completion and total token counts of each record, as the chat template renders it."""
    ps = [tokenizer.apply_chat_template(ex["prompt"], tokenize=False, add_generation_prompt=True)
          for ex in examples]
    fulls = [tokenizer.apply_chat_template(ex["prompt"] + ex["completion"], tokenize=False)
             for ex in examples]
    if not ps:
        return []
    # One batched call each: the Rust tokenizer encodes a batch on all cores.
    n_p = [len(x) for x in tokenizer(ps, add_special_tokens=False)["input_ids"]]
    n_all = [len(x) for x in tokenizer(fulls, add_special_tokens=False)["input_ids"]]
    return [{"prompt_tokens": a, "completion_tokens": b - a, "total_tokens": b}
            for a, b in zip(n_p, n_all)]


def filter_by_length(examples: Sequence[dict], tokenizer, max_length: int) -> tuple[list[dict], int]:
    """(records that fit in max_length tokens, number dropped): never truncate a kernel mid-way."""
    lens = example_lengths(examples, tokenizer)
    kept = [ex for ex, n in zip(examples, lens) if n["total_tokens"] <= max_length]
    return kept, len(examples) - len(kept)


# --------------------------------------------------------------------------- SFT training


@dataclass
class SFTOutcome:
    steps: int
    seconds: float
    losses: list[dict[str, float]]  # {"step", "loss"} as logged by the trainer
    stopped_by_budget: bool
    train_examples: int
    step_profile: str = ""  # torch.profiler table of the profiled steps (profile_steps), else ""


class StepProfiler:
    """A TrainerCallback that runs torch.profiler over `n` optimiser steps after `skip` warm-up
    steps and keeps the table of the costliest operators (self CPU time, and CUDA time when there
    is a GPU) plus the wall seconds per profiled step. Why: SFT on the H200 ran 183 ms a step for
    an 8M-parameter model at batch 16 (session 14), about 3 TFLOP/s, and S, M and L took nearly
    the same time per step (session 12): the step is overhead, and this says which."""

    def __init__(self, skip: int, n: int, rows: int = 25):
        from transformers import TrainerCallback

        self.skip, self.n, self.rows = skip, n, rows
        self.table, self._prof, self._t0, self._steps = "", None, 0.0, 0
        outer = self

        class _CB(TrainerCallback):
            def on_step_begin(self, args, state, control, **kw):
                if outer._prof is None and not outer.table and state.global_step >= outer.skip:
                    outer._start()

            def on_step_end(self, args, state, control, **kw):
                if outer._prof is not None:
                    outer._steps += 1
                    if outer._steps >= outer.n:
                        outer._stop()

            def on_train_end(self, args, state, control, **kw):
                if outer._prof is not None:
                    outer._stop()

        self.callback = _CB()

    def _start(self) -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
        self._prof = profile(activities=acts)
        self._prof.__enter__()
        self._t0 = time.perf_counter()

    def _stop(self) -> None:
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
        wall = time.perf_counter() - self._t0
        prof, self._prof = self._prof, None
        prof.__exit__(None, None, None)
        key = "self_cuda_time_total" if torch.cuda.is_available() else "self_cpu_time_total"
        head = f"{self._steps} profiled steps, {wall / max(1, self._steps) * 1e3:.1f} ms wall per step\n"
        self.table = head + prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=self.rows)
        if key != "self_cpu_time_total":
            self.table += "\n" + prof.key_averages().table(sort_by=key, row_limit=self.rows)


def training_attention(cudnn: bool = False) -> bool:
    """Turn PyTorch's cuDNN SDPA backend on or off for training; returns the previous setting.

    Why off: session 15 profiled an SFT step of M on an H100 (batch 64, `--profile-steps`):
    cuDNN's attention took 7.7 ms (forward) and 10.3 ms (backward) of CPU per call against 0.7 and
    1.1 ms on the GPU, 1.4 s of the 2.7 s of CPU in 10 steps, 286 ms a step for 66 ms of GPU work.
    Each batch is padded to its own longest record, so nearly every batch is a new shape for
    which cuDNN builds an execution plan. Without it SDPA takes the flash / memory-efficient
    kernels, which need no plan."""
    import torch

    before = torch.backends.cuda.cudnn_sdp_enabled()
    torch.backends.cuda.enable_cudnn_sdp(bool(cudnn))
    return before


def train_sft(model, tokenizer, examples: Sequence[dict], cfg: PolicyConfig,
              output_dir: str | Path,
              eval_examples: Sequence[dict] | dict[str, Sequence[dict]] | None = None,
              profile_steps: tuple[int, int] | None = None) -> SFTOutcome:
    """Supervised warm start with TRL's SFTTrainer (loss on completions only). With
    `profile_steps` = (skip, n), `StepProfiler` profiles n steps after the first skip."""
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    cuda = torch.cuda.is_available()
    cols = ("prompt", "completion")
    train = Dataset.from_list([{k: ex[k] for k in cols} for ex in examples])
    # Several named eval sets (e.g. held-out families and in-family programs) each get a loss per
    # epoch, logged as eval_<name>_loss; one unnamed set is logged as eval_loss.
    as_ds = lambda exs: Dataset.from_list([{k: ex[k] for k in cols} for ex in exs])  # noqa: E731
    if isinstance(eval_examples, dict):
        evald = {name: as_ds(exs) for name, exs in eval_examples.items() if exs} or None
    else:
        evald = as_ds(eval_examples) if eval_examples else None
    bf16 = cuda and torch.cuda.is_bf16_supported()
    known = {f.name for f in fields(SFTConfig)}
    extra: dict[str, Any] = {}
    # Records vary from ~450 to ~3000 tokens; batching similar lengths wastes less padding. The
    # option was renamed in transformers 5 (the H200 host may run an older 5.x than this one).
    if "train_sampling_strategy" in known:
        extra["train_sampling_strategy"] = "group_by_length"
    elif "group_by_length" in known:
        extra["group_by_length"] = True
    if cfg.warmup < 1 and "warmup_ratio" in known:
        extra["warmup_ratio"] = cfg.warmup
    else:
        extra["warmup_steps"] = cfg.warmup
    if cuda:
        import os

        extra["dataset_num_proc"] = max(1, min(8, (os.cpu_count() or 2) // 2))
    args = SFTConfig(
        output_dir=str(output_dir), max_length=cfg.max_length, completion_only_loss=True,
        packing=False, per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.batch_size, gradient_accumulation_steps=cfg.grad_accum,
        learning_rate=cfg.learning_rate, lr_scheduler_type="cosine",
        weight_decay=cfg.weight_decay, num_train_epochs=cfg.sft_epochs, max_steps=cfg.sft_max_steps,
        logging_steps=cfg.logging_steps, save_strategy="no", report_to="none", seed=cfg.seed,
        bf16=bf16, use_cpu=not cuda, gradient_checkpointing=False, disable_tqdm=True,
        eval_strategy="epoch" if evald is not None else "no",
        # Session 15's profile: collating a batch took 28 ms of a 286 ms step in the main process;
        # two loader processes prepare the next batches while the GPU works (none on a CPU run).
        dataloader_num_workers=2 if cuda else 0, dataloader_persistent_workers=cuda,
        optim="adamw_torch_fused" if cuda else "adamw_torch", **extra,
    )

    class _Budget(TrainerCallback):
        def __init__(self):
            self.t0 = time.perf_counter()
            self.hit = False

        def on_step_end(self, a, state, control, **kw):
            if cfg.sft_time_budget_s and time.perf_counter() - self.t0 > cfg.sft_time_budget_s:
                self.hit = True
                control.should_training_stop = True
            return control

    training_attention(cfg.cudnn_attention)
    budget = _Budget()
    prof = StepProfiler(*profile_steps) if profile_steps else None
    trainer = SFTTrainer(model=model, args=args, train_dataset=train, eval_dataset=evald,
                         processing_class=tokenizer, callbacks=[budget] + ([prof.callback] if prof else []))
    t0 = time.perf_counter()
    trainer.train()
    secs = time.perf_counter() - t0
    losses = [{"step": h["step"], "loss": h["loss"]} for h in trainer.state.log_history if "loss" in h]
    losses += [{"step": h["step"], k: v} for h in trainer.state.log_history for k, v in h.items()
               if k.startswith("eval_") and k.endswith("_loss")]
    return SFTOutcome(steps=trainer.state.global_step, seconds=secs, losses=losses,
                      stopped_by_budget=budget.hit, train_examples=len(train),
                      step_profile=prof.table if prof else "")


# --------------------------------------------------------------------------- sampling


GEN_CACHES = ("dynamic", "static", "graph")


def generation_kwargs(tokenizer, max_new_tokens: int, temperature: float, top_p: float,
                      cache: str = "dynamic") -> dict[str, Any]:
    """`model.generate` keyword arguments shared by evaluation sampling and GRPO rollouts:
    sampling at `temperature` with nucleus `top_p` (greedy at 0), stopping at the tokenizer's
    end token. `cache` "static": a preallocated KV cache (same tokens, fewer allocations per
    decoding step; on a GPU transformers may also compile the step). "graph": `cudaperf.fastgen`
    decodes instead of transformers (a preallocated cache and one CUDA graph per decoding step;
    Qwen3 policies only); pass the result to `generate_tokens`, which knows the difference."""
    if cache not in GEN_CACHES:
        raise ValueError(f"unknown KV cache {cache!r}; choose one of {GEN_CACHES}")
    gen: dict[str, Any] = dict(max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id,
                               eos_token_id=tokenizer.eos_token_id)
    if temperature > 0:
        gen.update(do_sample=True, temperature=temperature, top_p=top_p, top_k=0)
    else:
        gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    if cache == "static":
        gen["cache_implementation"] = "static"
    if cache == "graph":
        gen["graph"] = True
    return gen


def generate_tokens(model, enc, gen: dict[str, Any]):
    """``model.generate(**enc, **gen)`` for `generation_kwargs`' output, or `cudaperf.fastgen`'s
    decoding where it asked for the "graph" cache (its ``stopping_criteria``, e.g. the compile-ahead,
    then run after every step and never stop a row)."""
    gen = dict(gen)
    if not gen.pop("graph", False):
        return model.generate(**enc, **gen)
    from cudaperf import fastgen

    stop = gen.get("stopping_criteria") or []
    return fastgen.generate(model, enc["input_ids"], enc["attention_mask"], max_new_tokens=gen["max_new_tokens"],
                            eos_token_id=gen["eos_token_id"], pad_token_id=gen["pad_token_id"],
                            temperature=gen["temperature"] if gen.get("do_sample") else 0.0,
                            top_p=gen.get("top_p") or 1.0,
                            callback=(lambda ids: [c(ids, None) for c in stop]) if stop else None)


def encode_prompts(tokenizer, texts: Sequence[str], device, pad_multiple: int = 0):
    """One generation batch's prompts, left-padded (the tokenizer's side must be "left"), to a length
    that is a multiple of `pad_multiple` tokens when it is > 0. With the static KV cache transformers
    compiles the decoding step for each new cache shape (prompt + max_new_tokens); rounding the
    prompt length up leaves a run few shapes to compile for. The padding is masked: same tokens."""
    if pad_multiple < 0:
        raise ValueError("pad_multiple must be >= 0")
    return tokenizer(list(texts), return_tensors="pt", padding=True, add_special_tokens=False,
                     pad_to_multiple_of=pad_multiple or None).to(device)


def sample(model, tokenizer, tasks: Sequence[Task | list[dict]], n: int = 1, temperature: float = 0.8,
           max_new_tokens: int = 1024, batch_size: int = 32, top_p: float = 1.0,
           seed: int | None = None, cache: str = "dynamic", pad_multiple: int = 0) -> list[list[str]]:
    """n completions per task (or per ready-made message list), batched with left padding
    (`encode_prompts`: to a multiple of `pad_multiple` tokens when > 0)."""
    import torch

    if n < 1:
        raise ValueError("n must be >= 1")
    msgs = [prompts.task_prompt(t) if isinstance(t, Task) else t for t in tasks]
    texts = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in msgs]
    jobs = [(i, txt) for i, txt in enumerate(texts) for _ in range(n)]
    out: list[list[str]] = [[] for _ in texts]
    if seed is not None:
        torch.manual_seed(seed)
    device = next(model.parameters()).device
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    was_training = model.training
    model.eval()
    try:
        for s in range(0, len(jobs), max(1, batch_size)):
            chunk = jobs[s:s + batch_size]
            enc = encode_prompts(tokenizer, [t for _, t in chunk], device, pad_multiple)
            gen = generation_kwargs(tokenizer, max_new_tokens, temperature, top_p, cache)
            with torch.no_grad():
                seqs = generate_tokens(model, enc, gen)
            new = seqs[:, enc["input_ids"].shape[1]:]
            for (i, _), row in zip(chunk, tokenizer.batch_decode(new, skip_special_tokens=True)):
                out[i].append(row)
    finally:
        tokenizer.padding_side = side
        model.train(was_training)
    return out


# --------------------------------------------------------------------------- stored samples
# One policy's samples of an evaluation split, saved once and reused by every evaluation of GRPO
# runs from that policy: sampling the SFT start took 127 of a 190 s evaluation call on the H100 in
# session 22 (its longest samples set the pace), for samples that are the same in distribution in
# every call. The judging still happens in each evaluation, beside the policy it is compared with.
SAMPLE_SETTINGS = ("model", "split", "n", "temperature", "max_new_tokens", "seed")


def save_samples(path: str | Path, tasks: Sequence[Task], samples: list[list[str]], settings: dict,
                 **extra: Any) -> Path:
    """Write `samples` (raw completions, one row per task, as `sample` returns them) to a parquet
    file with the SAMPLE_SETTINGS they were drawn with on every row, plus `extra` columns (device,
    dtype, seconds). Missing settings are an error: a file that cannot be checked cannot be reused."""
    import pandas as pd

    missing = [k for k in SAMPLE_SETTINGS if k not in settings]
    if missing:
        raise ValueError(f"save_samples: settings lack {missing}")
    if len(samples) != len(tasks) or any(len(row) != settings["n"] for row in samples):
        raise ValueError(f"save_samples: expected {len(tasks)} tasks x {settings['n']} samples")
    rows = [{"task_id": t.task_id, "sample": j, "completion": c, **{k: settings[k] for k in SAMPLE_SETTINGS},
             **extra} for t, row in zip(tasks, samples) for j, c in enumerate(row)]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


def stored_samples(path: str | Path, tasks: Sequence[Task], settings: dict) -> list[list[str]]:
    """The completions `save_samples` wrote, for `tasks` in their order, n each; raises ValueError
    naming the first thing that does not match: a setting of SAMPLE_SETTINGS (the file must hold the
    same policy sampled the same way), or a task or sample the file lacks. Extra tasks are ignored."""
    import pandas as pd

    df = pd.read_parquet(path)
    for k in SAMPLE_SETTINGS:
        if k not in df.columns:
            raise ValueError(f"{path}: no {k!r} column; not a file of policy.save_samples")
        got = sorted(set(df[k].tolist()), key=str)
        if got != [settings[k]]:
            raise ValueError(f"{path}: {k} is {got[0] if len(got) == 1 else got}, this evaluation wants "
                             f"{settings[k]!r}")
    by = {(r.task_id, int(r.sample)): r.completion for r in df.itertuples()}
    out = []
    for t in tasks:
        row = [by.get((t.task_id, j)) for j in range(settings["n"])]
        if any(c is None for c in row):
            raise ValueError(f"{path}: lacks samples of {t.task_id} (has {sum(c is not None for c in row)} "
                             f"of {settings['n']})")
        out.append(row)
    return out


# Runner slots per GPU when judging policy output (GRPO rollouts, SFT and GRPO evaluations). The
# Harness default of 4 left a GRPO step's judging runner-bound: session 18's steps (8 tasks x 8
# attempts on an H100) spent 117 s of runner time in 4 slots, ~30 s of wall time, against ~7 s for
# all compiles on 16 cores. With 12, a 16 x 8 step judged in 26 s with ~13 of 16 cores busy; the
# harness bench found 24 runners slower than 16 on the H200 (144 against 159/min), CPU being the limit.
JUDGE_RUNNERS_PER_GPU = 12


def judge_harness(gpus: str | None = None, runners_per_gpu: int = JUDGE_RUNNERS_PER_GPU, profile: str = "mini"):
    """The harness that judges policy output: the profile's settings with shared runners (a task's
    samples judged one after another in one runner) and `runners_per_gpu` runner slots per GPU."""
    from dataclasses import replace

    from cudaperf.config import get_profile
    from cudaperf.harness import Harness

    cfg = replace(get_profile(profile).harness, share_runner=True)
    if gpus is not None:
        cfg = replace(cfg, gpus=gpus)
    return Harness(cfg, workers_per_gpu=runners_per_gpu)


def extract_codes(samples: list[list[str]]) -> list[list[str]]:
    """The CUDA translation unit of every sample (cudaperf.rewards.extract_code)."""
    from cudaperf.rewards import extract_code

    return [[extract_code(s) for s in row] for row in samples]


def sample_and_compile(model, tokenizer, tasks: Sequence[Task], n: int, temperature: float,
                       max_new_tokens: int, batch_size: int, seed: int | None = 0, jobs: int = 0):
    """(codes, results, seconds): `n` sampled translation units per task and nvcc's verdict on
    each (`compile.compile_many` with the harness's flags; nothing is executed, so no GPU is
    needed for the compile), rows in task order; seconds = (sampling, compiling). Shared by the
    compile probe (benchmarks/compile_probe.py) and GRPO's task filter (grpo.probe_filter_tasks)."""
    from cudaperf.compile import compile_many

    t0 = time.perf_counter()
    codes = extract_codes(sample(model, tokenizer, tasks, n=n, temperature=temperature,
                                 max_new_tokens=max_new_tokens, batch_size=batch_size, seed=seed))
    t1 = time.perf_counter()
    flat = compile_many([c for row in codes for c in row], jobs=jobs)
    results = [flat[i * n:(i + 1) * n] for i in range(len(codes))]
    return codes, results, (t1 - t0, time.perf_counter() - t1)


# --------------------------------------------------------------------------- evaluation summary


# Why a sample failed to compile, from nvcc's first error (most later errors cascade from it).
# Ordered: the first pattern that matches the first error line wins.
ERROR_CLASSES = (
    ("undefined identifier", r'identifier "[^"]*" is undefined|is not declared|undeclared'),
    ("redefinition", r"duplicate parameter|already been (?:defined|declared)|redefinition|redeclar"),
    ("wrong arguments", r"too (?:few|many) arguments|argument of type|no instance of|"
                        r"cannot be used to initialize|a value of type|incompatible"),
    ("syntax", r"expected an? |expected a |unrecognized token|missing closing|unexpected|"
               r"declaration is incompatible|this declaration has no storage class"),
    ("type error", r"expression must|incomplete type|type name is not allowed|explicit type is missing|"
                   r"is not a template|aggregate object"),
)


def compile_error_class(log: str) -> tuple[str, str]:
    """(class, first error line) of an nvcc log: see ERROR_CLASSES; "other" when none matches."""
    import re

    first = next((ln.strip() for ln in str(log).splitlines()
                  if re.search(r"\berror\b", ln) and "errors detected" not in ln
                  and not ln.startswith("nvcc exit code")), "")
    msg = first.split("error:", 1)[-1].strip() if first else ""
    return error_class_of(msg), msg


def compile_failure(res: Any) -> dict[str, str]:
    """{error_class, first_error} of a judged sample (an EvalResult) nvcc rejected; empty strings
    for any other status. The per-sample columns of the SFT and GRPO evaluations."""
    if res.status != "compile_error":
        return {"error_class": "", "first_error": ""}
    cls, first = compile_error_class(res.compile_log)
    return {"error_class": cls, "first_error": first[:300]}


def judged_sample(task: Task, sample: int, res: Any, code: str) -> dict[str, Any]:
    """The per-sample columns every held-out evaluation keeps for one judged sample (an EvalResult):
    task, sample index, the harness verdict, the code and, for an nvcc rejection, its error class."""
    return {"task_id": task.task_id, "family": task.family, "sample": sample, "status": res.status,
            "compiled": res.compiled, "correct": bool(res.correct), "pass_rate": res.pass_rate,
            "speedup": res.speedup, "cv": res.cv, "cv_robust": res.cv_robust, "rep_ms": list(res.rep_ms),
            "flags": list(res.flags), "code": code,
            **compile_failure(res)}


def error_class_of(message: str) -> str:
    """The ERROR_CLASSES name of one nvcc error message ("other" when none matches)."""
    import re

    return next((name for name, pat in ERROR_CLASSES if re.search(pat, message)), "other")



def read_compile_probes(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Rows of `benchmarks/compile_probe.py` logs: one per (log, temperature), with the log's header
    (model, split, tasks, n, device) merged in and the log's file name as ``source``. Comment lines
    (#) and other text are skipped; a temperature line before any header raises ValueError."""
    import json

    rows: list[dict[str, Any]] = []
    for p in paths:
        head: dict[str, Any] | None = None
        for line in Path(p).read_text().splitlines():
            if not line.startswith("{"):
                continue
            rec = json.loads(line)
            if "model" in rec and "split" in rec:
                head = rec
            elif "temperature" in rec:
                if head is None:
                    raise ValueError(f"{p}: a probe result before the probe's header line")
                rows.append({"source": Path(p).name, **{k: head.get(k) for k in ("model", "split", "tasks", "n", "device")},
                             **rec})
    return rows


SIGNATURE_MATCH = ("exact", "entry", "none")  # signature_match's answers, best first


def signature_match(code: str, task: Task) -> str:
    """Did the completion take the task's names from the prompt? "exact": it defines
    ``extern "C" void <entry>(...)`` with the task's parameter names in order; "entry": the entry
    point's name is right but not the parameters; "none": no such definition. Computed from
    the text alone (no compiler), it shows whether a policy copies names before any sample
    compiles -- the first thing the SFT policies of session 8 failed at."""
    import re

    m = re.search(r'extern\s+"C"\s+(?:__host__\s+)?void\s+' + re.escape(task.entry) + r"\s*\(([^)]*)\)\s*\{",
                  code or "")
    if not m:
        return "none"
    names = [re.findall(r"[A-Za-z_]\w*", part)[-1:] for part in m.group(1).split(",")]
    got = [n[0] for n in names if n]
    return "exact" if got == [p.name for p in task.signature] else "entry"


def eval_summary(rows: Sequence[dict[str, Any]], ks: Sequence[int] = (1, 5),
                 fast_ps: Sequence[float] = (1.0, 1.5)) -> dict[str, Any]:
    """Policy-level metrics from per-sample rows {task_id, compiled, correct, speedup, flags}.

    compile_rate and correct_rate are over samples; pass@k, geomean speedup and fast_p are
    `cudaperf.metrics`' (KernelBench's definitions, shared with GRPO and the main results):
    pass@k averages the unbiased estimator over tasks (k above a task's sample count skipped),
    fast_p is the share of tasks whose first sample is correct and faster than p x naive.
    Samples flagged ``hack:`` never count as correct. A compiled sample whose correctness was
    never judged (``correct`` None: no GPU) makes every correctness metric None, never 0: the
    summary then says how many went unjudged (``unjudged_samples``).
    """
    from cudaperf import metrics

    n_s = len(rows)
    unjudged = sum(bool(r.get("compiled")) and r.get("correct") is None for r in rows)
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["task_id"], []).append(r)
    out: dict[str, Any] = {"tasks": len(by), "samples": n_s,
                           "compile_rate": sum(bool(r.get("compiled")) for r in rows) / n_s if n_s else None,
                           "correct_rate": sum(metrics.is_correct(r) for r in rows) / n_s if n_s else None}
    if rows and all("signature" in r for r in rows):  # policy.signature_match per sample
        out["signature_exact_rate"] = sum(r["signature"] == "exact" for r in rows) / n_s
        out["entry_name_rate"] = sum(r["signature"] in ("exact", "entry") for r in rows) / n_s
    for k in ks:
        vals = [metrics.pass_at_k(len(g), sum(metrics.is_correct(r) for r in g), k)
                for g in by.values() if len(g) >= k]
        out[f"pass@{k}"] = sum(vals) / len(vals) if vals else None
    gm = metrics.geomean_speedup(rows) if rows else float("nan")
    out["geomean_speedup"] = None if gm != gm else gm
    out["timed_correct"] = sum(metrics.qualifying_speedup(r) is not None for r in rows)
    if rows:
        for p, v in metrics.fast_p(rows, fast_ps, per_task="first").items():
            out[f"fast_{p:g}"] = v
    if unjudged:  # correctness was not run (compile-only machine): nothing to report but that
        for k in [k for k in out if k == "correct_rate" or k.startswith(("pass@", "fast_"))] + ["geomean_speedup"]:
            out[k] = None
        out["unjudged_samples"] = unjudged
    return out


# --------------------------------------------------------------------------- paper profile


def bnb_config(compute_dtype: str = "bfloat16"):
    """4-bit NF4 with double quantisation (QLoRA's recipe)."""
    import torch
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_use_double_quant=True,
                              bnb_4bit_compute_dtype=getattr(torch, compute_dtype))


def lora_config(lora: dict[str, Any] | None = None):
    """peft LoraConfig for a causal LM; keys r, alpha, dropout, target_modules (defaults above)."""
    from peft import LoraConfig

    lora = dict(lora or {})
    bad = sorted(set(lora) - set(LORA_DEFAULTS))
    if bad:
        raise ValueError(f"unknown LoRA setting(s) {bad}; known: {sorted(LORA_DEFAULTS)}")
    s = {**LORA_DEFAULTS, **lora}
    return LoraConfig(r=int(s["r"]), lora_alpha=float(s["alpha"]), lora_dropout=float(s["dropout"]),
                      target_modules=list(s["target_modules"]), bias="none", task_type="CAUSAL_LM")


def load_policy(model_name_or_path: str, quantize_4bit: bool = False, lora: dict | None = None,
                dtype: str = "bfloat16", device_map: Any = None, gradient_checkpointing: bool = True):
    """(model, tokenizer) for a local or hub checkpoint, optionally 4-bit NF4 + LoRA (QLoRA)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_name_or_path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    kw: dict[str, Any] = {"dtype": getattr(torch, dtype)}
    if quantize_4bit:
        if not torch.cuda.is_available():
            raise RuntimeError("quantize_4bit needs a CUDA GPU (bitsandbytes NF4 kernels); "
                               "load with quantize_4bit=False on a CPU")
        kw["quantization_config"] = bnb_config(dtype)
        kw["device_map"] = device_map if device_map is not None else {"": torch.cuda.current_device()}
    elif device_map is not None:
        kw["device_map"] = device_map
    model = AutoModelForCausalLM.from_pretrained(model_name_or_path, **kw)
    if quantize_4bit:
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=gradient_checkpointing)
    if lora:
        from peft import get_peft_model

        model = get_peft_model(model, lora_config(lora))
    return model, tok


def policy_from_config(cfg: PolicyConfig, tasks: Sequence[Task] = (), root: str | Path = "."):
    """(model, tokenizer) as a profile asks: a checkpoint (paper) or a fresh mini model."""
    if cfg.model_name_or_path:
        return load_policy(cfg.model_name_or_path, cfg.quantize_4bit, cfg.lora or None)
    tok = get_tokenizer(cfg, tasks, root)
    return build_model(cfg.model_size, tok, cfg.max_length, cfg.seed), tok


def stratified(tasks: Sequence[Task], k: int, seed: int = 0) -> list[Task]:
    """At most k tasks, spread over families round-robin (deterministic for a seed)."""
    by: dict[str, list[Task]] = {}
    for t in tasks:
        by.setdefault(t.family, []).append(t)
    rng = random.Random(seed)
    for v in by.values():
        rng.shuffle(v)
    fams = sorted(by)
    out: list[Task] = []
    i = 0
    while len(out) < k and any(by.values()):
        f = fams[i % len(fams)]
        if by[f]:
            out.append(by[f].pop())
        i += 1
    return out


__all__ = ["CHAT_TEMPLATE", "COPY_PROMPT", "copy_examples", "has_weights", "LORA_DEFAULTS", "MODEL_SPECS", "PAPER_MODELS", "PolicyConfig",
           "SFTOutcome", "bnb_config", "build_model", "count_parameters", "example_lengths",
           "eval_summary", "extract_codes", "filter_by_length", "generate_tokens", "get_tokenizer", "judged_sample", "known_result", "load_policy",
           "load_tokenizer", "load_variant_measurements", "lora_config", "model_config",
           "policy_from_config", "repo_python_files", "sample", "save_policy", "sft_examples",
           "stratified", "tokenizer_corpus", "tokenizer_stats", "train_sft", "train_tokenizer"]


# --------------------------------------------------------------------------- committed SFT results

EVAL_SPLITS = {"eval": "test", "eval_infamily": "infamily", "eval_seen": "seen"}  # file stem -> split


def sft_results(models_dir: str | Path = "data/models"):
    """The SFT models' committed results under models_dir/sft-<size>/ as three DataFrames:
    (training log: one row per logged step with loss or eval_loss, summaries: one row per model
    and evaluation split, samples: one row per evaluated sample). Empty frames when none exist."""
    import json

    import pandas as pd

    d = Path(models_dir)
    logs, sums, rows = [], [], []
    for p in sorted(d.glob("sft-*/train_log.json")):
        log = json.loads(p.read_text())
        for r in log.get("losses", []):
            logs.append({"model": p.parent.name, "parameters": log.get("parameters"), **r})
    for stem, split in EVAL_SPLITS.items():
        for p in sorted(d.glob(f"sft-*/{stem}_summary.json")):
            sums.append({"split": split, **json.loads(p.read_text())})
        for p in sorted(d.glob(f"sft-*/{stem}.parquet")):
            rows.append(pd.read_parquet(p).assign(split=split))
    return (pd.DataFrame(logs), pd.DataFrame(sums),
            pd.concat(rows, ignore_index=True) if rows else pd.DataFrame())


# --------------------------------------------------------------------------- task splits of SFT, GRPO, evaluation

EVAL_SPLIT_MEANING = {"test": "held-out families (split test)",
                      "infamily": "held-out programs of train families (meta in_family_split = val; "
                                  "SFT never trains on them; GRPO's 'infamily_rest' pool takes those outside "
                                  "the evaluation slice, `infamily_rest`)",
                      "seen": "programs SFT trained on (a check of what SFT learned, not a generalisation score)"}


def in_family_heldout(t: Task) -> bool:
    """A train-family task held out of SFT and GRPO for the in-family evaluation."""
    return t.split == "train" and t.meta.get("in_family_split") == "val"


def training_tasks(tasks: Iterable[Task]) -> list[Task]:
    """The tasks SFT and GRPO learn from: the train split minus its in-family held-out programs."""
    return [t for t in tasks if t.split == "train" and not in_family_heldout(t)]


# The in-family evaluation slice every GRPO held-out comparison so far used (64 tasks, seed 0;
# the SFT start's stored samples are of it): what an 'infamily_rest' GRPO pool leaves out.
INFAMILY_EVAL_SLICE = (64, 0)


def infamily_rest(tasks: Iterable[Task], reserve: int = INFAMILY_EVAL_SLICE[0],
                  seed: int = INFAMILY_EVAL_SLICE[1]) -> list[Task]:
    """In-family held-out programs outside the evaluation slice ``evaluation_tasks(tasks,
    "infamily", reserve, seed)``, sorted by task id: programs SFT never saw that GRPO may train on
    while the slice stays unseen by both.

    Why: a GRPO pool of SFT's own training programs (split 'train') holds programs the start has
    memorised; most of their groups are all correct, so the update learns speed there and little
    about writing correct code for an unseen program, which is what held-out pass@1 measures
    (sessions 21-24: faster on held-out programs, not more often correct)."""
    if reserve < 1:
        raise ValueError(f"reserve must be >= 1 (the evaluation slice's size), got {reserve}")
    tasks = list(tasks)
    held = {t.task_id for t in evaluation_tasks(tasks, "infamily", reserve, seed)}
    return sorted((t for t in tasks if in_family_heldout(t) and t.task_id not in held), key=lambda t: t.task_id)


def evaluation_tasks(tasks: Iterable[Task], split: str, k: int = 0, seed: int = 0) -> list[Task]:
    """A family-stratified slice of k tasks (0 = all) of an evaluation split (EVAL_SPLIT_MEANING)."""
    if split not in EVAL_SPLIT_MEANING:
        raise ValueError(f"unknown evaluation split {split!r}; choose one of {sorted(EVAL_SPLIT_MEANING)}")
    tasks = list(tasks)
    pool = ([t for t in tasks if t.split == "test"] if split == "test" else
            [t for t in tasks if in_family_heldout(t)] if split == "infamily" else training_tasks(tasks))
    return stratified(pool, k or len(pool), seed)
