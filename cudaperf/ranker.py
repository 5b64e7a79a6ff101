"""Pairwise ranker s_psi over normalised structural features phî(y) (DESIGN §1), CPU side.

Guarantees:
- Pairs (`make_pairs`) only join two variants of the SAME task that both ran correctly and were
  timed, and only when the faster one is *measurably* faster: ``t_slow / t_fast > margin``
  (default 1.1) AND ``t_slow - t_fast > k * (cv_fast * t_fast + cv_slow * t_slow)`` (k = 2): the
  gap must exceed k "standard deviations" of both timings added (a missing CV counts as 0, so
  the margin alone decides). Each pair carries the task's split, so train / val / test are
  whole held-out families (the dataset assigns splits by family), and accuracy on test speaks of
  programs the ranker never saw.
- The linear ranker s(x) = w · (x - mean) / std is trained with exactly
  ``L = mean over pairs of log(1 + exp(-(s(x+) - s(x-)))) + l2/2 ||w||²`` by full-batch Adam,
  early-stopped on the validation pairs' loss (the best epoch's weights are kept).
- The LightGBM ranker is trained with the same loss through `PairwiseObjective` (gradient and
  hessian derived there); LightGBM's lambdarank is trained on the same items as a comparison.
- Metrics (`evaluate_scores`): pairwise accuracy (ties count 1/2), also for pairs >= 1.25x
  apart; per-task Kendall tau-b of score against -runtime; top-1 accuracy (the highest-scored
  variant is the fastest; a tie among the top scores counts 1/#tied); the geometric-mean
  slowdown of the picked variant against the fastest. Baselines: random scores, every single
  feature alone with its sign chosen on train, and the untrained `HAND_WEIGHTS` sum.
- `save` / `load` round-trip every model exactly (JSON for linear; LightGBM's text model plus a
  ``.meta.json`` sidecar with columns and reward scale), loadable by path alone.
- Nothing here invents numbers: without measurements `main` says so and returns 2.

Reward scale (used by `cudaperf.structural`): after training, `fit_scale` stores ``per_log2``,
the median over training pairs 1.5x-3x apart of ``(s(x+) - s(x-)) / log2(t_slow / t_fast)``:
the score gap that corresponds to one doubling of speed (all training pairs if fewer than 20 are
in that band). Then ``(s(y) - s(naive)) / per_log2`` is the ranker's estimate of log2 speedup
over the task's naive variant, on the same axis as R_speed = alpha_speed · log2 S; a median 2x
pair is 1.0 apart, as alpha_speed · log2(2) is. If the median is not positive (a ranker no better
than chance) the score's standard deviation over training variants is used instead (a plain
z-score) and ``scale_method`` says so.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from cudaperf.features import FEATURE_NAMES, phi_hat

DEFAULT_MARGIN = 1.1
DEFAULT_K = 2.0
BIG_GAP = 1.25  # the target is stated for pairs at least this far apart
GAP_BINS = [1.0, 1.25, 1.5, 2.0, 4.0, np.inf]
MODEL_DIR = Path("data/ranker")
MEASUREMENTS_DIR = Path("data/measurements")
FEATURES_PATH = Path("data/features/static_c2cuda.parquet")  # cudaperf.featurize's table
# profile_dataset.py writes one table per GPU model (profiled_c2cuda_<gpu>.parquet); a pattern.
PROFILED_PATH = "data/features/profiled_c2cuda_*.parquet"
PROF_PREFIX = "prof_"

# Untrained baseline on static phî (why each sign): coalesced access and occupancy hide memory
# latency (+); divergent branches, host copies and atomics serialise (-); each extra launch or
# barrier costs a few microseconds (-, smaller); fewer global accesses and more arithmetic per
# byte than the naive variant mean reuse through registers / shared memory (gmem -, ai +).
# Magnitudes are rough importance guesses, not fitted: that is the point of the baseline.
HAND_WEIGHTS = {"coal": 1.0, "ai": 0.5, "occ": 1.0, "div": -1.0, "xfer": -1.0, "atomics": -1.0,
                "syncthreads": -0.25, "kernels": -0.5, "tpb": 0.0, "gmem_access": -0.5,
                "ops": -0.25}


def static_columns() -> list[str]:
    return [f"x_{n}" for n in FEATURE_NAMES]


def profiled_columns() -> list[str]:
    return [f"x_{PROF_PREFIX}{n}" for n in FEATURE_NAMES]


# --------------------------------------------------------------------------- data


def load_measurements(path: str | Path = MEASUREMENTS_DIR) -> pd.DataFrame:
    """Measurement rows (schema of `cudaperf.measurements`) of a parquet file, a glob, or the
    measurement files of a directory, merged in `cudaperf.measurements.measurement_files` order
    (the order every reader uses; a later file wins on a repeated (task_id, variant))."""
    from cudaperf import measurements as _m

    files = _m.measurement_files(path)
    if not files:
        raise FileNotFoundError(f"no measurements parquet files at {path}")
    return _m.merge(files)


def table_files(path: str | Path) -> list[Path]:
    """Parquet files named by `path`: a file, every parquet under a directory, or a glob pattern
    (sorted; empty when none exist)."""
    s = str(path)
    if any(c in s for c in "*?["):
        return sorted(Path(p) for p in glob.glob(s) if Path(p).is_file())
    p = Path(s)
    files = sorted(p.rglob("*.parquet")) if p.is_dir() else [p]
    return [f for f in files if f.is_file()]


def _read_tables(path: str | Path, what: str) -> pd.DataFrame:
    files = table_files(path)
    if not files:
        raise FileNotFoundError(f"no {what} parquet files at {path}")
    df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    # Several tables (GPU models, reruns) may hold the same variant: the later file wins.
    key = [c for c in ("task_id", "variant") if c in df]
    return df.drop_duplicates(key, keep="last").reset_index(drop=True) if len(key) == 2 else df


def has_measurements(path: str | Path = MEASUREMENTS_DIR) -> bool:
    from cudaperf import measurements as _m

    return bool(_m.measurement_files(path))


def static_feature_table(tasks: Iterable[Any]) -> pd.DataFrame:
    """Static features of every variant of `tasks` (fallback when no features table is given).

    Block sizes bind the perf test's sizes; without ptxas resources occupancy assumes 32
    registers (see cudaperf.features); `cudaperf.featurize` gives the compiler-informed table.
    """
    from cudaperf.features import static_features

    rows = []
    for t in tasks:
        sizes = dict(t.perf_test.sizes) if t.tests else {}
        for v in t.variants:
            f = static_features(v.source, sizes=sizes)
            rows.append({"task_id": t.task_id, "variant": v.name, **f.values()})
    return pd.DataFrame(rows)


def build_items(measurements: pd.DataFrame, features: pd.DataFrame,
                splits: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per correctly-run, timed (task, variant) with its phî columns.

    Static phî goes to ``x_<name>``; profiled features (``prof_<name>`` columns of `features`),
    when present, to ``x_prof_<name>``, both normalised against the task's naive variant with
    `cudaperf.features.phi_hat`. Rows not correct, not timed or flagged ``hack:`` are dropped.
    The split comes from the measurements' ``split`` column, else
    from `splits` ({task_id: split} or {family: split}); rows without one are dropped.
    """
    m = measurements.copy()
    ok = m["correct"].fillna(False).astype(bool) if "correct" in m else m["status"] == "correct"
    if "status" in m:
        ok &= m["status"].fillna("correct") == "correct"
    if "flags" in m:  # a hack-flagged timing is not a runtime of the program
        ok &= ~m["flags"].map(_hacked).astype(bool)
    rt = pd.to_numeric(m["runtime_ms"], errors="coerce")
    m = m[ok & np.isfinite(rt) & (rt > 0)].copy()
    m["runtime_ms"] = rt[m.index].astype(float)
    cv = m["cv"] if "cv" in m else pd.Series(np.nan, index=m.index)
    if "cv_robust" in m:
        # The robust CV where measured (session 31 on): a single disturbed repetition inflated the
        # classic one, and the noise margin of make_pairs with it -- with the H200 measurements'
        # classic CVs 2,399 pairs pass, 4,608 with the CVs capped at 5 %.
        cv = pd.to_numeric(m["cv_robust"], errors="coerce").fillna(pd.to_numeric(cv, errors="coerce"))
    m["cv"] = pd.to_numeric(cv, errors="coerce").fillna(0.0).clip(lower=0.0)
    if "split" not in m or m["split"].isna().any():
        splits = splits or {}
        by_task = m["task_id"].map(splits)
        by_fam = m["family"].map(splits) if "family" in m else by_task
        m["split"] = (m["split"] if "split" in m else by_task).fillna(by_task).fillna(by_fam)
    m = m[m["split"].isin(["train", "val", "test"])]
    phi = phi_frame(features)
    keep = ["task_id", "variant", "family", "split", "runtime_ms", "cv"]
    if "family" not in m:
        m["family"] = ""
    return m[keep].merge(phi, on=["task_id", "variant"], how="inner").reset_index(drop=True)


