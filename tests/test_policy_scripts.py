"""Policy benchmark scripts, CPU parts: sft_gpu.py --init (continuing SFT from a carried checkpoint)
and compile_probe.py (compile-only probe of a policy)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import shutil

import pytest
import torch

from cudaperf import policy
from cudaperf.devtasks import dev_tasks

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str = "sft_gpu"):
    spec = importlib.util.spec_from_file_location(f"{name}_script", ROOT / f"benchmarks/{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    tok = policy.train_tokenizer(policy.tokenizer_corpus(dev_tasks()), vocab_size=600)
    model = policy.build_model("tiny", tok, max_length=512, seed=3)
    d = tmp_path_factory.mktemp("sft-tiny")
    policy.save_policy(model, tok, d)
    (d / "train_log.json").write_text(json.dumps({"size": "tiny", "steps": 7, "seconds": 1.5,
                                                  "init_from": {"path": "older", "steps": 3}}))
    return d, model


def test_continued_model_has_the_saved_weights_in_fp32(saved):
    d, model = saved
    got = _script()._continued_model(d, "tiny")
    assert next(got.parameters()).dtype == torch.float32
    ref = {k: v.float() for k, v in model.state_dict().items()}
    for k, v in got.state_dict().items():
        # saved in fp16: equal up to fp16 rounding
        assert torch.allclose(v, ref[k], atol=1e-3, rtol=1e-3), k


def test_continued_model_refuses_another_size_or_no_weights(saved, tmp_path):
    d, _ = saved
    mod = _script()
    with pytest.raises(SystemExit, match="holds a tiny model, not M"):
        mod._continued_model(d, "M")
    with pytest.raises(SystemExit, match="no saved weights"):
        mod._continued_model(tmp_path, "tiny")


def test_init_record_chains_earlier_continuations(saved):
    d, _ = saved
    mod = _script()
    assert mod._init_record("") is None
    rec = mod._init_record(str(d))
    assert rec == {"path": str(d), "steps": 7, "seconds": 1.5, "init_from": {"path": "older", "steps": 3}}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_compile_probe_counts_every_sample(saved):
    """An untrained model writes no program: every sample fails to compile, none names the
    entry point, and each failure gets a first-error class."""
    d, model = saved
    tok = policy.load_tokenizer(d)
    tasks = dev_tasks()[:2]
    got = _script("compile_probe").probe(model, tok, tasks, temperature=1.0, n=2, max_new_tokens=12, batch_size=4)
    assert got["samples"] == 4 and got["compiled"] == 0 and got["compile_rate"] == 0.0
    assert got["signature"] == {"none": 4}
    assert sum(got["first_error"].values()) == 4


def test_read_compile_probes_merges_the_header_into_each_temperature(tmp_path):
    log = tmp_path / "probe.log"
    log.write_text("# a comment\nLoading weights: 100%\n"
                   + json.dumps({"model": "m", "split": "seen", "tasks": 2, "n": 4, "device": "cpu"}) + "\n"
                   + json.dumps({"temperature": 0.2, "samples": 8, "compiled": 1, "compile_rate": 0.125}) + "\n"
                   + json.dumps({"temperature": 1.0, "samples": 8, "compiled": 0, "compile_rate": 0.0}) + "\n")
    rows = policy.read_compile_probes([log])
    assert [(r["temperature"], r["compile_rate"], r["split"], r["source"]) for r in rows] == \
        [(0.2, 0.125, "seen", "probe.log"), (1.0, 0.0, "seen", "probe.log")]
    bad = tmp_path / "bad.log"
    bad.write_text(json.dumps({"temperature": 0.2}) + "\n")
    with pytest.raises(ValueError, match="before the probe's header"):
        policy.read_compile_probes([bad])


def test_committed_probe_logs_parse():
    logs = sorted((ROOT / "data" / "bench").glob("compile_probe_*.log"))
    rows = policy.read_compile_probes(logs)
    assert len(rows) >= len(logs)
    assert all(0.0 <= r["compile_rate"] <= 1.0 and r["samples"] > 0 for r in rows)


def test_grpo_eval_keeps_an_earlier_checkpoints_evaluation(tmp_path):
    """A second `grpo_gpu.py eval` of a later checkpoint renames the first one's files to
    _step<N>, and the same checkpoint evaluated again replaces its own files."""
    import pandas as pd

    keep = _script("grpo_gpu").keep_earlier_eval

    def write(ck):
        pd.DataFrame([{"policy": "sft_start", "checkpoint": "runs/grpo/r/start_policy"},
                      {"policy": "grpo", "checkpoint": ck}]).to_parquet(tmp_path / "eval_infamily.parquet")
        pd.DataFrame([{"policy": "grpo", "ck": ck}]).to_parquet(tmp_path / "eval_infamily_samples.parquet")

    write("runs/grpo/r/checkpoint-38")
    keep(tmp_path, "eval_infamily", "runs/grpo/r/checkpoint-38")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval_infamily.parquet", "eval_infamily_samples.parquet"]
    keep(tmp_path, "eval_infamily", "runs/grpo/r/checkpoint-50")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval_infamily_step38.parquet",
                                                          "eval_infamily_step38_samples.parquet"]
    assert pd.read_parquet(tmp_path / "eval_infamily_step38_samples.parquet")["ck"][0].endswith("-38")
    keep(tmp_path, "eval", "runs/grpo/r/checkpoint-50")  # no earlier test-split evaluation: nothing to do


def test_grpo_eval_writes_one_file_pair_per_checkpoint(tmp_path):
    """`eval --also-steps 20`: the newest checkpoint's files under the plain stem and step 20's
    under <stem>_step20, each with the SFT start and that checkpoint named "grpo"."""
    import pandas as pd

    g = _script("grpo_gpu")
    per = pd.DataFrame({"policy": ["sft_start", "grpo", "grpo_step20"], "task_id": ["a"] * 3,
                        "correct": [True, False, True]})
    summary = {n: {"policy": n, "checkpoint": f"ck/{n}", "pass@1": float(c)}
               for n, c in zip(per["policy"], per["correct"])}
    written = g.write_evals(tmp_path, "eval_infamily", per, summary)
    assert [w[0] for w in written] == ["eval_infamily", "eval_infamily_step20"]
    s20 = pd.read_parquet(tmp_path / "eval_infamily_step20.parquet")
    assert s20["policy"].tolist() == ["sft_start", "grpo"] and s20["checkpoint"].tolist() == ["ck/sft_start",
                                                                                             "ck/grpo_step20"]
    samp = pd.read_parquet(tmp_path / "eval_infamily_samples.parquet")
    assert samp["policy"].tolist() == ["sft_start", "grpo"] and samp["correct"].tolist() == [True, False]
    assert g._steps_arg("20, 40") == [20, 40] and g._steps_arg("") == []
    with pytest.raises(SystemExit):
        g._steps_arg("twenty")


def test_grpo_eval_finds_the_start_policy_or_the_runs_start_from(tmp_path):
    """`eval` reads the float32 copy `train` saved; on a fresh machine with only the run's checkpoint
    it falls back to the run's committed start_from; with neither it stops with a clear message."""
    import json

    g = _script("grpo_gpu")
    with pytest.raises(SystemExit, match="no start policy for r"):
        g.start_folder("r", tmp_path)
    sft = tmp_path / "data/models/sft"
    sft.mkdir(parents=True)
    (sft / "config.json").write_text("{}")
    (sft / "model.safetensors").write_bytes(b"x")
    (tmp_path / "data/grpo/r").mkdir(parents=True)
    (tmp_path / "data/grpo/r/settings.json").write_text(json.dumps({"start_from": "data/models/sft"}))
    assert g.start_folder("r", tmp_path) == sft
    saved = tmp_path / "runs/grpo/r/start_policy"
    saved.mkdir(parents=True)
    (saved / "config.json").write_text("{}")
    assert g.start_folder("r", tmp_path) == saved


