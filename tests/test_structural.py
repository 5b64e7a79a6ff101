"""cudaperf.structural.StructuralReward: TRL signature, scaling, gate, pickling, throughput.

The rankers here are either set by hand (documented weights, so expected values are exact) or
trained on SYNTHETIC items (random phî, runtimes a known function of them; see test_ranker.py).
The tasks are the hand-written dev tasks, so the code scored is real CUDA.
"""
from __future__ import annotations

import pickle
import time
from dataclasses import replace

import numpy as np
import pytest

from cudaperf import ranker
from cudaperf.config import RewardConfig
from cudaperf.devtasks import dev_tasks
from cudaperf.features import FEATURE_NAMES, phi_hat, static_features
from cudaperf.result import EvalResult
from cudaperf.structural import StructuralReward

TASKS = {t.task_id: t for t in dev_tasks()}
TRANSPOSE = TASKS["dev/transpose_f32"]


def hand_model(per_log2: float = 1.0, **w) -> ranker.LinearRanker:
    """Linear ranker with raw-feature weights `w` (mean 0, std 1): s = sum w_i phî_i."""
    cols = ranker.static_columns()
    vec = np.array([w.get(n, 0.0) for n in FEATURE_NAMES])
    return ranker.LinearRanker(cols, np.zeros(len(cols)), np.ones(len(cols)), vec,
                               scale={"per_log2": per_log2})


def fenced(src: str) -> str:
    return f"Here is my kernel:\n```cuda\n{src}```\nIt should be fast."


def cfg(**kw) -> RewardConfig:
    return replace(RewardConfig(), **kw)


def test_naive_variant_scores_zero_and_better_structure_scores_more():
    r = StructuralReward(TASKS, hand_model(coal=2.0), cfg(str_gate="always"))
    src = {v.name: v.source for v in TRANSPOSE.variants}
    out = r(["p"] * 3, [fenced(src["naive"]), fenced(src["tiled_smem"]), src["coalesced_write"]],
            task_id=[TRANSPOSE.task_id] * 3)
    assert out[0] == 0.0
    # tiled_smem makes every access coalesced (coal 0.5 -> 1.0): 2 * 0.5 / per_log2 = 1.0
    assert out[1] == pytest.approx(1.0)
    assert out[2] == pytest.approx(0.0)


def test_naive_features_given_at_construction_are_the_reference():
    tiled = TRANSPOSE.variant("tiled_smem").source
    naive = static_features(TRANSPOSE.variant("naive").source).values()
    r = StructuralReward(TASKS, hand_model(coal=2.0), cfg(str_gate="always"),
                         naive_features={TRANSPOSE.task_id: {**naive, "coal": 0.75}})
    assert r(["p"], [tiled], task_id=[TRANSPOSE.task_id]) == [pytest.approx(0.5)]


def test_value_is_scaled_clipped_and_weighted():
    t = TRANSPOSE.task_id
    tiled = TRANSPOSE.variant("tiled_smem").source
    r = StructuralReward(TASKS, hand_model(per_log2=0.25, coal=2.0), cfg(str_gate="always"))
    assert r(["p"], [tiled], task_id=[t]) == [pytest.approx(4.0)]  # 1.0 / 0.25
    r = StructuralReward(TASKS, hand_model(per_log2=0.01, coal=2.0), cfg(str_gate="always"))
    assert r(["p"], [tiled], task_id=[t]) == [pytest.approx(4.0)]  # clipped at s_max
    r = StructuralReward(TASKS, hand_model(per_log2=0.01, coal=-2.0), cfg(str_gate="always"))
    assert r(["p"], [tiled], task_id=[t]) == [pytest.approx(-0.5)]  # clipped at s_min
    r = StructuralReward(TASKS, hand_model(per_log2=0.5, coal=2.0),
                         cfg(str_gate="always", alpha_speed=2.0, w_str=0.5))
    # alpha_speed scales (2 * 2.0); w_str is GRPO's reward weight, not applied twice here
    assert r(["p"], [tiled], task_id=[t]) == [pytest.approx(4.0)]


def _res(**kw) -> EvalResult:
    return EvalResult(task_id=TRANSPOSE.task_id, candidate_hash="h", **kw)


def test_correct_gate_needs_a_clean_correct_result():
    r = StructuralReward(TASKS, hand_model(coal=2.0), cfg(str_gate="correct"))
    tiled = TRANSPOSE.variant("tiled_smem").source
    results = [_res(status="correct", compiled=True, correct=True, pass_rate=1.0),
               _res(status="wrong", compiled=True, correct=False, pass_rate=0.5),
               _res(status="correct", compiled=True, correct=True, pass_rate=1.0,
                    flags=["hack:roofline"]),
               _res(status="compile_error", compiled=False).to_dict()]  # dict records work too
    out = r(["p"] * 4, [tiled] * 4, task_id=[TRANSPOSE.task_id] * 4, results=results)
    assert out[0] == pytest.approx(1.0) and out[1:] == [None, None, None]