def _hacked(flags: Any) -> bool:
    return flags is not None and any(str(f).startswith("hack:") for f in flags)


def phi_frame(features: pd.DataFrame) -> pd.DataFrame:
    """(task_id, variant, x_<name>..., and x_prof_<name>... when the table has ``prof_<name>``):
    phî of every row of a raw features table, against its task's ``naive`` row (absolute
    log-values for a task without one, as `phi_hat` does without naive features)."""
    prof = all(f"{PROF_PREFIX}{n}" in features.columns for n in FEATURE_NAMES)
    recs = features.to_dict(orient="records")
    naive = {r["task_id"]: r for r in recs if r["variant"] == "naive"}
    rows = []
    for r in recs:
        nv = naive.get(r["task_id"])
        row = {"task_id": r["task_id"], "variant": r["variant"]}
        row.update(zip(static_columns(), phi_hat(_feat_dict(r, ""), _feat_dict(nv, ""))))
        pf = _feat_dict(r, PROF_PREFIX) if prof else None
        if pf is not None and all(v is None for v in pf.values()):
            row.update(dict.fromkeys(profiled_columns(), np.nan))  # not profiled: unknown, not 0
        elif prof:
            row.update(zip(profiled_columns(), phi_hat(pf, _feat_dict(nv, PROF_PREFIX))))
        rows.append(row)
    cols = ["task_id", "variant", *static_columns(), *(profiled_columns() if prof else [])]
    return pd.DataFrame(rows, columns=cols)


def static_separability(features: pd.DataFrame) -> pd.DataFrame:
    """Per family: variant pairs within a task whose static phî is identical (no static ranker
    can order them, whatever the measurements say). Needs no GPU data."""
    phi = phi_frame(features)
    fam = (features.drop_duplicates("task_id").set_index("task_id")["family"]
           if "family" in features else pd.Series(dtype=str))
    X = phi[static_columns()].to_numpy(float)
    rows = []
    for tid, idx in phi.groupby("task_id", sort=False).indices.items():
        i, j = np.triu_indices(len(idx), 1)
        same = np.all(np.isclose(X[idx[i]], X[idx[j]]), axis=1)
        rows.append({"family": fam.get(tid, "(unknown)"), "task_id": tid, "pairs": len(i),
                     "identical": int(same.sum())})
    df = pd.DataFrame(rows)
    out = df.groupby("family").agg(tasks=("task_id", "nunique"), variant_pairs=("pairs", "sum"),
                                   identical=("identical", "sum"))
    out["identical_share"] = out["identical"] / out["variant_pairs"].where(out["variant_pairs"] > 0)
    return out.reset_index()


def _feat_dict(row: Any, prefix: str) -> dict | None:
    if row is None:
        return None
    out = {}
    for n in FEATURE_NAMES:
        v = row.get(prefix + n)
        out[n] = None if v is None or pd.isna(v) else float(v)
    return out


def make_pairs(items: pd.DataFrame, margin: float = DEFAULT_MARGIN, k: float = DEFAULT_K) -> pd.DataFrame:
    """Ordered pairs (pos faster, neg slower) of row positions in `items`; see module docstring."""
    t = items["runtime_ms"].to_numpy(float)
    cv = items["cv"].to_numpy(float)
    out = []
    for _, idx in items.groupby("task_id", sort=False).indices.items():
        if len(idx) < 2:
            continue
        ti, ci = t[idx], cv[idx]
        fast, slow = np.meshgrid(np.arange(len(idx)), np.arange(len(idx)), indexing="ij")
        tf, ts = ti[fast], ti[slow]
        noise = k * (ci[fast] * tf + ci[slow] * ts)
        keep = (ts > margin * tf) & (ts - tf > noise)
        a, b = fast[keep], slow[keep]
        out.append(np.stack([idx[a], idx[b]], axis=1))
    pairs = np.concatenate(out) if out else np.zeros((0, 2), int)
    df = pd.DataFrame({"pos": pairs[:, 0].astype(int), "neg": pairs[:, 1].astype(int)})
    df["task_id"] = items["task_id"].to_numpy()[df["pos"]]
    df["family"] = items["family"].to_numpy()[df["pos"]]
    df["split"] = items["split"].to_numpy()[df["pos"]]
    df["ratio"] = t[df["neg"]] / t[df["pos"]]
    return df


# --------------------------------------------------------------------------- loss


def pairwise_loss(scores: np.ndarray, pos: np.ndarray, neg: np.ndarray) -> float:
    """mean log(1 + exp(-(s+ - s-))), computed stably."""
    if len(pos) == 0:
        return float("nan")
    return float(np.mean(np.logaddexp(0.0, -(scores[pos] - scores[neg]))))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