def test_stored_samples_come_back_in_task_order_and_only_for_the_same_sampling(tmp_path):
    """policy.save_samples / stored_samples: the SFT start sampled once, reused by evaluations; a
    file drawn another way (any setting) or lacking a task is refused with the reason."""
    tasks = dev_tasks()[:3]
    st = {"model": "data/models/sft", "split": "infamily", "n": 2, "temperature": 0.5,
          "max_new_tokens": 64, "seed": 0}
    rows = [[f"{t.task_id}#{j}" for j in range(2)] for t in tasks]
    f = policy.save_samples(tmp_path / "s.parquet", tasks, rows, st, device="cpu", seconds=1.0)
    assert policy.stored_samples(f, tasks[::-1], st) == rows[::-1]
    assert policy.stored_samples(f, tasks[:1], st) == rows[:1]  # extra tasks are ignored
    with pytest.raises(ValueError, match="temperature is 0.5, this evaluation wants 0.7"):
        policy.stored_samples(f, tasks, {**st, "temperature": 0.7})
    with pytest.raises(ValueError, match="model is data/models/sft"):
        policy.stored_samples(f, tasks, {**st, "model": "data/models/other"})
    with pytest.raises(ValueError, match="n is 2"):
        policy.stored_samples(f, tasks, {**st, "n": 3})
    with pytest.raises(ValueError, match=f"lacks samples of {dev_tasks()[3].task_id}"):
        policy.stored_samples(f, dev_tasks()[:4], st)
    with pytest.raises(ValueError, match="settings lack"):
        policy.save_samples(tmp_path / "t.parquet", tasks, rows, {"model": "m"})
    with pytest.raises(ValueError, match="expected 3 tasks x 2"):
        policy.save_samples(tmp_path / "t.parquet", tasks, rows[:2], st)


