"""Throughput of the structural reward R_str (target: >= 1,000 candidates/s from features).

Scores the dev tasks' variants, repeated to `--n` candidates, with `StructuralReward`:
  * from features: `score_features` on pre-computed static features (phî, ranker, scaling);
  * end to end: `__call__` on the completions' source (static feature extraction included,
    which is the expensive part: tree-sitter parse and analysis per candidate).
Rankers: every model saved under data/ranker/ (when trained on measurements), plus a linear and
a LightGBM ranker trained here on SYNTHETIC items (random phî, runtimes a known function of
them) so the benchmark runs before any measurements exist. Exit status 1 if any ranker scores
fewer than 1,000 candidates/s from features.

    python benchmarks/bench_rstr.py [--n 20000] [--n-source 300]
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cudaperf import ranker  # noqa: E402
from cudaperf.config import RewardConfig  # noqa: E402
from cudaperf.devtasks import dev_tasks  # noqa: E402
from cudaperf.features import FEATURE_NAMES, static_features  # noqa: E402
from cudaperf.structural import StructuralReward  # noqa: E402

TARGET = 1000.0


def synthetic_models() -> dict[str, object]:
    rng = np.random.default_rng(0)
    w = rng.normal(0, 1, len(FEATURE_NAMES))
    rows = []
    for f in range(10):
        split = "test" if f < 2 else "val" if f < 4 else "train"
        for t in range(8):
            for v in range(5):
                x = rng.normal(0, 1, len(FEATURE_NAMES))
                rows.append({"task_id": f"{f}/{t}", "variant": f"v{v}", "family": str(f),
                             "split": split, "runtime_ms": float(np.exp(-0.7 * x @ w)), "cv": 0.0,
                             **{f"x_{n}": x[i] for i, n in enumerate(FEATURE_NAMES)}})
    items = pd.DataFrame(rows)
    pairs = ranker.make_pairs(items)
    out = {}
    for name, m in (("synthetic linear", ranker.train_linear(items, pairs, ranker.static_columns())),
                    ("synthetic lgbm", ranker.train_lgbm(items, pairs, ranker.static_columns()))):
        ranker.fit_scale(m, items, pairs)
        out[name] = m
    return out


def saved_models() -> dict[str, object]:
    out = {}
    for f in ranker.model_files(ROOT / ranker.MODEL_DIR):
        m = ranker.load(f)
        if all(c in ranker.static_columns() for c in m.columns):  # R_str is static-only
            out[f"saved {f.name}"] = m
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="candidates scored from features")
    ap.add_argument("--n-source", type=int, default=300, help="candidates scored from source")
    a = ap.parse_args(argv)
    tasks = {t.task_id: t for t in dev_tasks()}
    pool = [(t.task_id, v.source) for t in tasks.values() for v in t.variants]
    feats = {src: static_features(src, sizes=dict(tasks[tid].perf_test.sizes)) for tid, src in pool}
    F = [feats[pool[i % len(pool)][1]] for i in range(a.n)]
    T = [pool[i % len(pool)][0] for i in range(a.n)]
    cfg = replace(RewardConfig(), str_gate="always")
    ok = True
    print(f"{'ranker':32s} {'from features /s':>17s} {'from source /s':>15s}")
    for name, model in {**saved_models(), **synthetic_models()}.items():
        r = StructuralReward(tasks, model, cfg)
        r.score_features(F[:10], T[:10])  # naive-variant cache and tree-sitter load
        t0 = time.perf_counter()
        r.score_features(F, T)
        rate_f = a.n / (time.perf_counter() - t0)
        src = [pool[i % len(pool)][1] for i in range(a.n_source)]
        t0 = time.perf_counter()
        r(["p"] * a.n_source, src, task_id=[pool[i % len(pool)][0] for i in range(a.n_source)])
        rate_s = a.n_source / (time.perf_counter() - t0)
        ok &= rate_f >= TARGET
        print(f"{name:32s} {rate_f:17,.0f} {rate_s:15,.0f}")
    print(f"target: >= {TARGET:,.0f} candidates/s from features: {'OK' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