class PairwiseObjective:
    """LightGBM custom objective: the pairwise logistic loss, per-item gradient and hessian.

    For one pair (i faster, j slower) with d = s_i - s_j and l = log(1 + e^{-d}):
        dl/dd = -e^{-d} / (1 + e^{-d}) = -σ(-d) =: -q
        dl/ds_i = -q,   dl/ds_j = +q
        d²l/dd² = σ(d) σ(-d) = q (1 - q)  =>  d²l/ds_i² = d²l/ds_j² = q(1 - q)
    (the cross term d²l/ds_i ds_j = -q(1 - q) is dropped: LightGBM takes a diagonal hessian).
    An item's gradient / hessian is the sum of these over the pairs it belongs to. The loss
    LightGBM minimises here is the SUM over pairs (P times the mean): the same minimiser, and
    its Newton leaf value -G / (H + lambda_l2) only sees the factor P through lambda_l2 and
    min_sum_hessian_in_leaf, which thus keep their usual per-item meaning. The hessian is
    floored at `hess_floor` so a leaf of saturated pairs never divides by ~0.
    """

    def __init__(self, pos: np.ndarray, neg: np.ndarray, n_items: int, hess_floor: float = 1e-6):
        self.pos, self.neg, self.n, self.hess_floor = (np.asarray(pos, int), np.asarray(neg, int),
                                                       int(n_items), hess_floor)

    def grad_hess(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = scores[self.pos] - scores[self.neg]
        q = _sigmoid(-d)
        g = np.bincount(self.pos, -q, self.n) + np.bincount(self.neg, q, self.n)
        h2 = q * (1.0 - q)
        h = np.bincount(self.pos, h2, self.n) + np.bincount(self.neg, h2, self.n)
        return g, np.maximum(h, self.hess_floor)

    def __call__(self, preds: np.ndarray, train_data: Any = None) -> tuple[np.ndarray, np.ndarray]:
        return self.grad_hess(np.asarray(preds, float))


# --------------------------------------------------------------------------- models


@dataclass
class LinearRanker:
    columns: list[str]
    mean: np.ndarray
    std: np.ndarray
    w: np.ndarray
    scale: dict[str, Any] = field(default_factory=dict)
    history: list[dict] = field(default_factory=list)
    kind: str = "linear"

    def score(self, X: np.ndarray) -> np.ndarray:
        return np.nan_to_num((np.asarray(X, float) - self.mean) / self.std) @ self.w  # NaN: the mean

    def weights(self) -> pd.Series:
        """Weights per feature in standardised units (comparable across features)."""
        return pd.Series(self.w, index=self.columns)


@dataclass
class GBMRanker:
    columns: list[str]
    booster: Any
    kind: str = "lgbm_pairwise"  # or "lambdarank"
    scale: dict[str, Any] = field(default_factory=dict)
    history: list[dict] = field(default_factory=list)

    def score(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, float)
        if X.ndim == 1:
            X = X[None, :]
        return self.booster.predict(X, raw_score=True, num_threads=1)

    def importances(self) -> pd.DataFrame:
        return pd.DataFrame({
            "gain": self.booster.feature_importance("gain"),
            "split": self.booster.feature_importance("split")}, index=self.columns)


def _Xy(items: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    return items[list(columns)].to_numpy(float)


def train_linear(items: pd.DataFrame, pairs: pd.DataFrame, columns: Sequence[str], *,
                 l2: float = 1e-3, lr: float = 0.05, max_epochs: int = 3000, patience: int = 200,
                 seed: int = 0) -> LinearRanker:
    """Linear ranker, full-batch Adam on the train pairs, early-stopped on val pairs' loss."""
    X = _Xy(items, columns)
    tr = pairs[pairs["split"] == "train"]
    va = pairs[pairs["split"] == "val"]
    if tr.empty:
        raise ValueError("no training pairs")
    tr_items = np.unique(tr[["pos", "neg"]].to_numpy())
    # A variant without profiled features has NaN there: it takes the training mean (z = 0), so
    # the feature neither helps nor hurts its pairs. LightGBM routes NaN itself.
    with warnings.catch_warnings():  # an all-NaN column (nothing profiled) has mean 0, std 1
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nan_to_num(np.nanmean(X[tr_items], 0))
        std = np.nan_to_num(np.nanstd(X[tr_items], 0))
    std = np.where(std > 1e-12, std, 1.0)
    Z = np.nan_to_num((X - mean) / std)
    D_tr = Z[tr["pos"].to_numpy()] - Z[tr["neg"].to_numpy()]
    D_va = Z[va["pos"].to_numpy()] - Z[va["neg"].to_numpy()]
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 1e-3, Z.shape[1])
    m1 = np.zeros_like(w)
    m2 = np.zeros_like(w)
    best = (np.inf, w.copy(), 0)
    hist = []
    for ep in range(1, max_epochs + 1):
        margin = D_tr @ w
        loss = float(np.mean(np.logaddexp(0.0, -margin)))
        g = -(D_tr.T @ _sigmoid(-margin)) / len(D_tr) + l2 * w
        m1 = 0.9 * m1 + 0.1 * g
        m2 = 0.999 * m2 + 0.001 * g * g
        w = w - lr * (m1 / (1 - 0.9 ** ep)) / (np.sqrt(m2 / (1 - 0.999 ** ep)) + 1e-8)
        vloss = float(np.mean(np.logaddexp(0.0, -(D_va @ w)))) if len(D_va) else loss
        if ep == 1 or ep % 10 == 0:
            hist.append({"iter": ep, "train_loss": loss, "val_loss": vloss if len(D_va) else None})
        if vloss < best[0] - 1e-7:
            best = (vloss, w.copy(), ep)
        elif ep - best[2] >= patience:
            break
    model = LinearRanker(list(columns), mean, std, best[1], history=hist)
    model.scale["best_iter"] = best[2]
    return model


_LGB_PARAMS = {"learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 5,
               "min_sum_hessian_in_leaf": 1e-3, "lambda_l2": 1.0, "verbosity": -1,
               "deterministic": True, "force_row_wise": True, "num_threads": 1}


def train_lgbm(items: pd.DataFrame, pairs: pd.DataFrame, columns: Sequence[str], *,
               rounds: int = 400, early_stop: int = 40, seed: int = 0,
               params: dict | None = None) -> GBMRanker:
    """LightGBM with `PairwiseObjective`, early-stopped on the val pairs' mean loss."""
    import lightgbm as lgb

    X = _Xy(items, columns)
    sets, hist = {}, {}
    for split in ("train", "val"):
        p = pairs[pairs["split"] == split]
        idx = np.unique(p[["pos", "neg"]].to_numpy()) if len(p) else np.zeros(0, int)
        remap = {int(g): i for i, g in enumerate(idx)}
        sets[split] = (X[idx], np.array([remap[int(a)] for a in p["pos"]], int),
                       np.array([remap[int(b)] for b in p["neg"]], int))
    Xtr, ptr, ntr = sets["train"]
    if len(ptr) == 0:
        raise ValueError("no training pairs")
    obj = PairwiseObjective(ptr, ntr, len(Xtr))
    dtrain = lgb.Dataset(Xtr, label=np.zeros(len(Xtr)), feature_name=_safe(columns),
                         free_raw_data=False)
    valid, names, evals = [dtrain], ["training"], {id(dtrain): (ptr, ntr)}
    Xva, pva, nva = sets["val"]
    if len(pva):
        dval = lgb.Dataset(Xva, label=np.zeros(len(Xva)), reference=dtrain, free_raw_data=False)
        valid.append(dval)
        names.append("val")
        evals[id(dval)] = (pva, nva)

    def feval(preds, data):
        p, n = evals[id(data)]
        return "pair_logloss", pairwise_loss(np.asarray(preds), p, n), False

    cbs = [lgb.record_evaluation(hist)]
    if len(pva):
        cbs.append(lgb.early_stopping(early_stop, first_metric_only=True, verbose=False))
    prm = {**_LGB_PARAMS, "objective": obj, "metric": "None", "seed": seed, **(params or {})}
    booster = lgb.train(prm, dtrain, num_boost_round=rounds, valid_sets=valid,
                        valid_names=names, feval=feval, callbacks=cbs)
    tr_curve = hist.get("training", {}).get("pair_logloss", [])
    va_curve = hist.get("val", {}).get("pair_logloss", [None] * len(tr_curve))
    history = [{"iter": i + 1, "train_loss": a, "val_loss": b} for i, (a, b) in
               enumerate(zip(tr_curve, va_curve))]
    model = GBMRanker(list(columns), booster, "lgbm_pairwise", history=history)
    model.scale["best_iter"] = int(booster.best_iteration or booster.current_iteration())
    return model


def relevance_grades(items: pd.DataFrame) -> np.ndarray:
    """Lambdarank labels: floor(2 · log2(t_slowest_in_task / t)), clipped to [0, 30]."""
    t = items["runtime_ms"].to_numpy(float)
    slowest = items.groupby("task_id")["runtime_ms"].transform("max").to_numpy(float)
    return np.clip(np.floor(2 * np.log2(slowest / t)), 0, 30).astype(int)


def train_lambdarank(items: pd.DataFrame, columns: Sequence[str], *, rounds: int = 400,
                     early_stop: int = 40, seed: int = 0) -> GBMRanker:
    """LightGBM lambdarank over tasks as query groups (a comparison, not our loss)."""
    import lightgbm as lgb

    X = _Xy(items, columns)
    y = relevance_grades(items)
    data = {}
    for split in ("train", "val"):
        sel = items.index[items["split"] == split]
        sub = items.loc[sel]
        sizes = sub.groupby("task_id", sort=False).size()
        order = np.concatenate([sub.index[sub["task_id"] == tid] for tid in sizes.index]) \
            if len(sizes) else np.zeros(0, int)
        pos = items.index.get_indexer(order)
        data[split] = (X[pos], y[pos], sizes.to_numpy())
    if len(data["train"][0]) == 0:
        raise ValueError("no training items")
    dtrain = lgb.Dataset(data["train"][0], label=data["train"][1], group=data["train"][2],
                         feature_name=_safe(columns), free_raw_data=False)
    valid, names, cbs, hist = [dtrain], ["training"], [], {}
    if len(data["val"][0]):
        valid.append(lgb.Dataset(data["val"][0], label=data["val"][1], group=data["val"][2],
                                 reference=dtrain))
        names.append("val")
        cbs.append(lgb.early_stopping(early_stop, first_metric_only=True, verbose=False))
    cbs.append(lgb.record_evaluation(hist))
    prm = {**_LGB_PARAMS, "objective": "lambdarank", "metric": "ndcg", "eval_at": [1],
           "seed": seed}
    booster = lgb.train(prm, dtrain, num_boost_round=rounds, valid_sets=valid,
                        valid_names=names, callbacks=cbs)
    tr = hist.get("training", {}).get("ndcg@1", [])
    va = hist.get("val", {}).get("ndcg@1", [None] * len(tr))
    model = GBMRanker(list(columns), booster, "lambdarank",
                      history=[{"iter": i + 1, "train_ndcg@1": a, "val_ndcg@1": b}
                               for i, (a, b) in enumerate(zip(tr, va))])
    model.scale["best_iter"] = int(booster.best_iteration or booster.current_iteration())
    return model


def _safe(columns: Sequence[str]) -> list[str]:
    return [c.replace("+", "_") for c in columns]


def score_items(model: Any, items: pd.DataFrame) -> np.ndarray:
    return np.asarray(model.score(_Xy(items, model.columns)), float)


def fit_scale(model: Any, items: pd.DataFrame, pairs: pd.DataFrame) -> dict[str, Any]:
    """Store the reward scale on `model` (see module docstring) and return it."""
    tr = pairs[pairs["split"] == "train"]
    s = score_items(model, items)
    gap = s[tr["pos"].to_numpy()] - s[tr["neg"].to_numpy()]
    lg = np.log2(tr["ratio"].to_numpy(float))
    band = (tr["ratio"] >= 1.5).to_numpy() & (tr["ratio"] <= 3.0).to_numpy()
    use = band if band.sum() >= 20 else np.ones(len(tr), bool)
    per = float(np.median(gap[use] / lg[use])) if use.any() else float("nan")
    tr_items = np.unique(tr[["pos", "neg"]].to_numpy()) if len(tr) else np.zeros(0, int)
    sd = float(np.std(s[tr_items])) if len(tr_items) else 1.0
    if np.isfinite(per) and per > 0:
        method = "median score gap per doubling, training pairs" + \
                 (" 1.5x-3x apart" if use is band else " (all: < 20 in 1.5x-3x)")
    else:
        per, method = (sd if sd > 0 else 1.0), "score std over training variants (z-score)"
    model.scale.update({"per_log2": per, "scale_method": method, "n_pairs": int(use.sum()),
                        "train_score_std": sd})
    return model.scale


# --------------------------------------------------------------------------- metrics


def pairwise_accuracy(scores: np.ndarray, pairs: pd.DataFrame, min_ratio: float = 0.0) -> float:
    """Share of pairs the scores order correctly (ties 1/2); NaN without pairs."""
    p = pairs[pairs["ratio"] >= min_ratio] if min_ratio else pairs
    if p.empty:
        return float("nan")
    d = scores[p["pos"].to_numpy()] - scores[p["neg"].to_numpy()]
    return float(np.mean((d > 0) + 0.5 * (d == 0)))


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (tie-corrected); NaN when either side is constant."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    i, j = np.triu_indices(len(x), 1)
    sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    n0 = len(i)
    n1, n2 = np.sum(sx == 0), np.sum(sy == 0)
    den = math.sqrt((n0 - n1) * (n0 - n2))
    return float(np.sum(sx * sy) / den) if den > 0 else float("nan")


def per_task_tau(items: pd.DataFrame, scores: np.ndarray) -> pd.Series:
    out = {}
    for tid, idx in items.groupby("task_id", sort=False).indices.items():
        if len(idx) >= 2:
            out[tid] = kendall_tau_b(scores[idx], -items["runtime_ms"].to_numpy()[idx])
    return pd.Series(out, dtype=float)


def top1(items: pd.DataFrame, scores: np.ndarray) -> tuple[float, float]:
    """(top-1 accuracy, geometric-mean slowdown of the pick vs the fastest) over tasks."""
    t = items["runtime_ms"].to_numpy(float)
    hits, regret = [], []
    for _, idx in items.groupby("task_id", sort=False).indices.items():
        if len(idx) < 2:
            continue
        s = scores[idx]
        top = idx[s >= s.max() - 1e-12]
        best = t[idx].min()
        hits.append(np.mean(t[top] <= best))
        regret.append(np.mean(np.log(t[top] / best)))
    if not hits:
        return float("nan"), float("nan")
    return float(np.mean(hits)), float(np.exp(np.mean(regret)))


def evaluate_scores(items: pd.DataFrame, pairs: pd.DataFrame, scores: np.ndarray,
                    split: str = "test") -> dict[str, float]:
    p = pairs[pairs["split"] == split]
    sel = (items["split"] == split).to_numpy()
    sub = items[sel]
    tau = per_task_tau(sub, scores[sel])
    t1, regret = top1(sub, scores[sel])
    return {"pair_acc": pairwise_accuracy(scores, p),
            f"pair_acc_ge{BIG_GAP}": pairwise_accuracy(scores, p, BIG_GAP),
            "kendall_tau": float(tau.mean()) if tau.notna().any() else float("nan"),
            "top1": t1, "top1_slowdown": regret, "n_pairs": int(len(p)),
            f"n_pairs_ge{BIG_GAP}": int((p["ratio"] >= BIG_GAP).sum()),
            "n_tasks": int(sub["task_id"].nunique())}


def hand_scores(items: pd.DataFrame) -> np.ndarray:
    return _Xy(items, [f"x_{n}" for n in HAND_WEIGHTS]) @ np.array(list(HAND_WEIGHTS.values()))


def feature_directions(items: pd.DataFrame, pairs: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Per feature, over all pairs: how often the faster variant has the higher value, the lower,
    or the same, next to the sign `HAND_WEIGHTS` assumes. Descriptive (no held-out split): it
    says which way the measurements point, e.g. why the hand-weighted sum can fall below chance."""
    rows = []
    pos, neg = pairs["pos"].to_numpy(), pairs["neg"].to_numpy()
    for c in columns or static_columns():
        x = items[c].to_numpy(float)
        d = x[pos] - x[neg]
        d = d[np.isfinite(d)]  # pairs with a variant that was not profiled say nothing
        share = (lambda m: float(np.mean(m))) if len(d) else (lambda m: float("nan"))
        name = c[2:]
        rows.append({"feature": name, "hand_sign": float(np.sign(HAND_WEIGHTS.get(name, 0.0))),
                     "faster_higher": share(d > 0), "faster_lower": share(d < 0), "tied": share(d == 0),
                     "pairs": len(d)})
    return pd.DataFrame(rows)


def naive_slowest_scores(items: pd.DataFrame) -> np.ndarray:
    """The trivial rule "any rewrite beats the naive translation": naive 0, every other variant
    1 (two rewrites tie). A learned ranker must beat it to show it knows *which* structure wins,
    not only that some optimisation happened (phî of a naive variant is its own reference)."""
    return (items["variant"].to_numpy() != "naive").astype(float)


def single_scores(items: pd.DataFrame, column: str, sign: float) -> np.ndarray:
    """One feature as a score; a missing value (variant not profiled) ties with every other."""
    return np.nan_to_num(sign * items[column].to_numpy(float))


def single_feature_signs(items: pd.DataFrame, pairs: pd.DataFrame,
                         columns: Sequence[str]) -> dict[str, float]:
    """+1 or -1 per column: the sign whose train pairwise accuracy is higher."""
    tr = pairs[pairs["split"] == "train"]
    return {c: (1.0 if pairwise_accuracy(items[c].to_numpy(float), tr) >= 0.5 else -1.0)
            for c in columns}


def baseline_scores(items: pd.DataFrame, pairs: pd.DataFrame, columns: Sequence[str],
                    seed: int = 0, random_draws: int = 20) -> dict[str, np.ndarray | list]:
    """{name: scores} for the baselines; 'random' holds a list of seeded draws."""
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"random": [rng.random(len(items)) for _ in range(random_draws)],
                           "hand_weighted": hand_scores(items), "naive_slowest": naive_slowest_scores(items)}
    for c, sgn in single_feature_signs(items, pairs, columns).items():
        out[f"single:{c[2:]}{'+' if sgn > 0 else '-'}"] = single_scores(items, c, sgn)
    return out


def accuracy_by(items: pd.DataFrame, pairs: pd.DataFrame, scores: dict[str, np.ndarray],
                by: str = "family", split: str = "test") -> pd.DataFrame:
    """Pairwise accuracy per family (or per runtime-gap bin with by='gap'), with pair counts and
    the share of pairs whose static phî is identical (no static ranker can order those)."""
    p = pairs[pairs["split"] == split].copy()
    if by == "gap":
        p["gap"] = pd.cut(p["ratio"], GAP_BINS, right=False).astype(str)
    X = _Xy(items, static_columns())
    p["indistinguishable"] = np.all(np.isclose(X[p["pos"].to_numpy()], X[p["neg"].to_numpy()]),
                                    axis=1) if len(p) else []
    rows = []
    for key, g in p.groupby(by, sort=True):
        row = {by: key, "n_pairs": len(g), "indistinguishable": float(g["indistinguishable"].mean())}
        for name, s in scores.items():
            row[name] = pairwise_accuracy(s, g)
        rows.append(row)
    return pd.DataFrame(rows)


def diagnose_families(by_family: pd.DataFrame, model: str, target: float = 0.85,
                      min_pairs: int = 20) -> pd.DataFrame:
    """Families of an `accuracy_by(..., 'family')` table where `model` misses `target`, with the
    likely cause: too few test pairs to judge; many pairs with identical static phî (a feature
    the set lacks decides speed: profiled features, or a new static feature, would); else the
    features vary but the ranker orders them wrongly for this family (more training families
    with this kind of structure, or a nonlinear model, would)."""
    miss = by_family[by_family[model] < target].copy()

    def cause(r: pd.Series) -> str:
        if r["n_pairs"] < min_pairs:
            return f"few test pairs (< {min_pairs}): accuracy is noisy"
        if r["indistinguishable"] >= 0.2:
            return "identical static phî for many pairs: needs profiled or new features"
        return "features differ but are mis-weighted for this family: needs similar training families"

    miss["likely_cause"] = [cause(r) for _, r in miss.iterrows()] if len(miss) else []
    return miss[["family", "n_pairs", "indistinguishable", model, "likely_cause"]]


# --------------------------------------------------------------------------- experiment


@dataclass
class Report:
    metrics: pd.DataFrame  # one row per (feature_set, model, split)
    models: dict[str, Any]  # "<kind>_<feature_set>" -> model
    scores: dict[str, np.ndarray]  # the same keys -> scores over all items


def feature_sets(items: pd.DataFrame) -> dict[str, list[str]]:
    sets = {"static": static_columns()}
    if all(c in items for c in profiled_columns()):
        sets["static_prof"] = static_columns() + profiled_columns()
    return sets


def missing_splits(pairs: pd.DataFrame) -> list[str]:
    """Splits (train / val / test, by held-out family) without a single pair: while any is empty
    the measured data cannot train a ranker and say how it does on families it has not seen."""
    have = set(pairs["split"]) if len(pairs) else set()
    return [s for s in ("train", "val", "test") if s not in have]


def run_experiment(items: pd.DataFrame, pairs: pd.DataFrame, *, seed: int = 0,
                   lgbm_rounds: int = 400) -> Report:
    """Train every ranker on every feature set and evaluate them and the baselines.

    Raises ValueError when a split has no pairs (see `missing_splits`)."""
    if gaps := missing_splits(pairs):
        raise ValueError(f"no pairs in split(s) {gaps}: the measurements cover {items.family.nunique()} "
                         f"families; measure more families (benchmarks/verify_dataset.py) first")
    models, scores, rows = {}, {}, []
    for fs, cols in feature_sets(items).items():
        trained = {"linear": train_linear(items, pairs, cols, seed=seed),
                   "lgbm_pairwise": train_lgbm(items, pairs, cols, rounds=lgbm_rounds, seed=seed),
                   "lambdarank": train_lambdarank(items, cols, rounds=lgbm_rounds, seed=seed)}
        for kind, m in trained.items():
            fit_scale(m, items, pairs)
            key = f"{kind}_{fs}"
            models[key] = m
            scores[key] = score_items(m, items)
        base = baseline_scores(items, pairs, cols, seed=seed)
        entries = {**{k: scores[f"{k}_{fs}"] for k in trained}, **base}
        for name, s in entries.items():
            for split in ("val", "test"):
                if name == "random":
                    ms = pd.DataFrame([evaluate_scores(items, pairs, r, split) for r in s]).mean()
                    r = ms.to_dict()
                else:
                    r = evaluate_scores(items, pairs, s, split)
                rows.append({"feature_set": fs, "model": name, "split": split, **r,
                             "learned": name in trained})
    return Report(pd.DataFrame(rows), models, scores)


LEARNED = ("linear", "lgbm_pairwise", "lambdarank")


@dataclass
class CVReport:
    metrics: pd.DataFrame  # one row per (feature_set, model), over every pair, out of fold
    scores: dict[str, np.ndarray]  # "<model>_<feature_set>" -> out-of-fold scores of all items
    folds: list[list[str]]  # the families (group="task": the tasks) held out in each fold
    train_families: list[int]  # how many families each fold trained on


def family_folds(families: Iterable[str], k: int, seed: int = 0) -> list[list[str]]:
    """The families shuffled (seeded) and dealt into k folds of near-equal size."""
    fams = np.array(sorted(set(families)), dtype=object)
    np.random.default_rng(seed).shuffle(fams)
    return [sorted(f.tolist()) for f in np.array_split(fams, min(k, len(fams))) if len(f)]


def cross_validate(items: pd.DataFrame, pairs: pd.DataFrame, *, k: int = 6, seed: int = 0,
                   val_share: float = 1 / 6, lgbm_rounds: int = 400, train_fraction: float = 1.0,
                   baselines: bool = True, group: str = "family") -> CVReport:
    """Family-grouped k-fold cross-validation: every family is held out once.

    ``group="task"`` deals tasks into the folds instead (the in-family setting: held-out
    programs of families the ranker has seen), the contrast that tells whether the features or
    the number of families limit held-out-family accuracy. `CVReport.folds` then lists tasks.

    The fixed train / val / test split holds out a handful of families, so its test accuracy
    rests on a few dozen pairs of a few programs. Here each fold's held-out families are scored
    by rankers trained on the other families (a seeded `val_share` of those for early
    stopping), and every item gets an out-of-fold score; the metrics are then computed once over
    all pairs, as `evaluate_scores` computes them on a test split. Baselines take the same
    route: a single feature's sign is chosen on its fold's training pairs, the hand-weighted sum
    is fixed, random is the mean of seeded draws. `train_fraction` < 1 trains each fold on that
    share of its training families (seeded; for `learning_curve`), `baselines=False` skips them."""
    if group not in ("family", "task"):
        raise ValueError(f"group must be 'family' or 'task', not {group!r}")
    key = items["family" if group == "family" else "task_id"]
    folds = family_folds(key, k, seed)
    if len(folds) < 2:
        raise ValueError(f"cross-validation needs at least 2 {group} groups; the data has {len(folds)}")
    fam = key.to_numpy()  # the grouping label of each item (a family, or a task)
    pos_fam = fam[pairs["pos"].to_numpy()]
    rng = np.random.default_rng(seed)
    oof: dict[str, dict[str, np.ndarray]] = {}  # feature set -> model -> out-of-fold scores
    random_draws = [rng.random(len(items)) for _ in range(20)]
    n_train: list[int] = []
    groups = sorted(set(fam))
    for fs, cols in feature_sets(items).items():
        n_train = []
        for i, held in enumerate(folds):
            held_set = set(held)  # thousands of tasks per fold with group="task"
            rest = [f for f in groups if f not in held_set]
            n_val = max(1, round(len(rest) * val_share))
            perm = list(np.random.default_rng(seed + 1 + i).permutation(rest))
            val, train = perm[:n_val], perm[n_val:]
            train = train[:max(1, round(len(train) * train_fraction))]  # the permutation is random
            n_train.append(len(train))

            def split_of(f: np.ndarray) -> np.ndarray:
                return np.where(np.isin(f, held), "test", np.where(
                    np.isin(f, val), "val", np.where(np.isin(f, train), "train", "unused")))

            it, pr = items.assign(split=split_of(fam)), pairs.assign(split=split_of(pos_fam))
            fold = {"linear": score_items(train_linear(it, pr, cols, seed=seed), it),
                    "lgbm_pairwise": score_items(train_lgbm(it, pr, cols, rounds=lgbm_rounds, seed=seed), it),
                    "lambdarank": score_items(train_lambdarank(it, cols, rounds=lgbm_rounds, seed=seed), it)}
            if baselines:
                fold["hand_weighted"] = hand_scores(it)
                fold["naive_slowest"] = naive_slowest_scores(it)
                for c, sgn in single_feature_signs(it, pr, cols).items():
                    fold[f"single:{c[2:]}"] = single_scores(it, c, sgn)
            mask = np.isin(fam, held)
            for name, sc in fold.items():
                oof.setdefault(fs, {}).setdefault(name, np.full(len(items), np.nan))[mask] = sc[mask]
    everything, all_pairs = items.assign(split="test"), pairs.assign(split="test")
    rows = []
    for fs, models in oof.items():
        for name, sc in models.items():
            rows.append({"feature_set": fs, "model": name,
                         **evaluate_scores(everything, all_pairs, sc, "test"), "learned": name in LEARNED})
        if baselines:
            ms = pd.DataFrame([evaluate_scores(everything, all_pairs, d, "test") for d in random_draws]).mean()
            rows.append({"feature_set": fs, "model": "random", **ms.to_dict(), "learned": False})
    scores = {f"{name}_{fs}": sc for fs, models in oof.items() for name, sc in models.items()}
    return CVReport(pd.DataFrame(rows), scores, folds, n_train)


def learning_curve(items: pd.DataFrame, pairs: pd.DataFrame, fractions: Sequence[float] = (0.25, 0.5, 0.75, 1.0),
                   *, k: int = 6, seeds: Sequence[int] = (0,), lgbm_rounds: int = 400) -> pd.DataFrame:
    """Out-of-fold metrics of the learned rankers when each fold trains on a share of its
    training families: whether more measured families would still help (a curve that is still
    rising at 1.0) or the features are the limit (a flat one). Mean over `seeds`; one row per
    (fraction, feature_set, model) with the mean number of families a fold trained on."""
    rows = []
    for frac in fractions:
        runs = [cross_validate(items, pairs, k=k, seed=s, lgbm_rounds=lgbm_rounds, train_fraction=frac,
                               baselines=False) for s in seeds]
        m = pd.concat([r.metrics for r in runs]).groupby(["feature_set", "model"], sort=False).mean(
            numeric_only=True).reset_index()
        n_train = float(np.mean([n for r in runs for n in r.train_families]))
        rows.append(m.assign(fraction=frac, train_families=round(n_train, 1)))
    return pd.concat(rows, ignore_index=True)


def target_check(metrics: pd.DataFrame, target: float = 0.85) -> pd.DataFrame:
    """Per feature set: best learned vs best single-feature accuracy on test pairs >= 1.25x."""
    col = f"pair_acc_ge{BIG_GAP}"
    rows = []
    for fs, g in metrics[metrics["split"] == "test"].groupby("feature_set"):
        learned = g[g["learned"]]
        single = g[g["model"].str.startswith("single:")]
        if learned[col].isna().all():  # no held-out pairs this far apart (too little data)
            rows.append({"feature_set": fs, "best_learned": None, "acc": float("nan"),
                         "best_single": single[col].max(), "meets_target": False, "beats_every_single": False,
                         "note": f"no test pairs >= {BIG_GAP}x apart"})
            continue
        rows.append({"feature_set": fs, "best_learned": learned.loc[learned[col].idxmax(), "model"],
                     "acc": learned[col].max(), "best_single": single[col].max(),
                     "meets_target": bool(learned[col].max() >= target),
                     "beats_every_single": bool((learned[col] > single[col].max()).all()), "note": ""})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- save / load


def save(model: Any, path: str | Path) -> Path:
    """JSON for a LinearRanker; LightGBM text model + ``<path>.meta.json`` for a GBMRanker."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(model, LinearRanker):
        path.write_text(json.dumps({
            "kind": "linear", "columns": model.columns, "mean": model.mean.tolist(),
            "std": model.std.tolist(), "w": model.w.tolist(), "scale": model.scale,
            "history": model.history}, indent=1, default=_json_default))
    elif isinstance(model, GBMRanker):
        model.booster.save_model(str(path), num_iteration=model.booster.best_iteration or None)
        Path(str(path) + ".meta.json").write_text(json.dumps({
            "kind": model.kind, "columns": model.columns, "scale": model.scale,
            "history": model.history}, indent=1, default=_json_default))
    else:
        raise TypeError(f"cannot save a {type(model).__name__}")
    return path


def _json_default(x: Any) -> Any:
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    raise TypeError(type(x).__name__)


def load(path: str | Path) -> LinearRanker | GBMRanker:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no ranker model at {path}")
    if path.suffix == ".json":
        d = json.loads(path.read_text())
        if d.get("kind") != "linear":
            raise ValueError(f"{path}: not a linear ranker (kind={d.get('kind')!r})")
        return LinearRanker(d["columns"], np.array(d["mean"], float), np.array(d["std"], float),
                            np.array(d["w"], float), d.get("scale", {}), d.get("history", []))
    import lightgbm as lgb

    meta_path = Path(str(path) + ".meta.json")
    if not meta_path.is_file():
        raise FileNotFoundError(f"{path}: LightGBM ranker without its sidecar {meta_path}")
    meta = json.loads(meta_path.read_text())
    return GBMRanker(meta["columns"], lgb.Booster(model_file=str(path)), meta["kind"],
                     meta.get("scale", {}), meta.get("history", []))


def model_files(directory: str | Path) -> list[Path]:
    """The saved rankers of a models directory (what `save` wrote; not the metrics files or
    sidecars), in name order; empty when the directory does not exist."""
    d = Path(directory)
    if not d.is_dir():
        return []
    files = sorted(d.glob("*.json")) + sorted(d.glob("*.txt"))
    return [f for f in files if not f.name.endswith((".meta.json", "metrics.json"))]


def reward_model(directory: str | Path = MODEL_DIR) -> Path | None:
    """The saved ranker R_str should use during RL: among the rankers on *static* features (a
    policy sample is scored from its source, never profiled), the learned one with the highest
    in-family cross-validated accuracy on pairs >= 1.25x apart (``cv_infamily_metrics.json``):
    the policy trains on the training families, so that is the setting its rewards live in.
    Without that file: ``linear_static.json`` when present. None when no ranker is saved."""
    d = Path(directory)
    cv = d / "cv_infamily_metrics.json"
    if cv.is_file():
        m = pd.DataFrame(json.loads(cv.read_text())["metrics"])
        m = m[(m["feature_set"] == "static") & m["learned"]].sort_values(f"pair_acc_ge{BIG_GAP}", ascending=False)
        for model in m["model"]:
            p = d / model_filename(f"{model}_static")
            if p.is_file():
                return p
    p = d / model_filename("linear_static")
    return p if p.is_file() else None


def model_filename(key: str) -> str:
    return f"{key}.json" if key.startswith("linear_") else f"{key}.txt"


# --------------------------------------------------------------------------- CLI


def load_dataset(measurements: str | Path = MEASUREMENTS_DIR,
                 features: str | Path | None = FEATURES_PATH,
                 tasks: str | Path | None = None, profiled: str | Path | None = PROFILED_PATH,
                 margin: float = DEFAULT_MARGIN, k: float = DEFAULT_K) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(items, pairs) from committed files.

    Features: the `cudaperf.featurize` table (raw feature columns per (task_id, variant)), else
    static features computed here from the task file's variant sources. Profiled features: an
    optional table with (task_id, variant) and either ``prof_<name>`` or the bare eleven names.
    Splits, per task: the measurements' ``split`` column, else the task file, else the features
    table's ``split`` column, else `cudaperf.families.assign_splits` on the task's family.
    """
    meas = load_measurements(measurements)
    task_list = None
    if tasks is not None and Path(tasks).exists():
        from cudaperf.tasks import load_tasks

        task_list = load_tasks(tasks)
    if features is not None and table_files(features):
        feats = _read_tables(features, "features")
    elif task_list is not None:
        feats = static_feature_table(task_list)
    else:
        raise FileNotFoundError(f"no features table at {features} and no task file at {tasks}")
    if profiled is not None and table_files(profiled):
        prof = _read_tables(profiled, "profiled features")
        if "status" in prof:  # a failed profile has no features
            prof = prof[prof["status"] == "ok"]
        ren = {n: PROF_PREFIX + n for n in FEATURE_NAMES if n in prof and PROF_PREFIX + n not in prof}
        prof = prof.rename(columns=ren)[["task_id", "variant", *(PROF_PREFIX + n for n in FEATURE_NAMES)]]
        feats = feats.drop(columns=[c for c in prof if c.startswith(PROF_PREFIX) and c in feats])
        feats = feats.merge(prof, on=["task_id", "variant"], how="left")
    from cudaperf.families import assign_splits

    splits: dict[str, str] = dict(assign_splits(meas["family"].dropna().unique()))  # by family
    if "split" in feats:
        splits.update(feats.drop_duplicates("task_id").set_index("task_id")["split"].to_dict())
    if task_list is not None:
        splits.update({t.task_id: t.split for t in task_list})
    items = build_items(meas, feats, splits)
    return items, make_pairs(items, margin, k)


def _metrics_records(df: pd.DataFrame) -> list[dict]:
    return json.loads(df.to_json(orient="records", double_precision=10))


def save_metrics(path: str | Path, metrics: pd.DataFrame, items: pd.DataFrame, pairs: pd.DataFrame,
                 **settings: Any) -> Path:
    """``metrics.json`` / ``cv_metrics.json``: `settings` (margin, k, seed, folds, ...), the data's
    size and one record per metrics row; what `cudaperf ranker train` and notebook 03 write."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**settings, "n_items": len(items), "n_pairs": len(pairs),
                                "metrics": _metrics_records(metrics)}, indent=1))
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """`cudaperf ranker train|evaluate [--json]`."""
    from cudaperf.config import DataConfig

    ap = argparse.ArgumentParser(prog="cudaperf ranker",
                                 description="Train / evaluate the pairwise ranker s_psi.")
    ap.add_argument("action", choices=("train", "evaluate"))
    ap.add_argument("--measurements", default=str(MEASUREMENTS_DIR))
    ap.add_argument("--features", default=str(FEATURES_PATH),
                    help="cudaperf.featurize table (parquet); if absent, static features of --tasks")
    ap.add_argument("--profiled", default=str(PROFILED_PATH),
                    help="profiled features table (parquet), used when it exists")
    ap.add_argument("--tasks", default=DataConfig().tasks_path)
    ap.add_argument("--models", default=str(MODEL_DIR), help="directory of saved rankers")
    ap.add_argument("--margin", type=float, default=DEFAULT_MARGIN)
    ap.add_argument("--k", type=float, default=DEFAULT_K)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cv-folds", type=int, default=6,
                    help="train: also cross-validate over families in this many folds (0: off)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(list(argv) if argv is not None else None)
    cv = cv_in = None
    if not has_measurements(a.measurements):
        print(f"cudaperf ranker: no measurements at {a.measurements} (they are produced on a GPU "
              "by timing every dataset variant); nothing to train or evaluate.", file=sys.stderr)
        return 2
    try:
        items, pairs = load_dataset(a.measurements, a.features, a.tasks, a.profiled,
                                     a.margin, a.k)
    except (FileNotFoundError, ValueError) as e:
        print(f"cudaperf ranker: error: {e}", file=sys.stderr)
        return 2
    mdir = Path(a.models)
    if a.action == "train":
        try:
            rep = run_experiment(items, pairs, seed=a.seed)
        except ValueError as e:
            print(f"cudaperf ranker: error: {e}", file=sys.stderr)
            return 2
        for key, m in rep.models.items():
            save(m, mdir / model_filename(key))
        metrics = rep.metrics
        settings = {"margin": a.margin, "k": a.k, "seed": a.seed}
        save_metrics(mdir / "metrics.json", metrics, items, pairs, **settings)
        if a.cv_folds > 1:
            cv = cross_validate(items, pairs, k=a.cv_folds, seed=a.seed)
            save_metrics(mdir / "cv_metrics.json", cv.metrics, items, pairs, folds=cv.folds, **settings)
            cv_in = cross_validate(items, pairs, k=a.cv_folds, seed=a.seed, group="task")
            save_metrics(mdir / "cv_infamily_metrics.json", cv_in.metrics, items, pairs, group="task",
                         **settings)
    else:
        rows = []
        for f in model_files(mdir):
            m = load(f)
            missing = [c for c in m.columns if c not in items]
            if missing:
                print(f"cudaperf ranker: skipping {f.name}: the data lacks {missing[0]} ... "
                      f"({len(missing)} columns; pass --profiled)", file=sys.stderr)
                continue
            s = score_items(m, items)
            for split in ("val", "test"):
                rows.append({"model": f.stem, "split": split, **evaluate_scores(items, pairs, s, split)})
        if not rows:
            print(f"cudaperf ranker: no saved models in {mdir}; run `cudaperf ranker train`",
                  file=sys.stderr)
            return 2
        metrics = pd.DataFrame(rows)
    if a.json:
        print(json.dumps({"n_items": len(items), "n_pairs": len(pairs), "metrics": _metrics_records(metrics),
                          **({"cv_metrics": _metrics_records(cv.metrics),
                              "cv_infamily_metrics": _metrics_records(cv_in.metrics)} if cv is not None else {})},
                         indent=1))
    else:
        print(f"{len(items)} timed variants, {len(pairs)} pairs "
              f"(margin {a.margin}, k {a.k})")
        print(metrics[metrics["split"] == "test"].to_string(index=False, float_format="%.3f"))
        if cv is not None:
            print(f"\nfamily-grouped {len(cv.folds)}-fold cross-validation (every pair held out once):")
            print(cv.metrics.to_string(index=False, float_format="%.3f"))
            m = cv_in.metrics
            m = m[m["learned"] | m["model"].isin(["random", "hand_weighted", "naive_slowest"])]
            print(f"\nin-family (task-grouped) {a.cv_folds}-fold cross-validation: held-out programs of seen families")
            print(m.to_string(index=False, float_format="%.3f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