def test_grpo_sample_command_writes_what_eval_start_samples_reads(saved, tmp_path):
    """`grpo_gpu.py sample` on this CPU with a tiny policy: the file holds n samples per task of the
    split's slice with the settings `eval --start-samples` checks (and the run's start_from)."""
    import pandas as pd

    d, _ = saved
    g = _script("grpo_gpu")
    out = tmp_path / "start.parquet"
    g.main(["sample", "--model", str(d), "--out", str(out), "--split", "infamily", "--eval-tasks", "2",
            "--n", "2", "--temperature", "0.5", "--max-new-tokens", "4", "--sample-batch", "4",
            "--gen-pad-multiple", "64"])
    df = pd.read_parquet(out)
    assert len(df) == 4 and set(df["sample"]) == {0, 1} and (df["dtype"] == "float32").all()
    args = g.main.__globals__["argparse"].Namespace(split="infamily", n=2, temperature=0.5, max_new_tokens=4, seed=0)
    tasks = policy.evaluation_tasks(g._tasks(), "infamily", 2, 0)
    got = policy.stored_samples(out, tasks, g._sample_settings(args, str(d)))
    assert [len(r) for r in got] == [2, 2]
    with pytest.raises(SystemExit, match="no weights"):
        g.main(["sample", "--model", str(tmp_path), "--out", str(out)])
    (tmp_path / "data/grpo/r").mkdir(parents=True)
    (tmp_path / "data/grpo/r/settings.json").write_text(json.dumps({"start_from": "data/models/sft-M-s18"}))
    assert g.run_start("r", tmp_path) == "data/models/sft-M-s18"


def test_grpo_eval_refuses_tasks_an_infamily_rest_run_trained_on(tmp_path, monkeypatch):
    """`grpo_gpu.py eval` of an 'infamily_rest' run: an in-family slice wider than the reserved one
    stops with the reason before any policy is loaded."""
    g = _script("grpo_gpu")
    (tmp_path / "data/grpo/r").mkdir(parents=True)
    (tmp_path / "data/grpo/r/settings.json").write_text(json.dumps({"split": "infamily_rest", "eval_reserve": 64}))
    monkeypatch.setattr(g, "ROOT", tmp_path)
    monkeypatch.setattr(g, "start_folder", lambda run: pytest.fail("loaded a policy before the check"))
    with pytest.raises(SystemExit, match="in the run's training pool"):
        g.main(["eval", "--run", "r", "--split", "infamily", "--eval-tasks", "96"])
    # the reserved slice itself passes the check and goes on to load the policies
    monkeypatch.setattr(g, "start_folder", lambda run: (_ for _ in ()).throw(RuntimeError("past the check")))
    with pytest.raises(RuntimeError, match="past the check"):
        g.main(["eval", "--run", "r", "--split", "infamily", "--eval-tasks", "64"])


