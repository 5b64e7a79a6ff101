#!/usr/bin/env bash
# First H200 session: ceilings, manifest, the harness's gpu tests. Run from the repo root;
# writes everything under $OUT (the device tool brings it back).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia_smi.csv"
python3 -m cudaperf.ceilings --out "$OUT/ceilings" 2>&1 | tail -8
python3 - <<'PY'
import json, os
from cudaperf import envinfo
m = envinfo.machine_manifest()
envinfo.write_manifest(m, os.path.join(os.environ["OUT"], "manifest_gpu.json"))
print("manifest", m.get("gpus"))
PY
timeout 420 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_harness.py tests/test_gpuworker.py -rA 2>&1 | tail -40 | tee "$OUT/gpu_tests.log"