def test_compiled_gate_and_parse_fallback_without_results():
    tiled = TRANSPOSE.variant("tiled_smem").source
    garbage = "```cuda\n}}} __global__ void ((( {{ not C++ at all\n```"
    tid = [TRANSPOSE.task_id] * 2
    r = StructuralReward(TASKS, hand_model(coal=2.0), cfg(str_gate="compiled"))
    out = r(["p"] * 2, [tiled, tiled], task_id=tid,
            results=[_res(status="compiled", compiled=True), _res(status="compile_error")])
    assert out[0] == pytest.approx(1.0) and out[1] is None
    for gate in ("compiled", "correct"):  # no verdicts: pays only what parses
        r = StructuralReward(TASKS, hand_model(coal=2.0), cfg(str_gate=gate))
        out = r(["p"] * 2, [tiled, garbage], task_id=tid)
        assert out[0] == pytest.approx(1.0) and out[1] is None
    r = StructuralReward(TASKS, hand_model(coal=2.0), cfg(str_gate="always"))
    assert isinstance(r(["p"], [garbage], task_id=tid[:1])[0], float)


def test_conversational_completions_and_logging():
    logged = {}
    r = StructuralReward(TASKS, hand_model(coal=2.0), cfg(str_gate="always"))
    conv = [[{"role": "assistant", "content": fenced(TRANSPOSE.variant("tiled_smem").source)}]]
    out = r(["p"], conv, task_id=[TRANSPOSE.task_id], log_metric=logged.__setitem__)
    assert out == [pytest.approx(1.0)]
    assert logged["reward/r_str"] == pytest.approx(1.0) and logged["reward/r_str_gate_open"] == 1.0


def test_misuse_is_loud(tmp_path):
    r = StructuralReward(TASKS, hand_model(), cfg(str_gate="always"))
    with pytest.raises(KeyError, match="task_id"):
        r(["p"], ["x"])
    with pytest.raises(KeyError, match="nope"):
        r(["p"], ["x"], task_id=["nope"])
    with pytest.raises(ValueError):
        r(["p"], ["x"], task_id=[TRANSPOSE.task_id], results=[])
    with pytest.raises(ValueError, match="str_gate"):
        StructuralReward(TASKS, hand_model(), cfg(str_gate="sometimes"))
    with pytest.raises(ValueError, match="scale"):
        StructuralReward(TASKS, hand_model(per_log2=float("nan")))
    prof = hand_model()
    prof.columns = prof.columns[:-1] + ["x_prof_ops"]
    with pytest.raises(ValueError, match="static features only"):
        StructuralReward(TASKS, prof)


def _trained_gbm():
    from test_ranker import synth_items

    items = synth_items(n_fam=6, tasks_per=6, seed=7)
    pairs = ranker.make_pairs(items)
    m = ranker.train_lgbm(items, pairs, ranker.static_columns(), rounds=40)
    ranker.fit_scale(m, items, pairs)
    return m


@pytest.mark.parametrize("kind", ["linear", "lgbm"])
def test_pickles_and_loads_by_path(tmp_path, kind):
    model = hand_model(coal=2.0, div=-0.3) if kind == "linear" else _trained_gbm()
    path = ranker.save(model, tmp_path / ("m.json" if kind == "linear" else "m.txt"))
    srcs = [v.source for t in TASKS.values() for v in t.variants]
    tids = [t.task_id for t in TASKS.values() for _ in t.variants]
    r = StructuralReward(TASKS, model, cfg(str_gate="always"))
    want = r(["p"] * len(srcs), srcs, task_id=tids)
    clone = pickle.loads(pickle.dumps(r))
    assert clone(["p"] * len(srcs), srcs, task_id=tids) == pytest.approx(want)
    by_path = StructuralReward(TASKS, str(path), cfg(str_gate="always"))
    assert by_path(["p"] * len(srcs), srcs, task_id=tids) == pytest.approx(want)
    assert all(v is not None for v in want)


def test_scores_at_least_1000_candidates_per_second_from_features():
    r = StructuralReward(TASKS, _trained_gbm(), cfg(str_gate="always"))
    pool = [(static_features(v.source), t.task_id) for t in TASKS.values() for v in t.variants]
    feats = [pool[i % len(pool)][0] for i in range(4000)]
    tids = [pool[i % len(pool)][1] for i in range(4000)]
    r.score_features(feats[:10], tids[:10])  # warm the naive cache
    t0 = time.perf_counter()
    vals = r.score_features(feats, tids)
    rate = len(vals) / (time.perf_counter() - t0)
    assert rate >= 1000, f"{rate:.0f} candidates/s"
    # and the batch agrees with scoring one at a time
    one = [r.score_features([f], [t])[0] for f, t in zip(feats[:12], tids[:12])]
    assert vals[:12] == pytest.approx(one)
    assert phi_hat(feats[0]).shape == (len(FEATURE_NAMES),)