def test_grpo_train_passes_its_options_to_the_settings(monkeypatch):
    """`grpo_gpu.py train` options reach GRPOSettings (the run records them in settings.json)."""
    from types import SimpleNamespace

    import pandas as pd

    from cudaperf import grpo

    g = _script("grpo_gpu")
    seen = {}

    def fake_run(run, profile, tasks, settings, root, resume):
        seen.update(run=run, settings=settings)
        return SimpleNamespace(log=pd.DataFrame(), steps_done=0, resumed_from=None, stopped_by_budget=True,
                               seconds=0.0)

    monkeypatch.setattr(grpo, "run_grpo", fake_run)
    g.main(["train", "--run", "r", "--ablation", "ver_only", "--ranker", "none", "--keep-runners", "64",
            "--runners-per-gpu", "16", "--max-tasks", "128", "--lr", "5e-5", "--temperature", "0.7"])
    s = seen["settings"]
    assert seen["run"] == "r" and (s.keep_runners, s.runners_per_gpu, s.max_tasks) == (64, 16, 128)
    assert (s.learning_rate, s.temperature, s.ablation) == (5e-5, 0.7, "ver_only")
    g.main(["train", "--run", "r", "--ablation", "ver_only", "--ranker", "none"])
    assert seen["settings"].runners_per_gpu == grpo.GRPOSettings.for_profile("mini").runners_per_gpu
    assert seen["settings"].gen_cache == "graph" and seen["settings"].gen_pad_multiple == 0  # the mini profile's
    assert seen["settings"].split == "train" and seen["settings"].alpha_speed < 0  # the profile's
    g.main(["train", "--run", "r", "--ablation", "ver_only", "--ranker", "none", "--alpha-speed", "0.25"])
    assert seen["settings"].alpha_speed == 0.25
    assert seen["settings"].prepare_ahead == 8  # the profile's lookahead
    g.main(["train", "--run", "r", "--ablation", "ver_only", "--ranker", "none", "--prepare-ahead", "0"])
    assert seen["settings"].prepare_ahead == 0  # 0 is a setting (off), not "the profile's"
    with pytest.raises(SystemExit, match="alpha-speed"):
        g.main(["train", "--run", "r", "--ablation", "ver_only", "--ranker", "none", "--alpha-speed", "-1"])
    g.main(["train", "--run", "r", "--ablation", "ver_only", "--ranker", "none", "--split", "infamily_rest"])
    assert seen["settings"].split == "infamily_rest" and seen["settings"].eval_reserve == 64
    g.main(["train", "--run", "r", "--ablation", "ver_only", "--ranker", "none", "--gen-cache", "static",
            "--gen-pad-multiple", "256", "--compile-ahead", "8"])
    assert (seen["settings"].gen_cache, seen["settings"].gen_pad_multiple) == ("static", 256)
    assert seen["settings"].compile_ahead == 8


def test_grpo_train_passes_scale_rewards_and_beta_to_the_settings(monkeypatch):
    """`train --scale-rewards batch --beta 0`: both reach GRPOSettings (beta 0 is a setting, not
    "the profile's"); left out, the profile's values stay."""
    from cudaperf import grpo

    g = _script("grpo_gpu")
    seen = []

    class Stop(Exception):
        pass

    def fake_run(run, profile, *, tasks, settings, root, resume):
        seen.append(settings)
        raise Stop

    monkeypatch.setattr(grpo, "run_grpo", fake_run)
    monkeypatch.setattr(g, "_tasks", lambda: [])
    for extra in (["--scale-rewards", "batch", "--beta", "0"], []):
        with pytest.raises(Stop):
            g.main(["train", "--ablation", "ver_only", "--ranker", "none", *extra])
    profile = grpo.GRPOSettings.for_profile("mini")
    assert (seen[0].scale_rewards, seen[0].beta) == ("batch", 0.0)
    assert (seen[1].scale_rewards, seen[1].beta) == (profile.scale_rewards, profile.beta)


