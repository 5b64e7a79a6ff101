"""Policy models: tokenizer round trips, Qwen3 family sizes, honest SFT records, SFT that learns,
batched sampling equal to unbatched, sharded fp16 checkpoints, and the paper-profile loader."""
from __future__ import annotations

import json
import re

import pytest
import torch

from cudaperf import policy, prompts
from cudaperf.devtasks import dev_tasks
from cudaperf.rewards import extract_code

TASKS = dev_tasks()


@pytest.fixture(scope="module")
def tok():
    # Small vocabulary: trains in well under a second on the dev tasks.
    return policy.train_tokenizer(policy.tokenizer_corpus(TASKS), vocab_size=600)


@pytest.fixture(scope="module")
def tiny(tok):
    return policy.build_model("tiny", tok, max_length=2048, seed=0)


# --------------------------------------------------------------------------- tokenizer


def test_tokenizer_is_byte_level_lossless(tok):
    for s in ["__global__ void k(float *x) {\n\tx[threadIdx.x] = 1.0f;\n}\n",
              "été 中文 \x00\x7f emoji 🚀   trailing  ", TASKS[0].reference]:
        assert tok.decode(tok(s, add_special_tokens=False)["input_ids"]) == s


def test_special_tokens_and_chat_template(tok):
    for t in policy.SPECIAL_TOKENS:
        assert len(tok(t, add_special_tokens=False)["input_ids"]) == 1
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert tok.eos_token_id != tok.pad_token_id
    text = tok.apply_chat_template(prompts.task_prompt(TASKS[0]), tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")
    assert text.count("<|im_end|>") == 2


def test_tokenizer_save_load_round_trip(tok, tmp_path):
    tok.save_pretrained(tmp_path)
    back = policy.load_tokenizer(tmp_path)
    s = TASKS[1].variants[1].source
    assert back(s)["input_ids"] == tok(s)["input_ids"]
    assert back.chat_template == tok.chat_template and len(back) == len(tok)


def test_get_tokenizer_trains_on_train_split_only_then_loads(tmp_path):
    cfg = policy.PolicyConfig.for_profile("smoke", vocab_size=500, tokenizer_path="tok")
    held = [t for t in TASKS]
    held[0] = type(held[0])(**{**held[0].__dict__, "split": "test",
                               "reference": "void f() {" + " zzqqxx();" * 500 + " }"})
    tok = policy.get_tokenizer(cfg, held, root=tmp_path)
    assert (tmp_path / "tok" / "tokenizer.json").is_file()
    assert not any("zzqqxx" in t for t in tok.get_vocab()), "test-split text leaked into the vocabulary"
    # Control: the same text in the train split does enter the vocabulary.
    held[0].split = "train"
    ctl = policy.get_tokenizer(cfg, held, root=tmp_path / "ctl")
    assert any("zzqqxx" in t for t in ctl.get_vocab())
    again = policy.get_tokenizer(cfg, [], root=tmp_path)  # loads, needs no tasks
    assert again.get_vocab() == tok.get_vocab()
    with pytest.raises(ValueError, match="no tokenizer"):
        policy.get_tokenizer(cfg, [], root=tmp_path / "empty")


def test_tokenizer_stats_rows(tok):
    rows = policy.tokenizer_stats(tok, {"c": [t.reference for t in TASKS], "empty": []})
    assert [r["kind"] for r in rows] == ["c"] and rows[0]["chars_per_token"] > 1.5


# --------------------------------------------------------------------------- models


class _VocabStub:  # model_config needs only the vocabulary size and the special-token ids
    pad_token_id, eos_token_id = 0, 2

    def __len__(self):
        return 7232


@pytest.mark.parametrize("size,lo,hi", [("tiny", 0.1e6, 0.4e6), ("S", 1.5e6, 2.5e6),
                                        ("M", 6e6, 10e6), ("L", 20e6, 30e6)])
def test_family_sizes(size, lo, hi):
    from transformers import Qwen3ForCausalLM

    cfg = policy.model_config(size, _VocabStub())
    assert cfg.model_type == "qwen3" and cfg.tie_word_embeddings
    assert cfg.num_attention_heads % cfg.num_key_value_heads == 0
    with torch.device("meta"):
        m = Qwen3ForCausalLM(cfg)
    assert lo <= policy.count_parameters(m) <= hi


def test_unknown_size_is_rejected(tok):
    with pytest.raises(ValueError, match="unknown model size"):
        policy.model_config("XL", tok)


def test_build_model_is_deterministic_per_seed(tok):
    a, b = policy.build_model("tiny", tok, seed=3), policy.build_model("tiny", tok, seed=3)
    c = policy.build_model("tiny", tok, seed=4)
    pa, pb, pc = (next(m.parameters()) for m in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)
    assert a.config.vocab_size == len(tok) and a.config.eos_token_id == tok.eos_token_id


# --------------------------------------------------------------------------- SFT records


def test_sft_records_cover_every_variant_and_refine_honestly():
    ex = policy.sft_examples(TASKS)
    for t in TASKS:
        tr = [e for e in ex if e["task_id"] == t.task_id and e["kind"] == "translate"]
        assert sorted(e["variant"] for e in tr) == sorted(v.name for v in t.variants)
        for e in tr:
            assert e["prompt"] == prompts.task_prompt(t)
            assert extract_code(e["completion"][0]["content"]) == t.variant(e["variant"]).source.strip() + "\n"
        rf = [e for e in ex if e["task_id"] == t.task_id and e["kind"] == "refine"]
        assert {e["attempt"] for e in rf} == {"naive"}
        assert sorted(e["variant"] for e in rf) == sorted(v.name for v in t.variants[1:])
        for e in rf:
            fb = e["prompt"][-1]["content"]
            assert "correct on every test configuration" in fb
            assert "Speedup" not in fb and "ms." not in fb, "nothing was measured: no speed claims"
            assert e["prompt"][2]["content"] == prompts.completion_for(t.variant("naive").source)


def test_sft_refinement_uses_measurements_when_given():
    t = TASKS[0]
    names = [v.name for v in t.variants]
    meas = {(t.task_id, names[0]): {"speedup": 1.0, "cv": 0.02},
            (t.task_id, names[1]): {"speedup": 1.02, "cv": 0.01},  # not measurably slower than best
            (t.task_id, names[2]): {"speedup": 1.6, "cv": 0.03}}
    # Move the fastest to second place to check it is chosen by measurement, not by position.
    meas[(t.task_id, names[1])], meas[(t.task_id, names[2])] = {"speedup": 1.6, "cv": 0.03}, {"speedup": 1.55, "cv": 0.01}
    rf = [e for e in policy.sft_examples([t], meas) if e["kind"] == "refine"]
    assert [(e["attempt"], e["variant"]) for e in rf] == [(names[0], names[1])]
    assert "1.00x" in rf[0]["prompt"][-1]["content"] and "2.0%" in rf[0]["prompt"][-1]["content"]
    # A task with a variant missing from the measurements falls back to the no-numbers form.
    part = {k: v for k, v in meas.items() if k[1] != names[2]}
    rf = [e for e in policy.sft_examples([t], part) if e["kind"] == "refine"]
    assert all("Speedup" not in e["prompt"][-1]["content"] for e in rf)


def test_load_variant_measurements_skips_incorrect_and_unmeasured(tmp_path):
    import pandas as pd

    p = tmp_path / "m.parquet"
    pd.DataFrame([{"task_id": "a", "variant": "naive", "speedup": 1.0, "cv": 0.01, "correct": True},
                  {"task_id": "a", "variant": "fast", "speedup": 3.0, "cv": None, "correct": True},
                  {"task_id": "a", "variant": "bad", "speedup": 9.0, "cv": 0.0, "correct": False},
                  {"task_id": "a", "variant": "none", "speedup": None, "cv": 0.0, "correct": True}]).to_parquet(p)
    m = policy.load_variant_measurements(p)
    assert m == {("a", "naive"): {"speedup": 1.0, "cv": 0.01}, ("a", "fast"): {"speedup": 3.0, "cv": None}}
    df = pd.read_parquet(p).assign(cv_robust=[0.004, None, None, None])  # robust CV where measured
    df.to_parquet(p)
    assert policy.load_variant_measurements(p)[("a", "naive")]["cv"] == 0.004


def test_load_variant_measurements_reads_shards_of_the_measurement_table(tmp_path):
    from cudaperf import measurements
    from cudaperf.result import EvalResult

    t = TASKS[0]

    def row(variant, speedup, flags=(), correct=True):
        r = EvalResult(t.task_id, "h", status="correct" if correct else "wrong", compiled=True,
                       pass_rate=1.0 if correct else 0.5, correct=correct, speedup=speedup, cv=0.02,
                       flags=list(flags))
        return measurements.row_from_result(t, variant, r)

    measurements.save_measurements([row("naive", 1.0), row("grid_stride", 1.1)], tmp_path / "s0.parquet")
    measurements.save_measurements([row("grid_stride", 1.4), row("vectorized", 9.0, ["hack:roofline"]),
                                    row("other", 2.0, correct=False)], tmp_path / "s1.parquet")
    m = policy.load_variant_measurements(tmp_path)
    assert m == {(t.task_id, "naive"): {"speedup": 1.0, "cv": 0.02},
                 (t.task_id, "grid_stride"): {"speedup": 1.4, "cv": 0.02}}  # later shard wins


def test_filter_by_length_drops_whole_records(tok):
    ex = policy.sft_examples(TASKS[:2], refine=False)
    lens = [n["total_tokens"] for n in policy.example_lengths(ex, tok)]
    cut = sorted(lens)[len(lens) // 2]
    kept, dropped = policy.filter_by_length(ex, tok, cut)
    assert dropped == sum(n > cut for n in lens) > 0 and len(kept) + dropped == len(ex)
    assert all(n["completion_tokens"] > 0 for n in policy.example_lengths(kept, tok))


# --------------------------------------------------------------------------- SFT, sampling, saving


def test_sft_smoke_loss_decreases(tok, tmp_path):
    cfg = policy.PolicyConfig.for_profile("smoke", sft_max_steps=8, batch_size=2, learning_rate=5e-3,
                                          warmup=0, logging_steps=1)
    model = policy.build_model("tiny", tok, seed=1)
    ex = policy.sft_examples(TASKS[:1], refine=False)  # 3 records, repeated: loss must fall
    before = [p.detach().clone() for p in model.parameters()]
    out = policy.train_sft(model, tok, ex, cfg, tmp_path / "sft")
    losses = [r["loss"] for r in out.losses if "loss" in r]
    assert out.steps == 8 and len(losses) == 8
    assert sum(losses[-2:]) / 2 < sum(losses[:2]) / 2 - 0.3, losses
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_sft_stops_at_the_time_budget(tok, tmp_path):
    cfg = policy.PolicyConfig.for_profile("smoke", sft_max_steps=1000, batch_size=1,
                                          sft_time_budget_s=1e-3, logging_steps=1)
    model = policy.build_model("tiny", tok, seed=1)
    out = policy.train_sft(model, tok, policy.sft_examples(TASKS[:1], refine=False), cfg, tmp_path / "b")
    assert out.stopped_by_budget and out.steps == 1


def test_sft_step_profiler_profiles_the_requested_steps(tok, tmp_path):
    """profile_steps=(2, 3): three steps profiled after two; the table names the operators (the
    H200's 183 ms per step of an 8M model needs that breakdown) and says the wall time per step."""
    cfg = policy.PolicyConfig.for_profile("smoke", sft_max_steps=6, batch_size=2, logging_steps=1)
    model = policy.build_model("tiny", tok, seed=1)
    out = policy.train_sft(model, tok, policy.sft_examples(TASKS[:1], refine=False), cfg, tmp_path / "p",
                           profile_steps=(2, 3))
    assert out.steps == 6
    assert out.step_profile.startswith("3 profiled steps, ") and "ms wall per step" in out.step_profile
    assert "aten::" in out.step_profile  # operator rows, not an empty table
    plain = policy.train_sft(policy.build_model("tiny", tok, seed=1), tok,
                             policy.sft_examples(TASKS[:1], refine=False), cfg, tmp_path / "q")
    assert plain.step_profile == ""


def test_batched_left_padded_sampling_equals_one_at_a_time(tok, tiny):
    tasks = TASKS[:3]  # prompts of different lengths, so the batch really is padded
    lens = {len(tok(tok.apply_chat_template(prompts.task_prompt(t), tokenize=False, add_generation_prompt=True),
                    add_special_tokens=False)["input_ids"]) for t in tasks}
    assert len(lens) > 1
    batched = policy.sample(tiny, tok, tasks, n=1, temperature=0.0, max_new_tokens=6, batch_size=8)
    single = [policy.sample(tiny, tok, [t], n=1, temperature=0.0, max_new_tokens=6, batch_size=1)[0]
              for t in tasks]
    assert batched == single
    assert tok.padding_side == "right", "sample must restore the tokenizer's padding side"


def test_sampling_shape_and_extraction(tok, tiny):
    out = policy.sample(tiny, tok, TASKS[:2], n=3, temperature=1.0, max_new_tokens=5, batch_size=4, seed=0)
    assert [len(r) for r in out] == [3, 3] and all(isinstance(s, str) for r in out for s in r)
    assert not any("<|im_end|>" in s or "<|endoftext|>" in s for r in out for s in r)
    again = policy.sample(tiny, tok, TASKS[:2], n=3, temperature=1.0, max_new_tokens=5, batch_size=4, seed=0)
    assert out == again
    codes = policy.extract_codes([["Sure!\n```cuda\nint x;\n```\nDone."]])
    assert codes == [["int x;\n"]]


def test_save_policy_writes_fp16_shards_within_limit(tok, tiny, tmp_path):
    from safetensors import safe_open

    shards = policy.save_policy(tiny, tok, tmp_path / "m", max_shard_size="40KB")
    assert len(shards) >= 2
    assert all(p.stat().st_size <= 40_000 + 4096 for p in shards)  # + safetensors header
    for p in shards:
        with safe_open(str(p), "pt") as f:
            assert all(f.get_tensor(k).dtype == torch.float16 for k in f.keys())
    assert next(tiny.parameters()).dtype == torch.float32, "saving must not change the live model"
    idx = json.loads((tmp_path / "m" / "model.safetensors.index.json").read_text())
    assert set(idx["weight_map"].values()) == {p.name for p in shards}


# --------------------------------------------------------------------------- paper profile


def test_load_policy_full_precision_matches_the_saved_model(tok, tiny, tmp_path):
    policy.save_policy(tiny, tok, tmp_path / "ck")
    model, tok2 = policy.load_policy(str(tmp_path / "ck"), quantize_4bit=False, lora=None, dtype="float32")
    ids = tok(prompts.task_user_text(TASKS[0]), return_tensors="pt")["input_ids"][:, :64]
    with torch.no_grad():
        ref = tiny.to(torch.float16).float()(ids).logits
        got = model(ids).logits
    tiny.float()
    assert torch.allclose(ref, got, atol=1e-3)
    assert tok2.chat_template == tok.chat_template


def test_load_policy_with_lora_trains_only_adapters(tok, tiny, tmp_path):
    from peft import PeftModel

    policy.save_policy(tiny, tok, tmp_path / "ck")
    model, _ = policy.load_policy(str(tmp_path / "ck"), quantize_4bit=False,
                                  lora={"r": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"]},
                                  dtype="float32")
    assert isinstance(model, PeftModel)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert {re.search(r"(q_proj|v_proj)", n).group(1) for n in trainable} == {"q_proj", "v_proj"}


def test_quantization_and_lora_configs_follow_qlora():
    c = policy.bnb_config()
    assert c.load_in_4bit and c.bnb_4bit_quant_type == "nf4" and c.bnb_4bit_use_double_quant
    assert c.bnb_4bit_compute_dtype == torch.bfloat16
    lc = policy.lora_config({"r": 8})
    assert lc.r == 8 and lc.lora_alpha == 32 and set(lc.target_modules) == set(policy.LORA_DEFAULTS["target_modules"])
    with pytest.raises(ValueError, match="unknown LoRA"):
        policy.lora_config({"rank": 8})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU refusal")
def test_4bit_on_cpu_is_refused_not_silently_full_precision(tok, tiny, tmp_path):
    policy.save_policy(tiny, tok, tmp_path / "ck")
    with pytest.raises(RuntimeError, match="CUDA"):
        policy.load_policy(str(tmp_path / "ck"), quantize_4bit=True, lora=None)


@pytest.mark.gpu
def test_4bit_nf4_qlora_on_gpu(tok, tmp_path):
    import bitsandbytes as bnb

    model = policy.build_model("S", tok, seed=0)  # hidden 128: big enough for bnb's 4-bit blocks
    policy.save_policy(model, tok, tmp_path / "ck")
    q, _ = policy.load_policy(str(tmp_path / "ck"), quantize_4bit=True, lora={"r": 4})
    assert any(isinstance(m, bnb.nn.Linear4bit) for m in q.modules())
    ids = tok(prompts.task_user_text(TASKS[0]), return_tensors="pt")["input_ids"][:, :64].cuda()
    lora = {n: p.detach().clone() for n, p in q.named_parameters() if p.requires_grad}
    opt = torch.optim.AdamW([p for p in q.parameters() if p.requires_grad], lr=1e-2)
    loss = q(input_ids=ids, labels=ids).loss
    assert torch.isfinite(loss)
    loss.backward()
    opt.step()
    assert any(not torch.equal(lora[n], p) for n, p in q.named_parameters() if p.requires_grad)


# --------------------------------------------------------------------------- config and metrics


def test_policy_config_profiles_and_help():
    from dataclasses import fields

    assert all(f.metadata.get("help") for f in fields(policy.PolicyConfig))
    assert policy.PolicyConfig.for_profile("paper").quantize_4bit
    assert policy.PolicyConfig.for_profile("mini").model_size == "L"
    assert policy.PolicyConfig.for_profile("smoke", seed=3).seed == 3
    with pytest.raises(ValueError, match="unknown profile"):
        policy.PolicyConfig.for_profile("huge")
    with pytest.raises(ValueError, match="unknown PolicyConfig"):
        policy.PolicyConfig.for_profile("smoke", lr=1.0)


def test_pass_at_k_and_summary():
    rows = ([{"task_id": "a", "compiled": True, "correct": True, "speedup": 2.0, "flags": []}] * 2
            + [{"task_id": "a", "compiled": True, "correct": True, "speedup": 100.0,
                "flags": ["hack:roofline"]}]
            + [{"task_id": "b", "compiled": False, "correct": False, "speedup": None, "flags": []}] * 3)
    s = policy.eval_summary(rows, ks=(1, 3))
    assert s["compile_rate"] == 0.5 and s["correct_rate"] == pytest.approx(2 / 6)
    assert s["pass@1"] == pytest.approx((2 / 3 + 0) / 2) and s["pass@3"] == pytest.approx(0.5)
    # fast_p per task (KernelBench): task a's first sample is correct at 2x, task b fails.
    assert s["geomean_speedup"] == pytest.approx(2.0) and s["fast_1"] == pytest.approx(1 / 2)
    assert s["fast_1.5"] == pytest.approx(1 / 2) and "unjudged_samples" not in s
    # no GPU: compiled samples were never judged, so no correctness number may be reported
    cpu = [{"task_id": "a", "compiled": True, "correct": None, "speedup": None, "flags": []},
           {"task_id": "b", "compiled": False, "correct": False, "speedup": None, "flags": []}]
    s = policy.eval_summary(cpu, ks=(1,))
    assert s["compile_rate"] == 0.5 and s["unjudged_samples"] == 1
    assert s["correct_rate"] is None and s["pass@1"] is None and s["fast_1"] is None


def test_compile_error_class_reads_nvccs_first_error(tmp_path):
    """Real nvcc logs: the class comes from the first error, not from the cascade after it."""
    import shutil
    import subprocess

    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    cases = {
        "undefined identifier": "__global__ void k(float *y) { y[0] = x; }\n",
        "redefinition": "__global__ void k(int n, int n) { }\n",
        "syntax": "__global__ void k(float *y) { y[0] = 1.0f }\n",
        "wrong arguments": "__global__ void k(float *y) { }\nvoid h() { k<<<1, 1>>>(1, 2); }\n",
    }
    for want, src in cases.items():
        f = tmp_path / "c.cu"
        f.write_text(src)
        r = subprocess.run(["nvcc", "-c", str(f), "-o", str(tmp_path / "c.o")], capture_output=True, text=True)
        assert r.returncode != 0
        got, first = policy.compile_error_class(r.stdout + r.stderr)
        assert got == want, (want, got, first)
        assert first and "error" not in first[:6]
    assert policy.compile_error_class("")[0] == "other"


def test_compile_failure_columns_only_for_compile_errors():
    from cudaperf.result import EvalResult

    log = 'k.cu(1): error: identifier "x" is undefined\n1 error detected'
    bad = EvalResult("t", "h", status="compile_error", compile_log=log)
    assert policy.compile_failure(bad) == {"error_class": "undefined identifier",
                                           "first_error": 'identifier "x" is undefined'}
    assert policy.compile_failure(EvalResult("t", "h", status="wrong", compile_log=log)) == \
        {"error_class": "", "first_error": ""}


def test_sft_results_reads_both_evaluation_splits(tmp_path):
    import pandas as pd

    m = tmp_path / "sft-S"
    m.mkdir()
    (m / "train_log.json").write_text(json.dumps({"parameters": 7, "losses": [
        {"step": 10, "loss": 2.0}, {"step": 20, "loss": 1.0}, {"step": 20, "eval_loss": 2.5}]}))
    for stem, n in (("eval", 4), ("eval_infamily", 2)):
        rows = [{"model": "sft-S", "task_id": f"t{i}", "status": "compile_error", "compiled": False,
                 "correct": False} for i in range(n)]
        pd.DataFrame(rows).to_parquet(m / f"{stem}.parquet")
        (m / f"{stem}_summary.json").write_text(json.dumps(policy.eval_summary(rows) | {"model": "sft-S"}))
    logs, sums, samples = policy.sft_results(tmp_path)
    assert len(logs) == 3 and logs["eval_loss"].notna().sum() == 1
    assert sorted(sums["split"]) == ["infamily", "test"] and set(sums["samples"]) == {4, 2}
    assert samples.groupby("split").size().to_dict() == {"infamily": 2, "test": 4}
    empty = policy.sft_results(tmp_path / "none")
    assert all(x.empty for x in empty)


def test_in_family_heldout_programs_stay_out_of_sft_and_grpo():
    import dataclasses

    from cudaperf import grpo

    base = dev_tasks()[0]
    mk = lambda i, split, inner: dataclasses.replace(  # noqa: E731
        base, task_id=f"x/{i}", family=f"fam{i % 2}", split=split,
        meta={"in_family_split": inner} if inner else {})
    tasks = [mk(0, "train", "train"), mk(1, "train", "val"), mk(2, "train", "train"), mk(3, "test", ""),
             mk(4, "val", "")]
    assert [t.task_id for t in policy.training_tasks(tasks)] == ["x/0", "x/2"]
    assert [t.task_id for t in policy.evaluation_tasks(tasks, "infamily")] == ["x/1"]
    assert [t.task_id for t in policy.evaluation_tasks(tasks, "test")] == ["x/3"]
    assert sorted(t.task_id for t in policy.evaluation_tasks(tasks, "seen")) == ["x/0", "x/2"]
    with pytest.raises(ValueError, match="unknown evaluation split"):
        policy.evaluation_tasks(tasks, "val")
    s = grpo.GRPOSettings.for_profile("smoke", max_tasks=0)
    assert sorted(t.task_id for t in grpo.select_tasks(tasks, s)) == ["x/0", "x/2"]


def test_infamily_rest_pool_leaves_the_evaluation_slice_unseen():
    """GRPO's 'infamily_rest' pool: in-family held-out programs outside the evaluation slice, none
    of SFT's programs; an evaluation is refused where it overlaps the pool of the run it scores."""
    import dataclasses

    from cudaperf import grpo

    base = dev_tasks()[0]
    mk = lambda i, split, inner: dataclasses.replace(  # noqa: E731
        base, task_id=f"x/{i:02d}", family=f"fam{i % 3}", split=split,
        meta={"in_family_split": inner} if inner else {})
    tasks = [mk(i, "train", "val" if i % 2 else "train") for i in range(30)] + [mk(30, "test", "")]
    held = {t.task_id for t in tasks if policy.in_family_heldout(t)}
    sl = {t.task_id for t in policy.evaluation_tasks(tasks, "infamily", 6, 0)}
    rest = [t.task_id for t in policy.infamily_rest(tasks, reserve=6)]
    assert len(held) == 15 and len(sl) == 6 and rest == sorted(held - sl)
    assert not set(rest) & {t.task_id for t in policy.training_tasks(tasks)}
    with pytest.raises(ValueError, match="reserve"):
        policy.infamily_rest(tasks, reserve=0)
    s = grpo.GRPOSettings.for_profile("smoke", max_tasks=0, split="infamily_rest", eval_reserve=6)
    assert [t.task_id for t in grpo.select_tasks(tasks, s)] == rest
    rec = {"split": "infamily_rest", "eval_reserve": 6}
    assert grpo.trained_eval_overlap(rec, policy.evaluation_tasks(tasks, "infamily", 6, 0), tasks) == []
    wider = policy.evaluation_tasks(tasks, "infamily", 10, 0)  # more than the slice: some were trained on
    assert grpo.trained_eval_overlap(rec, wider, tasks) == sorted({t.task_id for t in wider} - sl)
    assert grpo.trained_eval_overlap(rec, policy.evaluation_tasks(tasks, "infamily", 6, 1), tasks)  # another seed
    assert grpo.trained_eval_overlap({"split": "train"}, wider, tasks) == []
    assert grpo.trained_eval_overlap({}, wider, tasks) == []


def test_renamed_task_compiles_and_exports_the_new_entry(tmp_path):
    """SFT's renamed copies: same code under a fresh entry name; real nvcc, the library exports it."""
    import ctypes
    import random
    import shutil

    from cudaperf.compile import compile_candidate

    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    rng = random.Random(3)
    for t in dev_tasks()[:2]:
        r = policy.renamed(t, policy.random_entry_name(rng, t))
        assert r.entry != t.entry and r.meta["renamed_from"] == t.entry
        assert f"{r.entry}(" in prompts.task_user_text(r).replace(" (", "(")
        for v in r.variants:
            assert t.entry not in v.source.replace(r.entry, "")
            cr = compile_candidate(v.source, arch="sm_90", cache_dir=str(tmp_path))
            assert cr.ok, cr.log[-500:]
            assert hasattr(ctypes.CDLL(cr.so_path), r.entry)
    with pytest.raises(ValueError, match="not a C identifier"):
        policy.renamed(t, "9bad name")
    recs = policy.sft_examples(dev_tasks()[:2], refine=False, renames=2)
    kinds = [x["kind"] for x in recs]
    assert kinds.count("translate-renamed") == 2 * kinds.count("translate")


def test_renamed_parameters_change_names_only(tmp_path):
    """Parameters renamed too: the prompt shows only the new names, every variant still compiles
    (real nvcc), and the C reference computes the same outputs from the same inputs."""
    import random
    import shutil

    import numpy as np

    from cudaperf.compile import compile_candidate
    from cudaperf.inputs import make_inputs
    from cudaperf.reference import reference_outputs

    if shutil.which("nvcc") is None or shutil.which("gcc") is None:
        pytest.skip("needs nvcc and gcc")
    rng = random.Random(5)
    for t in dev_tasks():
        names = policy.random_param_names(rng, t)
        assert len(set(names.values())) == len(t.signature) and not set(names.values()) & {p.name for p in t.signature}
        r = policy.renamed(t, policy.random_entry_name(rng, t), names)
        assert [p.name for p in r.signature] == [names[p.name] for p in t.signature]
        text = prompts.task_user_text(r)
        for old in names:  # no old parameter name survives as a word outside member accesses
            assert not re.search(rf"(?<![\w.]){re.escape(old)}\b", r.reference), (t.task_id, old)
            assert f"{old} (" not in text
        for v in r.variants:
            cr = compile_candidate(v.source, arch="sm_90", cache_dir=str(tmp_path / "nv"))
            assert cr.ok, (t.task_id, v.name, cr.log[-500:])
        test = t.tests[1]
        rt = next(x for x in r.tests if x.name == test.name)
        a = make_inputs(t, test, 0)

        def same_inputs(d):  # the original's inputs, under the new names
            for p in t.signature:
                if p.is_pointer and p.role in ("in", "inout"):
                    f = d / f"{names[p.name]}.bin"
                    np.ascontiguousarray(a[p.name], dtype=p.dtype).tofile(f)
                    f.chmod(0o644)
            return {names[p.name]: a[p.name] for p in t.signature if not p.is_pointer}

        ra = reference_outputs(t, test, 0, cache_dir=tmp_path / "ra")
        rb = reference_outputs(r, rt, 0, cache_dir=tmp_path / "rb", inputs=same_inputs)
        assert ra and set(rb) == {names[k] for k in ra}
        assert {names[k]: v.tobytes() for k, v in ra.items()} == {k: v.tobytes() for k, v in rb.items()}
    with pytest.raises(ValueError, match="not parameters"):
        policy.renamed(t, "fine_name", {"no_such_param": "q"})


def test_sft_logs_a_loss_per_named_eval_set(tok, tmp_path):
    cfg = policy.PolicyConfig.for_profile("smoke", sft_max_steps=-1, sft_epochs=2.0, batch_size=4,
                                          logging_steps=1)
    model = policy.build_model("tiny", tok, seed=1)
    ex = policy.sft_examples(TASKS[:1], refine=False)
    out = policy.train_sft(model, tok, ex, cfg, tmp_path / "e",
                           eval_examples={"val": policy.sft_examples(TASKS[1:2], refine=False),
                                          "infamily": policy.sft_examples(TASKS[2:3], refine=False),
                                          "empty": []})
    keys = [k for r in out.losses for k in r if k.startswith("eval_")]
    assert keys.count("eval_val_loss") == 2 and keys.count("eval_infamily_loss") == 2, out.losses
    assert "eval_empty_loss" not in keys


def test_signature_match_tells_copied_names_from_invented_ones():
    t = dev_tasks()[0]  # saxpy(int n, float a, const float *x, float *y)
    assert all(policy.signature_match(v.source, t) == "exact" for v in t.variants)
    params = ", ".join(f"{p.ctype} {p.name}" for p in t.signature)
    assert policy.signature_match(f'extern "C" void {t.entry}({params}) {{ }}', t) == "exact"
    swapped = params.replace(" x", " q")
    assert policy.signature_match(f'extern "C" void {t.entry}({swapped}) {{ }}', t) == "entry"
    assert policy.signature_match(f'extern "C" void other_name({params}) {{ }}', t) == "none"
    assert policy.signature_match(f"void {t.entry}({params}) {{ }}", t) == "none"  # not extern "C"
    rows = [{"task_id": "a", "compiled": False, "correct": False, "signature": s}
            for s in ("exact", "entry", "none", "none")]
    s = policy.eval_summary(rows)
    assert (s["signature_exact_rate"], s["entry_name_rate"]) == (0.25, 0.5)
    assert "signature_exact_rate" not in policy.eval_summary([{k: v for k, v in r.items() if k != "signature"}
                                                             for r in rows])


def test_static_kv_cache_samples_the_same_tokens(tok):
    """policy.generation_kwargs' static cache (GRPO / evaluation speed option) changes how the
    cache is kept, not what is generated: greedy samples are identical."""
    model = policy.build_model("tiny", tok, seed=3)
    tasks = dev_tasks()[:2]
    dyn = policy.sample(model, tok, tasks, n=1, temperature=0, max_new_tokens=12, batch_size=2)
    sta = policy.sample(model, tok, tasks, n=1, temperature=0, max_new_tokens=12, batch_size=2, cache="static")
    assert dyn == sta and all(s[0] for s in dyn)
    with pytest.raises(ValueError, match="unknown KV cache"):
        policy.generation_kwargs(tok, 8, 0.0, 1.0, cache="paged")


def test_prompts_padded_to_a_multiple_sample_the_same_tokens(tok):
    """policy.encode_prompts rounds a batch's prompt width up (fewer static-cache shapes to
    compile on a GPU); the extra left padding is masked, so greedy samples do not change."""
    texts = ["int a;", "void f(void) { return; }"]
    tok.padding_side = "left"
    plain = policy.encode_prompts(tok, texts, "cpu")
    padded = policy.encode_prompts(tok, texts, "cpu", 64)
    assert padded["input_ids"].shape[1] % 64 == 0 and padded["input_ids"].shape[1] >= plain["input_ids"].shape[1]
    assert int(padded["attention_mask"].sum()) == int(plain["attention_mask"].sum())
    with pytest.raises(ValueError):
        policy.encode_prompts(tok, texts, "cpu", -1)
    model = policy.build_model("tiny", tok, seed=3)
    tasks = dev_tasks()[:2]
    a = policy.sample(model, tok, tasks, n=1, temperature=0, max_new_tokens=10, batch_size=2)
    b = policy.sample(model, tok, tasks, n=1, temperature=0, max_new_tokens=10, batch_size=2, pad_multiple=64)
    assert a == b


def test_sft_then_greedy_sampling_reproduces_the_trained_programs(tok, tmp_path):
    """The whole SFT -> sampling path end to end: a model trained to near-zero loss on two
    programs must give them back verbatim under greedy decoding (chat template, completion-only
    loss, left-padded batching, decoding and code extraction all agree), and they compile.
    Session 13 ran this at S size on 6 dataset programs before trusting that the policies' 0 %
    compile rate on held-out families is the models' generalisation, not a pipeline bug."""
    import shutil

    from cudaperf.compile import compile_candidate

    pick = sorted(TASKS, key=lambda t: len(t.baseline_variant.source))[:2]
    ex = [e for e in policy.sft_examples(pick, refine=False) if e["variant"] == pick[0].baseline_variant.name
          or e["variant"] == pick[1].baseline_variant.name]
    assert len(ex) == 2
    cfg = policy.PolicyConfig.for_profile("mini", model_size="S", sft_epochs=150.0, batch_size=2,
                                          learning_rate=2e-3, sft_time_budget_s=0, logging_steps=50)
    model = policy.build_model("S", tok, max_length=2048, seed=0)
    out = policy.train_sft(model, tok, ex, cfg, tmp_path / "sft")
    assert [r["loss"] for r in out.losses if "loss" in r][-1] < 0.05
    got = policy.extract_codes(policy.sample(model, tok, pick, n=1, temperature=0.0, max_new_tokens=600,
                                             batch_size=2))
    for t, (code,) in zip(pick, got):
        assert code.strip() == t.baseline_variant.source.strip(), t.task_id
        assert policy.signature_match(code, t) == "exact"
        if shutil.which("nvcc"):
            assert compile_candidate(code, arch="sm_90", cache_dir=str(tmp_path / "cc")).ok


def test_copy_records_show_a_renamed_program_and_answer_it_verbatim():
    recs = policy.copy_examples(TASKS[:3], copies=2, seed=5)
    assert len(recs) == 6 and {r["kind"] for r in recs} == {"copy"}
    names = set()
    for r in recs:
        t = next(t for t in TASKS if t.task_id == r["task_id"])
        user = r["prompt"][-1]["content"]
        code = extract_code(r["completion"][0]["content"]).strip()
        assert user.startswith(policy.COPY_PROMPT) and f"```cuda\n{code}\n```" in user
        assert r["prompt"][0]["content"] == prompts.SYSTEM_PROMPT
        # renamed: the task's own entry point is gone, a fresh one is defined
        assert not re.search(rf"\b{re.escape(t.entry)}\b", code)
        m = re.search(r'extern "C" void (\w+)\(', code)
        assert m and m.group(1) != t.entry
        names.add(m.group(1))
    assert len(names) == 6, "every copy gets its own names"
    assert policy.copy_examples(TASKS[:3], copies=2, seed=5) == recs  # seeded


def test_training_attention_switches_cudnn_sdpa_and_reports_the_previous_setting():
    import torch

    from cudaperf import policy

    start = torch.backends.cuda.cudnn_sdp_enabled()
    try:
        policy.training_attention(True)
        assert policy.training_attention(False) is True
        assert torch.backends.cuda.cudnn_sdp_enabled() is False
        assert policy.PolicyConfig().cudnn_attention is False  # off unless a profile asks
    finally:
        torch.backends.cuda.enable_cudnn_sdp(start)


def test_judge_harness_shares_runners_with_more_slots(tmp_path, monkeypatch):
    """Policy output is judged with shared runners and JUDGE_RUNNERS_PER_GPU slots, and GRPO's
    rollouts use the same number (its Harness default of 4 made steps runner-bound)."""
    from cudaperf import grpo

    monkeypatch.chdir(tmp_path)  # the harness makes its cache dir relative to the working directory
    h = policy.judge_harness(runners_per_gpu=7)
    assert h.cfg.share_runner and h.workers_per_gpu == 7
    assert policy.judge_harness().workers_per_gpu == policy.JUDGE_RUNNERS_PER_GPU > 4
    assert grpo.GRPOSettings().runners_per_gpu == policy.JUDGE_RUNNERS_PER_GPU
    assert policy.judge_harness(gpus="1").cfg.gpus == "1"
