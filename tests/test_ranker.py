"""cudaperf.ranker: pairs, the pairwise logistic loss and its LightGBM objective, the rankers,
metrics, save/load and the CLI.

All data here is SYNTHETIC (no GPU measurements exist on this machine): each variant gets a
random phî vector x, and its runtime is exp(-0.7 · w_true · x + noise) — a known linear (or,
where said, nonlinear) function of the features plus log-normal noise — so the true ordering is
known and a ranker that learns must recover it on held-out families.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from cudaperf import ranker
from cudaperf.features import FEATURE_NAMES

# Deliberately unlike ranker.HAND_WEIGHTS, so the hand-weighted baseline is not secretly right.
W_TRUE = np.array([0.9, -0.4, 0.2, 0.6, -1.0, 0.3, -0.8, 0.1, 0.5, -0.3, 0.7])


def synth_items(n_fam=12, tasks_per=8, nvar=5, noise=0.1, seed=0, nonlinear=False):
    rng = np.random.default_rng(seed)
    rows = []
    for f in range(n_fam):
        split = "test" if f < 3 else "val" if f < 5 else "train"
        for t in range(tasks_per):
            for v in range(nvar):
                x = rng.normal(0, 1, len(FEATURE_NAMES))
                s = x @ W_TRUE
                if nonlinear:  # an interaction no linear score can express
                    s = 2.0 * np.sign(x[0]) * x[2] + 0.3 * s
                rows.append({"task_id": f"f{f}/t{t}", "variant": "naive" if v == 0 else f"v{v}",
                             "family": f"f{f}", "split": split,
                             "runtime_ms": math.exp(-0.7 * s + rng.normal(0, noise)), "cv": 0.02,
                             **{f"x_{n}": x[i] for i, n in enumerate(FEATURE_NAMES)}})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def data():
    items = synth_items()
    return items, ranker.make_pairs(items)


# --------------------------------------------------------------------------- pairs


def _items(rows):
    return pd.DataFrame([{"family": "f", "split": "train", **r} for r in rows])


def test_pairs_need_margin_and_gap_above_noise():
    it = _items([
        {"task_id": "a", "variant": "v0", "runtime_ms": 1.00, "cv": 0.0},
        {"task_id": "a", "variant": "v1", "runtime_ms": 1.05, "cv": 0.0},  # within 1.1x of v0
        {"task_id": "a", "variant": "v2", "runtime_ms": 1.15, "cv": 0.0},  # pairs v0 (1.15x), not v1 (1.095x)
        {"task_id": "b", "variant": "v0", "runtime_ms": 1.00, "cv": 0.10},
        {"task_id": "b", "variant": "v1", "runtime_ms": 1.20, "cv": 0.10},  # gap .2 < 2*(.1+.12)
        {"task_id": "b", "variant": "v2", "runtime_ms": 3.00, "cv": 0.10},  # gap 2 > 2*(.1+.3)
    ])
    p = ranker.make_pairs(it)
    got = {(it.variant[a] + it.task_id[a], it.variant[b] + it.task_id[b]) for a, b in zip(p.pos, p.neg)}
    assert got == {("v0a", "v2a"), ("v0b", "v2b"), ("v1b", "v2b")}
    assert (p["ratio"] > 1.1).all()
    # never across tasks, even when the runtimes would qualify
    assert (it.task_id.to_numpy()[p.pos] == it.task_id.to_numpy()[p.neg]).all()


def test_pairs_k_zero_and_margin_one_keeps_every_strict_order():
    it = _items([{"task_id": "a", "variant": f"v{i}", "runtime_ms": 1.0 + i, "cv": 0.5} for i in range(4)])
    assert len(ranker.make_pairs(it, margin=1.0, k=0.0)) == 6
    assert len(ranker.make_pairs(it, margin=1.0, k=2.0)) < 6


def test_pairs_carry_split_and_ratio(data):
    items, pairs = data
    assert set(pairs["split"]) == {"train", "val", "test"}
    fam_split = items.groupby("family")["split"].first()
    assert (pairs["split"].to_numpy() == fam_split[pairs["family"]].to_numpy()).all()
    t = items["runtime_ms"].to_numpy()
    assert np.allclose(pairs["ratio"], t[pairs.neg] / t[pairs.pos])


# --------------------------------------------------------------------------- loss / objective


def test_pairwise_loss_is_the_formula():
    s = np.array([2.0, -1.0, 0.5, 800.0, -800.0])
    pos, neg = np.array([0, 2, 4]), np.array([1, 1, 3])
    want = np.mean([math.log1p(math.exp(-3.0)), math.log1p(math.exp(-1.5)), 1600.0])
    assert ranker.pairwise_loss(s, pos, neg) == pytest.approx(want, rel=1e-12)


def test_custom_objective_gradient_and_hessian_match_finite_differences():
    rng = np.random.default_rng(3)
    n = 9
    pos = rng.integers(0, n, 30)
    neg = (pos + rng.integers(1, n, 30)) % n
    obj = ranker.PairwiseObjective(pos, neg, n, hess_floor=0.0)
    s = rng.normal(0, 2, n)
    total = lambda v: ranker.pairwise_loss(v, pos, neg) * len(pos)  # noqa: E731 (sum, see docstring)
    g, h = obj(s, None)
    eps = 1e-5
    for i in range(n):
        e = np.zeros(n)
        e[i] = eps
        assert g[i] == pytest.approx((total(s + e) - total(s - e)) / (2 * eps), abs=1e-6)
        g_plus, _ = obj.grad_hess(s + e)
        g_minus, _ = obj.grad_hess(s - e)
        assert h[i] == pytest.approx((g_plus[i] - g_minus[i]) / (2 * eps), abs=1e-6)
    assert g.sum() == pytest.approx(0.0, abs=1e-12)  # each pair pushes its two items equally


def test_objective_hessian_floor_keeps_saturated_items_positive():
    obj = ranker.PairwiseObjective(np.array([0]), np.array([1]), 3)
    _, h = obj.grad_hess(np.array([1e4, -1e4, 0.0]))
    assert (h > 0).all()


# --------------------------------------------------------------------------- training


def test_linear_ranker_minimises_exactly_the_pairwise_loss():
    items = synth_items(n_fam=6, tasks_per=6, seed=1)
    items["split"] = "train"  # no val pairs: no early stopping, so it must reach the optimum
    pairs = ranker.make_pairs(items)
    l2 = 1e-2
    m = ranker.train_linear(items, pairs, ranker.static_columns(), l2=l2, max_epochs=4000)
    Z = (items[m.columns].to_numpy() - m.mean) / m.std
    D = Z[pairs.pos] - Z[pairs.neg]
    q = 1 / (1 + np.exp(D @ m.w))
    grad = -(D.T @ q) / len(D) + l2 * m.w
    assert np.abs(grad).max() < 1e-4
    assert m.history[-1]["train_loss"] < m.history[0]["train_loss"]


def test_linear_ranker_recovers_the_ordering_on_held_out_families(data):
    items, pairs = data
    m = ranker.train_linear(items, pairs, ranker.static_columns())
    s = ranker.score_items(m, items)
    r = ranker.evaluate_scores(items, pairs, s, "test")
    assert r["pair_acc_ge1.25"] > 0.95 and r["kendall_tau"] > 0.85 and r["top1"] > 0.8
    w = m.w / m.std  # back to raw feature units
    assert w @ W_TRUE / (np.linalg.norm(w) * np.linalg.norm(W_TRUE)) > 0.97
    assert m.scale["best_iter"] >= 1


def test_lgbm_rankers_recover_a_nonlinear_ordering():
    items = synth_items(n_fam=14, tasks_per=12, nvar=6, seed=2, nonlinear=True)
    pairs = ranker.make_pairs(items)
    cols = ranker.static_columns()
    gbm = ranker.train_lgbm(items, pairs, cols, rounds=300)
    lam = ranker.train_lambdarank(items, cols, rounds=300)
    lin = ranker.train_linear(items, pairs, cols)
    acc = {k: ranker.pairwise_accuracy(ranker.score_items(m, items), pairs[pairs.split == "test"])
           for k, m in {"gbm": gbm, "lam": lam, "lin": lin}.items()}
    assert acc["gbm"] > 0.85 and acc["lam"] > 0.75
    assert acc["gbm"] > acc["lin"] + 0.05  # the interaction is only learnable by the trees
    vl = [h["val_loss"] for h in gbm.history]
    assert min(vl) < vl[0]  # early stopping watched a val loss that did go down
    assert gbm.importances().loc["x_coal", "gain"] > 0 and gbm.importances().loc["x_occ", "gain"] > 0


def test_experiment_learned_beats_baselines_and_reports_both_feature_sets(data):
    items, pairs = data
    items = items.copy()
    rng = np.random.default_rng(0)
    for c in ranker.profiled_columns():  # profiled copies with extra noise
        items[c] = items["x_" + c[2 + len(ranker.PROF_PREFIX):]] + rng.normal(0, 0.5, len(items))
    rep = ranker.run_experiment(items, pairs, lgbm_rounds=150)
    m = rep.metrics
    assert set(m.feature_set) == {"static", "static_prof"}
    test = m[(m.split == "test") & (m.feature_set == "static")].set_index("model")
    assert test.loc["random", "pair_acc"] == pytest.approx(0.5, abs=0.05)
    singles = test[test.index.str.startswith("single:")]
    assert len(singles) == len(FEATURE_NAMES)
    assert test.loc["linear", "pair_acc_ge1.25"] > singles["pair_acc_ge1.25"].max()
    chk = ranker.target_check(m)
    assert chk.set_index("feature_set").loc["static", "beats_every_single"]
    by_fam = ranker.accuracy_by(items, pairs, {"linear": rep.scores["linear_static"]}, "family")
    assert set(by_fam["family"]) == {"f0", "f1", "f2"} and by_fam["n_pairs"].sum() == (pairs.split == "test").sum()
    by_gap = ranker.accuracy_by(items, pairs, {"linear": rep.scores["linear_static"]}, "gap")
    assert by_gap["n_pairs"].sum() == (pairs.split == "test").sum()


def test_reward_scale_is_score_gap_per_doubling(data):
    items, pairs = data
    m = ranker.train_linear(items, pairs, ranker.static_columns())
    sc = ranker.fit_scale(m, items, pairs)
    tr = pairs[(pairs.split == "train") & (pairs.ratio >= 1.5) & (pairs.ratio <= 3)]
    s = ranker.score_items(m, items)
    want = np.median((s[tr.pos] - s[tr.neg]) / np.log2(tr.ratio))
    assert sc["per_log2"] == pytest.approx(want) and sc["per_log2"] > 0
    assert "1.5x-3x" in sc["scale_method"]


def test_reward_scale_falls_back_to_zscore_for_a_useless_ranker(data):
    items, pairs = data
    m = ranker.train_linear(items, pairs, ranker.static_columns())
    m.w = -m.w  # anti-ranker: median gap per doubling is negative
    sc = ranker.fit_scale(m, items, pairs)
    assert "z-score" in sc["scale_method"] and sc["per_log2"] > 0


# --------------------------------------------------------------------------- metrics


def test_pairwise_accuracy_counts_ties_half():
    pairs = pd.DataFrame({"pos": [0, 1, 2], "neg": [1, 2, 3], "ratio": [1.2, 2.0, 3.0]})
    s = np.array([3.0, 2.0, 2.0, 5.0])
    assert ranker.pairwise_accuracy(s, pairs) == pytest.approx((1 + 0.5 + 0) / 3)
    assert ranker.pairwise_accuracy(s, pairs, 1.25) == pytest.approx(0.25)
    assert math.isnan(ranker.pairwise_accuracy(s, pairs.iloc[:0]))


def test_kendall_tau_b_matches_scipy():
    from scipy.stats import kendalltau

    rng = np.random.default_rng(5)
    for _ in range(20):
        x, y = rng.integers(0, 4, 7).astype(float), rng.integers(0, 4, 7).astype(float)
        want = kendalltau(x, y).statistic
        got = ranker.kendall_tau_b(x, y)
        assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want)


def test_top1_and_tau_on_hand_made_tasks():
    it = _items([
        {"task_id": "a", "variant": "x", "runtime_ms": 1.0, "cv": 0}, {"task_id": "a", "variant": "y", "runtime_ms": 4.0, "cv": 0},
        {"task_id": "b", "variant": "x", "runtime_ms": 2.0, "cv": 0}, {"task_id": "b", "variant": "y", "runtime_ms": 1.0, "cv": 0},
    ])
    good = np.array([2.0, 1.0, 0.0, 1.0])
    acc, slow = ranker.top1(it, good)
    assert acc == 1.0 and slow == 1.0
    acc, slow = ranker.top1(it, np.array([1.0, 2.0, 0.0, 1.0]))  # wrong on a (4x slower)
    assert acc == 0.5 and slow == pytest.approx(2.0)
    acc, _ = ranker.top1(it, np.zeros(4))  # all tied: 1/2 per task
    assert acc == 0.5
    tau = ranker.per_task_tau(it, good)
    assert tau.to_dict() == {"a": 1.0, "b": 1.0}


def test_diagnose_families_names_a_cause_for_each_miss():
    by = pd.DataFrame({"family": ["a", "b", "c", "d"], "n_pairs": [100, 5, 100, 100],
                       "indistinguishable": [0.0, 0.0, 0.5, 0.0], "linear": [0.9, 0.5, 0.6, 0.7]})
    d = ranker.diagnose_families(by, "linear").set_index("family")["likely_cause"]
    assert list(d.index) == ["b", "c", "d"]
    assert "few" in d["b"] and "identical" in d["c"] and "mis-weighted" in d["d"]


def test_single_feature_sign_chosen_on_train(data):
    items, pairs = data
    signs = ranker.single_feature_signs(items, pairs, ranker.static_columns())
    assert signs["x_coal"] == 1.0 and signs["x_kernels"] == 1.0 and signs["x_xfer"] == -1.0


# --------------------------------------------------------------------------- data plumbing


def test_build_items_normalises_against_naive_and_drops_unusable_rows():
    meas = pd.DataFrame([
        {"task_id": "t", "variant": "naive", "family": "fa", "status": "correct", "correct": True, "runtime_ms": 4.0, "cv": 0.01},
        {"task_id": "t", "variant": "fast", "family": "fa", "status": "correct", "correct": True, "runtime_ms": 1.0, "cv": None},
        {"task_id": "t", "variant": "bad", "family": "fa", "status": "wrong", "correct": False, "runtime_ms": 0.1, "cv": 0.0},
        {"task_id": "u", "variant": "naive", "family": "fb", "status": "correct", "correct": True, "runtime_ms": float("nan"), "cv": 0.0},
        {"task_id": "t", "variant": "cheat", "family": "fa", "status": "correct", "correct": True, "runtime_ms": 1e-4, "cv": 0.0},
    ])
    meas["flags"] = [[], [], [], [], ["suspect:x", "hack:roofline"]]
    base = {n: 0.0 for n in FEATURE_NAMES}
    feats = pd.DataFrame([
        {"task_id": "t", "variant": "naive", **base, "coal": 0.5, "gmem_access": 3.0, "tpb": 256},
        {"task_id": "t", "variant": "fast", **base, "coal": 1.0, "gmem_access": 15.0, "tpb": 512},
        {"task_id": "t", "variant": "bad", **base},
        {"task_id": "t", "variant": "cheat", **base},
        {"task_id": "u", "variant": "naive", **base},
    ])
    items = ranker.build_items(meas, feats, {"fa": "test", "fb": "train"})
    assert list(items.variant) == ["naive", "fast"] and set(items.split) == {"test"}
    fast = items.set_index("variant").loc["fast"]
    assert fast["x_coal"] == 1.0 and fast["x_tpb"] == 1.0
    assert fast["x_gmem_access"] == pytest.approx(math.log(16) - math.log(4))
    assert items.set_index("variant").loc["naive", "x_gmem_access"] == 0.0
    assert fast["cv"] == 0.0  # missing CV counts as 0
    assert not any(c.startswith("x_prof_") for c in items)
    prof = feats.assign(**{f"prof_{n}": feats[n] for n in FEATURE_NAMES})
    assert all(c in ranker.build_items(meas, prof, {"fa": "test"}) for c in ranker.profiled_columns())
    # the robust CV where a row has one (measured from session 31 on), else the classic one
    robust = ranker.build_items(meas.assign(cv_robust=[0.002, None, None, None, None]), feats, {"fa": "test"})
    assert list(robust["cv"]) == [0.002, 0.0]


# --------------------------------------------------------------------------- save / load / CLI


def test_save_load_roundtrip(tmp_path, data):
    items, pairs = data
    cols = ranker.static_columns()
    for m in (ranker.train_linear(items, pairs, cols), ranker.train_lgbm(items, pairs, cols, rounds=60),
              ranker.train_lambdarank(items, cols, rounds=60)):
        ranker.fit_scale(m, items, pairs)
        path = ranker.save(m, tmp_path / ranker.model_filename(f"{m.kind}_static"))
        back = ranker.load(path)
        assert back.kind == m.kind and back.columns == cols and back.scale == m.scale
        assert np.allclose(ranker.score_items(back, items), ranker.score_items(m, items), atol=1e-9)
    with pytest.raises(FileNotFoundError):
        ranker.load(tmp_path / "nope.json")


def test_cli_without_measurements_says_so(tmp_path, capsys):
    assert ranker.main(["train", "--measurements", str(tmp_path / "none")]) == 2
    assert "no measurements" in capsys.readouterr().err


def test_cli_train_then_evaluate_recomputes_the_same_metrics(tmp_path, capsys):
    items = synth_items(n_fam=8, tasks_per=5, nvar=4, seed=4)
    from cudaperf.measurements import save_measurements

    meas = items[["task_id", "variant", "family", "runtime_ms", "cv"]].assign(
        status="correct", correct=True, pass_rate=1.0, baseline_ms=1.0, speedup=1.0,
        gpu="synthetic", toolchain="none", flags=[[]] * len(items), message="synthetic",
        measured_at="2026-01-01T00:00:00+00:00")
    save_measurements(meas, tmp_path / "m" / "synthetic.parquet")
    # raw features whose phî equals the synthetic x for the count features (log1p inverse)
    feats = items[["task_id", "variant", "split"]].copy()  # splits come from this table here
    for n in FEATURE_NAMES:
        feats[n] = np.expm1(np.abs(items[f"x_{n}"]))
    feats.to_parquet(tmp_path / "features.parquet")
    args = ["--measurements", str(tmp_path / "m"), "--features", str(tmp_path / "features.parquet"),
            "--models", str(tmp_path / "models"), "--tasks", str(tmp_path / "no_tasks.jsonl")]
    assert ranker.main(["train", *args]) == 0
    saved = json.loads((tmp_path / "models" / "metrics.json").read_text())
    assert {"linear_static.json", "lgbm_pairwise_static.txt", "lambdarank_static.txt"} <= \
        {p.name for p in (tmp_path / "models").iterdir()}
    capsys.readouterr()
    assert ranker.main(["evaluate", "--json", *args]) == 0
    ev = json.loads(capsys.readouterr().out)
    trained = {(r["model"] + "_" + r["feature_set"], r["split"]): r for r in saved["metrics"] if r["learned"]}
    for r in ev["metrics"]:
        t = trained[(r["model"], r["split"])]
        for k in ("pair_acc", "pair_acc_ge1.25", "kendall_tau", "top1"):
            assert r[k] == pytest.approx(t[k], abs=1e-9), (r["model"], k)


def test_target_check_without_test_pairs_says_so():
    import pandas as pd

    col = f"pair_acc_ge{ranker.BIG_GAP}"
    m = pd.DataFrame([
        {"feature_set": "static", "model": "linear", "split": "test", col: float("nan"), "learned": True},
        {"feature_set": "static", "model": "single:x", "split": "test", col: float("nan"), "learned": False},
        {"feature_set": "both", "model": "linear", "split": "test", col: 0.9, "learned": True},
        {"feature_set": "both", "model": "single:x", "split": "test", col: 0.7, "learned": False},
    ])
    t = ranker.target_check(m).set_index("feature_set")
    assert pd.isna(t.loc["static", "best_learned"]) and not t.loc["static", "meets_target"]
    assert "no test pairs" in t.loc["static", "note"]
    assert t.loc["both", "best_learned"] == "linear" and t.loc["both", "meets_target"]


def test_missing_splits_blocks_training_with_a_clear_error():
    import pandas as pd

    pairs = pd.DataFrame({"split": ["train", "train", "val"]})
    assert ranker.missing_splits(pairs) == ["test"]
    assert ranker.missing_splits(pairs.iloc[:0]) == ["train", "val", "test"]
    items = pd.DataFrame({"family": ["a", "b"]})
    with pytest.raises(ValueError, match="no pairs in split"):
        ranker.run_experiment(items, pairs)


# --------------------------------------------------------------------------- cross-validation


def test_family_folds_partition_the_families():
    fams = [f"f{i}" for i in range(13)] * 3
    folds = ranker.family_folds(fams, 5, seed=1)
    assert len(folds) == 5 and sorted(f for fo in folds for f in fo) == sorted(set(fams))
    assert max(map(len, folds)) - min(map(len, folds)) <= 1
    assert ranker.family_folds(fams, 5, seed=1) == folds != ranker.family_folds(fams, 5, seed=2)


def test_cross_validation_scores_every_family_out_of_fold(data):
    items, pairs = data
    cv = ranker.cross_validate(items, pairs, k=4, lgbm_rounds=80)
    m = cv.metrics[cv.metrics.feature_set == "static"].set_index("model")
    assert int(m.loc["linear", "n_pairs"]) == len(pairs)  # every pair judged once
    assert all(np.isfinite(cv.scores[f"{k}_static"]).all() for k in ranker.LEARNED)
    assert m.loc["random", "pair_acc"] == pytest.approx(0.5, abs=0.05)
    singles = m[m.index.str.startswith("single:")]
    assert m.loc["linear", "pair_acc_ge1.25"] > singles["pair_acc_ge1.25"].max()


def test_cross_validation_cannot_memorise_held_out_families():
    """Runtimes unrelated to the features: a model that saw the held-out families could memorise
    their pairs (LightGBM easily does); out of fold, every learned ranker stays near chance."""
    items = synth_items(n_fam=10, tasks_per=10, nvar=4, seed=7)
    items["runtime_ms"] = np.exp(np.random.default_rng(3).normal(0, 1, len(items)))
    pairs = ranker.make_pairs(items)
    inside = ranker.train_lgbm(items.assign(split="train"), pairs.assign(split="train"),
                               ranker.static_columns(), rounds=200)
    assert ranker.pairwise_accuracy(ranker.score_items(inside, items), pairs) > 0.7  # memorised
    cv = ranker.cross_validate(items, pairs, k=5, lgbm_rounds=200)
    m = cv.metrics[cv.metrics.feature_set == "static"].set_index("model")
    for k in ranker.LEARNED:
        assert abs(m.loc[k, "pair_acc"] - 0.5) < 0.1, k


def test_in_family_cross_validation_holds_out_tasks_not_families(data):
    items, pairs = data
    cv = ranker.cross_validate(items, pairs, k=4, lgbm_rounds=60, baselines=False, group="task")
    held = [t for fold in cv.folds for t in fold]
    assert sorted(held) == sorted(items["task_id"].unique())  # every task held out exactly once
    assert any(len({t.split("/")[0] for t in fold}) > 1 for fold in cv.folds)  # families mixed
    m = cv.metrics.set_index(["feature_set", "model"])
    assert int(m.loc[("static", "linear"), "n_pairs"]) == len(pairs)
    assert m.loc[("static", "linear"), "pair_acc"] > 0.8  # synthetic rule shared by every family
    with pytest.raises(ValueError):
        ranker.cross_validate(items, pairs, group="variant")


def test_naive_slowest_baseline_ties_the_rewrites():
    items = _items([{"task_id": "t", "variant": "naive", "runtime_ms": 3.0, "cv": 0.0},
                    {"task_id": "t", "variant": "tiled", "runtime_ms": 1.0, "cv": 0.0},
                    {"task_id": "t", "variant": "vec", "runtime_ms": 2.0, "cv": 0.0}])
    s = ranker.naive_slowest_scores(items)
    pairs = ranker.make_pairs(items)
    assert len(pairs) == 3  # naive < vec < tiled
    assert ranker.pairwise_accuracy(s, pairs) == pytest.approx((1 + 1 + 0.5) / 3)


def test_unprofiled_variants_have_missing_profiled_features_and_finite_scores(data):
    items, pairs = data
    raw = items[["task_id", "variant"]].copy()
    for n in FEATURE_NAMES:
        raw[n] = np.expm1(np.abs(items[f"x_{n}"]))
        raw[ranker.PROF_PREFIX + n] = raw[n]
    unprof = raw["task_id"].str.startswith("f0/") | raw["task_id"].str.startswith("f5/")
    raw.loc[unprof, [ranker.PROF_PREFIX + n for n in FEATURE_NAMES]] = np.nan
    phi = ranker.phi_frame(raw)
    assert phi.loc[unprof.to_numpy(), ranker.profiled_columns()].isna().all().all()
    assert phi.loc[~unprof.to_numpy(), ranker.profiled_columns()].notna().all().all()
    it = items.drop(columns=ranker.static_columns()).merge(phi, on=["task_id", "variant"])
    cols = ranker.static_columns() + ranker.profiled_columns()
    m = ranker.train_linear(it, pairs, cols)
    assert np.isfinite(m.mean).all() and np.isfinite(ranker.score_items(m, it)).all()
    base = ranker.baseline_scores(it, pairs, cols)
    assert all(np.isfinite(v).all() for k, v in base.items() if k != "random")


def test_model_files_lists_rankers_not_metrics(tmp_path, data):
    items, pairs = data
    cols = ranker.static_columns()
    ranker.save(ranker.train_linear(items, pairs, cols), tmp_path / "linear_static.json")
    ranker.save(ranker.train_lgbm(items, pairs, cols, rounds=20), tmp_path / "lgbm_pairwise_static.txt")
    for name in ("metrics.json", "cv_metrics.json"):
        (tmp_path / name).write_text("{}")
    assert [f.name for f in ranker.model_files(tmp_path)] == ["linear_static.json", "lgbm_pairwise_static.txt"]
    assert all(ranker.load(f) is not None for f in ranker.model_files(tmp_path))
    assert ranker.model_files(tmp_path / "none") == []


def test_learning_curve_rises_with_training_families():
    items = synth_items(n_fam=14, tasks_per=4, nvar=4, noise=0.3, seed=11)
    pairs = ranker.make_pairs(items)
    lc = ranker.learning_curve(items, pairs, (0.1, 1.0), k=4, lgbm_rounds=60)
    assert set(lc.fraction) == {0.1, 1.0} and set(lc.model) == set(ranker.LEARNED)
    lin = lc[(lc.model == "linear") & (lc.feature_set == "static")].set_index("fraction")
    assert lin.loc[1.0, "pair_acc"] > lin.loc[0.1, "pair_acc"]
    assert lin.loc[1.0, "train_families"] > lin.loc[0.1, "train_families"] >= 1
    assert (lc.n_pairs == len(pairs)).all()


def test_feature_directions_count_which_way_the_faster_variant_points():
    items = pd.DataFrame({"task_id": ["t"] * 3, "variant": ["naive", "a", "b"], "family": "f", "split": "train",
                          "runtime_ms": [4.0, 2.0, 1.0], "cv": 0.0,
                          **{f"x_{n}": [0.0, 0.0, 0.0] for n in FEATURE_NAMES}})
    items["x_ops"] = [1.0, 2.0, 3.0]  # the faster, the more ops
    items["x_coal"] = [1.0, 0.5, 1.0]
    pairs = ranker.make_pairs(items, margin=1.1, k=0.0)
    d = ranker.feature_directions(items, pairs).set_index("feature")
    assert d.loc["ops", "faster_higher"] == 1.0 and d.loc["ops", "hand_sign"] == -1.0
    assert d.loc["coal", "faster_higher"] == pytest.approx(1 / 3) and d.loc["coal", "tied"] == pytest.approx(1 / 3)
    assert d.loc["xfer", "tied"] == 1.0 and (d["pairs"] == 3).all()


def test_reward_model_is_the_best_static_ranker_in_family(tmp_path, data):
    items, pairs = data
    cols = ranker.static_columns()
    assert ranker.reward_model(tmp_path) is None
    ranker.save(ranker.train_linear(items, pairs, cols), tmp_path / "linear_static.json")
    assert ranker.reward_model(tmp_path) == tmp_path / "linear_static.json"  # no CV metrics yet
    ranker.save(ranker.train_lgbm(items, pairs, cols, rounds=20), tmp_path / "lgbm_pairwise_static.txt")
    rows = [{"feature_set": fs, "model": m, "learned": True, "pair_acc_ge1.25": acc}
            for fs, m, acc in (("static", "linear", 0.7), ("static", "lgbm_pairwise", 0.9),
                               ("static_prof", "lgbm_pairwise", 0.95), ("static", "lambdarank", 0.8))]
    (tmp_path / "cv_infamily_metrics.json").write_text(json.dumps({"metrics": rows}))
    # lambdarank ranks above linear but was not saved here; profiled features are never used
    assert ranker.reward_model(tmp_path) == tmp_path / "lgbm_pairwise_static.txt"