def test_grpo_eval_with_turns_writes_first_attempt_metrics_and_every_turn(saved, tmp_path, monkeypatch):
    """`grpo_gpu.py eval --turns 2` on this CPU: the tiny policy as both start and checkpoint, a scripted
    judge (the first attempt wrong, the second correct for chain 0): pass@1 from the first attempts,
    pass_by_turn1/2 in the summary, every attempt in eval_infamily_turns.parquet."""
    import shutil

    import pandas as pd

    from cudaperf.result import EvalResult

    d, _ = saved
    g = _script("grpo_gpu")
    for sub in ("runs/grpo/r/start_policy", "runs/grpo/r/checkpoint-3"):
        shutil.copytree(d, tmp_path / sub)
    (tmp_path / "data/grpo/r").mkdir(parents=True)
    (tmp_path / "data/grpo/r/settings.json").write_text(json.dumps({"split": "train", "start_from": "x"}))
    every = dev_tasks()

    class Judge:
        def __init__(self):
            self.rounds = 0

        def prepare(self, tasks):
            return {}

        def close(self):
            pass

        def evaluate_many(self, items):
            self.rounds += 1
            seen: dict[str, int] = {}
            out = []
            for t, _ in items:
                k = seen[t.task_id] = seen.get(t.task_id, -1) + 1
                ok = self.rounds % 2 == 0 and k == 0  # each policy: turn 2, chain 0
                out.append(EvalResult(t.task_id, "h", status="correct" if ok else "wrong", compiled=True,
                                      correct=ok, pass_rate=1.0 if ok else 0.0, speedup=2.0 if ok else None,
                                      cv=0.0 if ok else None))
            return out

    monkeypatch.setattr(g, "ROOT", tmp_path)
    monkeypatch.setattr(g, "_tasks", lambda: every)
    monkeypatch.setattr(g, "start_folder", lambda run: tmp_path / "runs/grpo/r/start_policy")
    monkeypatch.setattr(policy, "judge_harness", lambda: Judge())
    monkeypatch.setattr(policy, "evaluation_tasks", lambda tasks, split, k, seed: list(tasks)[:2])
    with pytest.raises(SystemExit, match="first attempts only"):
        g.main(["eval", "--run", "r", "--split", "infamily", "--turns", "2", "--start-samples", "s.parquet"])
    g.main(["eval", "--run", "r", "--split", "infamily", "--eval-tasks", "2", "--n", "2", "--turns", "2",
            "--max-new-tokens", "4", "--temperature", "0.7"])
    run = tmp_path / "data/grpo/r"
    summ = pd.read_parquet(run / "eval_infamily_t2.parquet").set_index("policy")
    assert list(summ.index) == ["sft_start", "grpo"] and (summ["turns"] == 2).all()
    assert (summ["pass@1"] == 0.0).all() and (summ["pass_by_turn1"] == 0.0).all()
    assert (summ["pass_by_turn2"] == 0.5).all()  # one of each task's two chains, on its second attempt
    turns = pd.read_parquet(run / "eval_infamily_t2_turns.parquet")
    assert len(turns) == 2 * (4 + 4) and set(turns["turn"]) == {1, 2}  # 2 policies x (4 first + 4 second)
    assert len(pd.read_parquet(run / "eval_infamily_t2_samples.parquet")) == 2 * 4  # first attempts only
    assert not (run / "eval_infamily.parquet").exists()  # a one-turn evaluation's files are not touched
    assert g.eval_stem("test") == "eval" and g.eval_stem("infamily", 3) == "eval_infamily_t3"
    with pytest.raises(SystemExit, match="turns must be"):
        g.main(["eval", "--run", "r", "--turns", "0"])
