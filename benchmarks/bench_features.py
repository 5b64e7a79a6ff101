"""Time static feature extraction per candidate (budget: <= 50 ms on one core, no compilation).

Prints the median, 90th percentile and maximum wall time of `static_features` over the dev
tasks' variants and the probe kernels (each timed `--reps` times after one warm-up call, so
the one-off tree-sitter load is excluded). Exit status 1 if the median exceeds the budget.

    python benchmarks/bench_features.py [--reps 20]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaperf.devtasks import dev_tasks  # noqa: E402
from cudaperf.features import static_features  # noqa: E402

BUDGET_MS = 50.0


def candidates() -> list[tuple[str, str, dict]]:
    out = []
    for t in dev_tasks():
        for v in t.variants:
            out.append((f"{t.task_id}:{v.name}", v.source, dict(t.perf_test.sizes)))
    probes = Path(__file__).resolve().parents[1] / "cudaperf" / "probes"
    for p in sorted(probes.glob("*.cu")):
        out.append((f"probe:{p.stem}", p.read_text(), {}))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args(argv)
    cands = candidates()
    static_features(cands[0][1])  # load the grammar once
    per = []
    for name, src, sizes in cands:
        ts = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            static_features(src, sizes=sizes)
            ts.append((time.perf_counter() - t0) * 1e3)
        per.append((statistics.median(ts), name, len(src)))
    per.sort()
    meds = [m for m, _, _ in per]
    med = statistics.median(meds)
    p90 = meds[min(len(meds) - 1, int(0.9 * len(meds)))]
    print(f"{len(per)} candidates x {args.reps} reps: median {med:.2f} ms, p90 {p90:.2f} ms, "
          f"max {meds[-1]:.2f} ms ({per[-1][1]}, {per[-1][2]} chars); budget {BUDGET_MS:.0f} ms")
    return 0 if med <= BUDGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
