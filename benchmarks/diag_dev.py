"""Evaluate every dev-task variant once and print each record's outcome (diagnostics)."""
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cudaperf.config import get_profile  # noqa: E402
from cudaperf.devtasks import dev_tasks  # noqa: E402
from cudaperf.harness import Harness  # noqa: E402

h = Harness(get_profile("mini", **{"harness.cache_dir": tempfile.mkdtemp()}).harness, use_store=False)
items = [(t, v.source) for t in dev_tasks() for v in t.variants]
names = [f"{t.task_id}:{v.name}" for t in dev_tasks() for v in t.variants]
for n, r in zip(names, h.evaluate_many(items)):
    print(n, r.status, r.message, r.runtime_ms, r.baseline_ms, r.speedup, r.cv, r.flags)
    if r.failures:
        print("   ", json.dumps(r.failures[0], default=str)[:600])
h.close()
